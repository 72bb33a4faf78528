"""Fusing the dense and sparse rankings into one list of child chunks.

Two methods: Reciprocal Rank Fusion (the seed's, rank-based, optional weights) and a min-max convex combination
of scores (measured better on SciFact, see docs/benchmarks.md). Both keep a chunk's first-seen record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from backend.models import Chunk, ScoredChunk

Fuser = Callable[[Sequence[Sequence[ScoredChunk]]], list[ScoredChunk]]


def _weights_for(ranked_lists: Sequence[Sequence[ScoredChunk]], weights: Sequence[float] | None) -> Sequence[float]:
    if weights is None:
        return [1.0] * len(ranked_lists)
    if len(weights) != len(ranked_lists):
        raise ValueError(f"{len(weights)} weights given for {len(ranked_lists)} ranked lists")
    return weights


def _sorted_by_score(scores: dict[str, float], chunks: dict[str, Chunk]) -> list[ScoredChunk]:
    # Python's sort is stable, so equal scores keep the order in which chunks were first seen.
    return [ScoredChunk(chunks[cid], score) for cid, score in sorted(scores.items(), key=lambda kv: -kv[1])]


def reciprocal_rank_fusion(
    ranked_lists: Sequence[Sequence[ScoredChunk]],
    *,
    k: int = 60,
    weights: Sequence[float] | None = None,
    missing_rank: int | None = None,
) -> list[ScoredChunk]:
    """score(c) = Σ_i w_i / (k + rank_i(c)), ranks 1-based.

    A chunk absent from a list contributes nothing, unless ``missing_rank`` is given, in which case it is treated as
    ranked there (the hybrid-retrieval seed uses 1000).
    """
    weights = _weights_for(ranked_lists, weights)
    scores: dict[str, float] = {}
    chunks: dict[str, Chunk] = {}
    for ranked in ranked_lists:
        for hit in ranked:
            chunks.setdefault(hit.chunk.chunk_id, hit.chunk)
            scores.setdefault(hit.chunk.chunk_id, 0.0)
    for ranked, weight in zip(ranked_lists, weights):
        ranks = {hit.chunk.chunk_id: rank for rank, hit in enumerate(ranked, start=1)}
        for cid in scores:
            rank = ranks.get(cid, missing_rank)
            if rank is not None:
                scores[cid] += weight / (k + rank)
    return _sorted_by_score(scores, chunks)


def convex_fusion(
    ranked_lists: Sequence[Sequence[ScoredChunk]], *, weights: Sequence[float] | None = None
) -> list[ScoredChunk]:
    """score(c) = Σ_i w_i · minmax_i(c): each list's scores scaled to [0, 1]; absent from a list → 0 there."""
    weights = _weights_for(ranked_lists, weights)
    scores: dict[str, float] = {}
    chunks: dict[str, Chunk] = {}
    for ranked, weight in zip(ranked_lists, weights):
        if not ranked:
            continue
        values = [hit.score for hit in ranked]
        low, high = min(values), max(values)
        span = high - low
        for hit in ranked:
            cid = hit.chunk.chunk_id
            chunks.setdefault(cid, hit.chunk)
            normalised = (hit.score - low) / span if span > 0 else 1.0
            scores[cid] = scores.get(cid, 0.0) + weight * normalised
    return _sorted_by_score(scores, chunks)


def make_fuser(method: str, *, dense_weight: float, rrf_k: int) -> Fuser:
    """The fusion configured in Settings; lists are passed as (dense, sparse)."""
    weights = (dense_weight, 1.0 - dense_weight)
    if method == "rrf":
        return lambda lists: reciprocal_rank_fusion(lists, k=rrf_k, weights=weights)
    if method == "convex":
        return lambda lists: convex_fusion(lists, weights=weights)
    raise ValueError(f"unknown fusion method {method!r}; expected 'rrf' or 'convex'")
