"""Dense retrieval: the query's MiniLM embedding against the chat's Chroma collection."""

from __future__ import annotations

from backend.embeddings import Embedder
from backend.models import ScoredChunk
from backend.stores.chroma import ChromaStore


class DenseRetriever:
    name = "dense"

    def __init__(self, embedder: Embedder, store: ChromaStore) -> None:
        self._embedder = embedder
        self._store = store

    def search(self, chat_id: str, query: str, k: int) -> list[ScoredChunk]:
        return self._store.query(chat_id, self._embedder.embed_query(query), k)
