"""Hybrid retrieval: dense + BM25 (children, and parents when configured) → fusion → parent expansion → rerank →
relevant passages.

If one retriever fails, the others' results are used (and the failure logged); only when all fail does the
caller see RetrievalFailed. An invalid chat id is the caller's mistake and is never swallowed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from backend.errors import RetrievalFailed, ValidationFailed
from backend.models import Passage, ScoredChunk
from backend.retrieval.expand import expand_to_parents
from backend.retrieval.fusion import Fuser
from backend.retrieval.rerank import FusedOrderReranker, Reranker, select_relevant
from backend.stores.documents import DocumentStore

log = logging.getLogger(__name__)


class Retriever(Protocol):
    name: str

    def search(self, chat_id: str, query: str, k: int) -> list[ScoredChunk]: ...


@dataclass(frozen=True)
class RetrievalDepths:
    vector_k: int = 20
    bm25_k: int = 20
    bm25_parent_k: int = 20
    initial_k: int = 50
    final_k: int = 5
    relevance_threshold: float = 0.3


@dataclass
class RetrievalResult:
    candidates: list[Passage]  # expanded and reranked, best first
    relevant: list[Passage]  # the top final_k that pass the relevance threshold
    failed_retrievers: list[str] = field(default_factory=list)


class HybridRetriever:
    def __init__(
        self,
        dense: Retriever,
        sparse: Retriever,
        fuse: Fuser,
        documents: DocumentStore,
        reranker: Reranker,
        depths: RetrievalDepths,
        *,
        parent_sparse: Retriever | None = None,
    ) -> None:
        """``fuse`` takes the lists in the order (dense, sparse[, parent_sparse])."""
        self._retrievers = (dense, sparse) if parent_sparse is None else (dense, sparse, parent_sparse)
        self._fuse = fuse
        self._documents = documents
        self.reranker = reranker
        self.depths = depths

    def fused(self, chat_id: str, query: str, *, depth: int | None = None) -> tuple[list[ScoredChunk], list[str]]:
        """Fused child chunks (top ``initial_k``, or ``depth`` per list and in total) and the retrievers that failed."""
        d = self.depths
        ks = (d.vector_k, d.bm25_k, d.bm25_parent_k) if depth is None else (depth,) * len(self._retrievers)
        ranked_lists: list[Sequence[ScoredChunk]] = []
        failed: list[str] = []
        for retriever, k in zip(self._retrievers, ks):
            try:
                ranked_lists.append(retriever.search(chat_id, query, k))
            except ValidationFailed:
                raise
            except Exception:
                log.exception("%s retrieval failed for chat %s; continuing with the other retriever", retriever.name, chat_id)
                ranked_lists.append([])
                failed.append(retriever.name)
        if len(failed) == len(self._retrievers):
            raise RetrievalFailed(
                "Searching your documents failed. Please try again in a moment.", failed=_engines(failed)
            )
        return self._fuse(ranked_lists)[: depth or self.depths.initial_k], _engines(failed)

    def expand(self, ranked: Sequence[ScoredChunk]) -> list[Passage]:
        return expand_to_parents(ranked, self._documents.parents(hit.chunk.parent_id for hit in ranked))

    def rerank(self, query: str, passages: Sequence[Passage]) -> list[Passage]:
        try:
            return self.reranker.rerank(query, passages)
        except Exception:
            log.exception("reranker %s failed; keeping the fused order", self.reranker.name)
            return FusedOrderReranker().rerank(query, passages)

    def _relevant(self, reranked: Sequence[Passage]) -> list[Passage]:
        return select_relevant(reranked, final_k=self.depths.final_k, threshold=self.depths.relevance_threshold)

    def grade(self, query: str, passages: Sequence[Passage]) -> list[Passage]:
        """The reranked passages that answer: the top ``final_k`` at or above the relevance threshold."""
        return self._relevant(self.rerank(query, passages))

    def retrieve(self, chat_id: str, query: str) -> RetrievalResult:
        ranked, failed = self.fused(chat_id, query)
        candidates = self.rerank(query, self.expand(ranked))
        return RetrievalResult(candidates=candidates, relevant=self._relevant(candidates), failed_retrievers=failed)


def _engines(failed: Sequence[str]) -> list[str]:
    # Child- and parent-level BM25 read one index: its failure is one failed engine, not two.
    return list(dict.fromkeys(failed))
