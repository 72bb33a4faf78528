"""Parent expansion: children are retrieved for precision, their parents are what the LLM reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from backend.models import Parent, Passage, ScoredChunk


def expand_to_parents(ranked: Sequence[ScoredChunk], parents: Mapping[str, Parent]) -> list[Passage]:
    """One passage per parent, in the order of its best child, keeping that child's score.

    A child whose parent is not in ``parents`` is dropped: its document is being indexed or was just deleted,
    and must not be shown half-present.
    """
    passages: dict[str, Passage] = {}
    for hit in ranked:
        parent = parents.get(hit.chunk.parent_id)
        if parent is None:
            continue
        best = passages.get(parent.parent_id)
        if best is None or hit.score > best.score:
            passages[parent.parent_id] = Passage(parent=parent, best_chunk=hit.chunk, score=hit.score)
    return sorted(passages.values(), key=lambda p: -p.score)
