"""Sparse retrieval: BM25 over the chat's child chunks, or over their parents."""

from __future__ import annotations

from backend.models import ScoredChunk
from backend.stores.bm25 import BM25Store


class SparseRetriever:
    # Both levels read one keyword index, so a failure is reported under one name whichever level hit it.
    name = "bm25"

    def __init__(self, store: BM25Store) -> None:
        self._store = store

    def search(self, chat_id: str, query: str, k: int) -> list[ScoredChunk]:
        return self._store.search(chat_id, query, k)


class ParentSparseRetriever:
    """BM25 over whole parents; each hit is the parent's best child carrying the parent's score."""

    name = "bm25"

    def __init__(self, store: BM25Store) -> None:
        self._store = store

    def search(self, chat_id: str, query: str, k: int) -> list[ScoredChunk]:
        return self._store.search_parents(chat_id, query, k)
