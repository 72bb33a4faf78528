"""The rerank stage: re-score expanded passages against the query, then keep the best ``final_k`` that pass
the relevance threshold.

Scores are in [0, 1] so one threshold means the same thing whichever reranker is on. The default needs no model
beyond the bundled embedder; a sentence-transformers CrossEncoder switches on when a model is configured.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

import numpy as np

from backend.embeddings import Embedder
from backend.models import Passage

log = logging.getLogger(__name__)


class Reranker(Protocol):
    name: str

    def rerank(self, query: str, passages: Sequence[Passage]) -> list[Passage]:
        """All passages, best first, each scored with a relevance in [0, 1] (the order may also weigh other
        evidence, so scores need not be sorted)."""
        ...


class FusedOrderReranker:
    """Keeps the fused order; scores become the share of the best fused score so the threshold still applies."""

    name = "none"

    def rerank(self, query: str, passages: Sequence[Passage]) -> list[Passage]:
        if not passages:
            return []
        top = max(p.score for p in passages) or 1.0
        return [replace(p, score=p.score / top) for p in sorted(passages, key=lambda p: -p.score)]


class BiEncoderReranker:
    """Relevance = the best cosine similarity between the query and any of a passage's retrieved children, with
    the bundled MiniLM; order = that relevance blended with the fused score.

    Children were embedded at ingestion and sit in the embedding cache, so re-scoring costs one query embedding
    and cache look-ups, not model calls. BM25-only hits, which had no dense score, get a relevance here. On
    SciFact (train split) ordering by the cosine alone loses to the fused order (0.684 vs 0.706 nDCG@10), so the
    order keeps 0.7 of the fused score (0.719 vs 0.720 for the fused order alone, with convex fusion); the
    relevance threshold applies to the cosine, which is calibrated the
    same way for every query.
    """

    name = "bi-encoder"

    def __init__(self, embedder: Embedder, fused_weight: float = 0.7) -> None:
        self._embedder = embedder
        self._fused_weight = fused_weight

    def rerank(self, query: str, passages: Sequence[Passage]) -> list[Passage]:
        if not passages:
            return []
        query_vector = self._embedder.embed_query(query)
        children = [p.matched_chunks or (p.best_chunk,) for p in passages]
        vectors = self._embedder.embed_documents([c.text for group in children for c in group])
        similarities = np.clip(vectors @ query_vector, 0.0, 1.0)
        top_fused = max(p.score for p in passages) or 1.0
        ranked, start = [], 0
        for passage, group in zip(passages, children):
            scores = similarities[start : start + len(group)]
            best = int(np.argmax(scores))
            relevance = float(scores[best])
            order = (1 - self._fused_weight) * relevance + self._fused_weight * passage.score / top_fused
            ranked.append((order, replace(passage, score=relevance, best_chunk=group[best])))
            start += len(group)
        return [passage for _, passage in sorted(ranked, key=lambda pair: -pair[0])]


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder (e.g. ms-marco-MiniLM-L-6-v2 from a local path), sigmoid-normalised."""

    name = "cross-encoder"

    def __init__(self, model_name_or_path: str, batch_size: int = 32) -> None:
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:  # the optional extra is not installed
            raise RuntimeError(
                "The cross-encoder reranker needs sentence-transformers: pip install 'axiom[sentence-transformers]'"
            ) from exc
        self._model = CrossEncoder(model_name_or_path, device="cpu")
        self._batch_size = batch_size

    def rerank(self, query: str, passages: Sequence[Passage]) -> list[Passage]:
        if not passages:
            return []
        logits = self._model.predict(
            [(query, p.parent.text) for p in passages], batch_size=self._batch_size, activation_fn=None
        )
        rescored = [replace(p, score=1.0 / (1.0 + math.exp(-float(x)))) for p, x in zip(passages, logits)]
        return sorted(rescored, key=lambda p: -p.score)


def select_relevant(ranked: Sequence[Passage], *, final_k: int, threshold: float) -> list[Passage]:
    """The first ``final_k`` passages (in reranked order) scoring at least ``threshold``; empty means the documents
    do not answer."""
    return [p for p in ranked if p.score >= threshold][:final_k]


def build_reranker(kind: str, embedder: Embedder, cross_encoder_model: str | None) -> Reranker:
    if kind == "cross-encoder" or (kind != "none" and cross_encoder_model):
        if not cross_encoder_model:
            raise ValueError("reranker 'cross-encoder' needs AXIOM_CROSS_ENCODER_MODEL (a local path or name)")
        return CrossEncoderReranker(cross_encoder_model)
    if kind == "bi-encoder":
        return BiEncoderReranker(embedder)
    if kind == "none":
        return FusedOrderReranker()
    raise ValueError(f"unknown reranker {kind!r}; expected 'bi-encoder', 'cross-encoder' or 'none'")
