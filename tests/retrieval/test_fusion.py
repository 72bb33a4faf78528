import pytest

from backend.models import Chunk, ScoredChunk
from backend.retrieval.fusion import convex_fusion, make_fuser, reciprocal_rank_fusion


def hits(*ids_and_scores) -> list[ScoredChunk]:
    return [
        ScoredChunk(Chunk(cid, f"{cid}-parent", "doc", "f.txt", 1, f"text of {cid}"), score)
        for cid, score in ids_and_scores
    ]


def ranked(*ids) -> list[ScoredChunk]:
    return hits(*[(cid, 1.0 / (i + 1)) for i, cid in enumerate(ids)])


def test_rrf_matches_the_axiom_seed_example():
    # A chunk at rank 3 in the vector list and rank 5 in BM25: 1/63 + 1/65 = 0.0313.
    dense = ranked("a", "b", "x", "c", "d")
    sparse = ranked("e", "f", "g", "h", "x")
    fused = {hit.chunk.chunk_id: hit.score for hit in reciprocal_rank_fusion([dense, sparse], k=60)}
    assert fused["x"] == pytest.approx(1 / 63 + 1 / 65)
    assert round(fused["x"], 4) == 0.0313
    assert fused["a"] == pytest.approx(1 / 61)  # absent from BM25: contributes nothing there


def test_weighted_rrf_matches_the_hybrid_walkthrough_worked_example():
    dense = ranked("c3", "c1", "c5", "c2")
    sparse = ranked("c1", "c3", "c4", "c5")
    fused = reciprocal_rank_fusion([dense, sparse], k=60, weights=[0.7, 0.3], missing_rank=1000)
    assert [h.chunk.chunk_id for h in fused] == ["c3", "c1", "c5", "c2", "c4"]
    expected = {"c3": 0.01632, "c1": 0.01621, "c5": 0.01580, "c2": 0.01122, "c4": 0.00542}
    for hit in fused:
        assert hit.score == pytest.approx(expected[hit.chunk.chunk_id], abs=1e-5)  # seed rounds each term


def test_rrf_of_one_list_keeps_its_order_and_empty_lists_are_harmless():
    only = ranked("a", "b", "c")
    assert [h.chunk.chunk_id for h in reciprocal_rank_fusion([only, []])] == ["a", "b", "c"]
    assert reciprocal_rank_fusion([[], []]) == []


def test_rrf_rejects_a_weight_count_that_does_not_match():
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([ranked("a"), ranked("b")], weights=[1.0])


def test_convex_fusion_min_max_normalises_each_list():
    dense = hits(("a", 0.9), ("b", 0.5), ("c", 0.1))  # a=1, b=0.5, c=0
    sparse = hits(("c", 30.0), ("b", 20.0), ("d", 10.0))  # c=1, b=0.5, d=0
    fused = {h.chunk.chunk_id: h.score for h in convex_fusion([dense, sparse], weights=[0.6, 0.4])}
    assert fused == pytest.approx({"a": 0.6, "b": 0.5, "c": 0.4, "d": 0.0})


def test_convex_fusion_of_a_single_hit_list_gives_it_full_weight():
    fused = convex_fusion([hits(("a", 0.3)), []], weights=[0.5, 0.5])
    assert [(h.chunk.chunk_id, h.score) for h in fused] == [("a", 0.5)]


def test_make_fuser_builds_the_configured_method():
    dense, sparse = ranked("a", "b"), ranked("b", "c")
    assert make_fuser("rrf", dense_weight=0.5, rrf_k=60)([dense, sparse])[0].chunk.chunk_id == "b"
    assert make_fuser("convex", dense_weight=1.0, rrf_k=60)([dense, sparse])[0].chunk.chunk_id == "a"
    with pytest.raises(ValueError):
        make_fuser("borda", dense_weight=0.5, rrf_k=60)
