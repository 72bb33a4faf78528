"""Sparse retrieval: BM25 over the chat's child chunks."""

from __future__ import annotations

from backend.models import ScoredChunk
from backend.stores.bm25 import BM25Store


class SparseRetriever:
    name = "bm25"

    def __init__(self, store: BM25Store) -> None:
        self._store = store

    def search(self, chat_id: str, query: str, k: int) -> list[ScoredChunk]:
        return self._store.search(chat_id, query, k)
