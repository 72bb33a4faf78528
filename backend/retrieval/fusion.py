"""Fusing the dense and sparse rankings into one list of child chunks.

Two methods: Reciprocal Rank Fusion (the seed's, rank-based, optional weights) and a min-max convex combination
of scores (measured better on SciFact, see docs/benchmarks.md). Both keep a chunk's first-seen record.

A list ranks either child chunks or parents (``levels``). A parent-level hit lends its score to every candidate
child of that parent, so a parent found by BM25 over its whole text lifts the children that dense or child-level
BM25 found in it; ranking passages by their best child then equals fusing at the parent level.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from backend.models import Chunk, ScoredChunk

Fuser = Callable[[Sequence[Sequence[ScoredChunk]]], list[ScoredChunk]]
Level = Literal["chunk", "parent"]


def _weights_for(ranked_lists: Sequence[Sequence[ScoredChunk]], weights: Sequence[float] | None) -> Sequence[float]:
    if weights is None:
        return [1.0] * len(ranked_lists)
    if len(weights) != len(ranked_lists):
        raise ValueError(f"{len(weights)} weights given for {len(ranked_lists)} ranked lists")
    return weights


def _levels_for(ranked_lists: Sequence[Sequence[ScoredChunk]], levels: Sequence[Level] | None) -> Sequence[Level]:
    if levels is None:
        return ["chunk"] * len(ranked_lists)
    if len(levels) != len(ranked_lists):
        raise ValueError(f"{len(levels)} levels given for {len(ranked_lists)} ranked lists")
    return levels


def _key(chunk: Chunk, level: Level) -> str:
    return chunk.chunk_id if level == "chunk" else chunk.parent_id


def _candidates(ranked_lists: Sequence[Sequence[ScoredChunk]]) -> dict[str, Chunk]:
    """Every chunk in any list, by id, in first-seen order (the order equal scores keep)."""
    chunks: dict[str, Chunk] = {}
    for ranked in ranked_lists:
        for hit in ranked:
            chunks.setdefault(hit.chunk.chunk_id, hit.chunk)
    return chunks


def _fused(
    chunks: dict[str, Chunk], contributions: Sequence[tuple[dict[str, float], Level]], absent: Sequence[float]
) -> list[ScoredChunk]:
    """score(c) = Σ_i contribution_i[key_i(c)], or ``absent[i]`` where list i does not hold c (or its parent)."""
    scores = {
        cid: sum(values.get(_key(chunk, level), missing) for (values, level), missing in zip(contributions, absent))
        for cid, chunk in chunks.items()
    }
    # Python's sort is stable, so equal scores keep the order in which chunks were first seen.
    return [ScoredChunk(chunks[cid], score) for cid, score in sorted(scores.items(), key=lambda kv: -kv[1])]


def reciprocal_rank_fusion(
    ranked_lists: Sequence[Sequence[ScoredChunk]],
    *,
    k: int = 60,
    weights: Sequence[float] | None = None,
    missing_rank: int | None = None,
    levels: Sequence[Level] | None = None,
) -> list[ScoredChunk]:
    """score(c) = Σ_i w_i / (k + rank_i(c)), ranks 1-based.

    A chunk absent from a list contributes nothing, unless ``missing_rank`` is given, in which case it is treated as
    ranked there (the hybrid-retrieval seed uses 1000).
    """
    weights = _weights_for(ranked_lists, weights)
    levels = _levels_for(ranked_lists, levels)
    contributions = []
    for ranked, weight, level in zip(ranked_lists, weights, levels):
        values: dict[str, float] = {}
        for rank, hit in enumerate(ranked, start=1):
            values.setdefault(_key(hit.chunk, level), weight / (k + rank))
        contributions.append((values, level))
    absent = [0.0 if missing_rank is None else weight / (k + missing_rank) for weight in weights]
    return _fused(_candidates(ranked_lists), contributions, absent)


def convex_fusion(
    ranked_lists: Sequence[Sequence[ScoredChunk]],
    *,
    weights: Sequence[float] | None = None,
    levels: Sequence[Level] | None = None,
) -> list[ScoredChunk]:
    """score(c) = Σ_i w_i · minmax_i(c): each list's scores scaled to [0, 1]; absent from a list → 0 there."""
    weights = _weights_for(ranked_lists, weights)
    levels = _levels_for(ranked_lists, levels)
    contributions = []
    for ranked, weight, level in zip(ranked_lists, weights, levels):
        values: dict[str, float] = {}
        if ranked:
            low, high = min(hit.score for hit in ranked), max(hit.score for hit in ranked)
            span = high - low
            for hit in ranked:
                normalised = (hit.score - low) / span if span > 0 else 1.0
                values.setdefault(_key(hit.chunk, level), weight * normalised)
        contributions.append((values, level))
    return _fused(_candidates(ranked_lists), contributions, [0.0] * len(contributions))


def fusion_weights(dense_weight: float, bm25_parent_share: float) -> tuple[float, ...]:
    """Weights of (dense, BM25 over children[, BM25 over parents]): the BM25 weight ``1 - dense_weight`` is split
    between children and parents; a share of 0 leaves the parent list out (the seed's two lists)."""
    sparse = 1.0 - dense_weight
    if bm25_parent_share == 0:
        return (dense_weight, sparse)
    return (dense_weight, sparse * (1.0 - bm25_parent_share), sparse * bm25_parent_share)


def make_fuser(method: str, *, dense_weight: float, rrf_k: int, bm25_parent_share: float = 0.0) -> Fuser:
    """The fusion configured in Settings; lists are passed as (dense, BM25 children[, BM25 parents])."""
    weights = fusion_weights(dense_weight, bm25_parent_share)
    levels: tuple[Level, ...] = ("chunk", "chunk", "parent")[: len(weights)]
    if method == "rrf":
        return lambda lists: reciprocal_rank_fusion(lists, k=rrf_k, weights=weights, levels=levels)
    if method == "convex":
        return lambda lists: convex_fusion(lists, weights=weights, levels=levels)
    raise ValueError(f"unknown fusion method {method!r}; expected 'rrf' or 'convex'")
