from backend.models import Chunk, Parent, ScoredChunk
from backend.retrieval.expand import expand_to_parents


def parent(pid: str) -> Parent:
    return Parent(pid, "doc", "f.pdf", 3, f"the full text of {pid}")


def hit(cid: str, pid: str, score: float) -> ScoredChunk:
    return ScoredChunk(Chunk(cid, pid, "doc", "f.pdf", 3, f"child {cid}"), score)


def test_children_of_one_parent_collapse_into_one_passage_with_the_best_score():
    parents = {pid: parent(pid) for pid in ("P1", "P2", "P3")}
    ranked = [hit("c2", "P1", 0.9), hit("c7", "P3", 0.8), hit("c4", "P2", 0.7), hit("c1", "P1", 0.6), hit("c8", "P3", 0.5)]
    passages = expand_to_parents(ranked, parents)
    assert [p.parent.parent_id for p in passages] == ["P1", "P3", "P2"]
    assert [p.best_chunk.chunk_id for p in passages] == ["c2", "c7", "c4"]
    assert [p.score for p in passages] == [0.9, 0.8, 0.7]
    assert passages[0].parent.text == "the full text of P1"  # the parent's text replaces the child's
    assert [c.chunk_id for c in passages[0].matched_chunks] == ["c2", "c1"]


def test_best_child_wins_even_when_it_comes_later():
    passages = expand_to_parents([hit("c1", "P1", 0.2), hit("c2", "P1", 0.7)], {"P1": parent("P1")})
    assert len(passages) == 1 and passages[0].best_chunk.chunk_id == "c2" and passages[0].score == 0.7


def test_children_whose_parent_is_unknown_are_dropped():
    passages = expand_to_parents([hit("c1", "gone", 0.9), hit("c2", "P1", 0.1)], {"P1": parent("P1")})
    assert [p.parent.parent_id for p in passages] == ["P1"]
