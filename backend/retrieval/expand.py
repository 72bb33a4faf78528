"""Parent expansion: children are retrieved for precision, their parents are what the LLM reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from backend.models import Parent, Passage, ScoredChunk


def expand_to_parents(ranked: Sequence[ScoredChunk], parents: Mapping[str, Parent]) -> list[Passage]:
    """One passage per parent, in the order of its best child, keeping that child's score and every matched child.

    A child whose parent is not in ``parents`` is dropped: its document is being indexed or was just deleted,
    and must not be shown half-present.
    """
    children: dict[str, list[ScoredChunk]] = {}
    for hit in ranked:
        if hit.chunk.parent_id in parents:
            children.setdefault(hit.chunk.parent_id, []).append(hit)
    passages = []
    for parent_id, hits in children.items():
        hits.sort(key=lambda h: -h.score)
        passages.append(Passage(parents[parent_id], hits[0].chunk, hits[0].score, tuple(h.chunk for h in hits)))
    return sorted(passages, key=lambda p: -p.score)
