import pytest

from backend.models import Chunk, ScoredChunk
from backend.retrieval.fusion import convex_fusion, fusion_weights, make_fuser, reciprocal_rank_fusion


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


def family(*ids_and_scores, parent="p") -> list[ScoredChunk]:
    """Hits whose chunks share one parent."""
    return [
        ScoredChunk(Chunk(cid, parent, "doc", "f.txt", 1, f"text of {cid}"), score) for cid, score in ids_and_scores
    ]


def test_a_parent_level_hit_lends_its_score_to_every_candidate_child_of_that_parent():
    dense = family(("a1", 0.9), ("a2", 0.5), parent="A") + family(("b1", 0.1), parent="B")  # a1=1, a2=0.5, b1=0
    child_bm25 = family(("b1", 4.0), parent="B")  # one hit: full weight
    parent_bm25 = family(("a2", 9.0), parent="A") + family(("c1", 3.0), parent="C")  # A=1, C=0
    fused = convex_fusion(
        [dense, child_bm25, parent_bm25], weights=[0.5, 0.2, 0.3], levels=["chunk", "chunk", "parent"]
    )
    assert {h.chunk.chunk_id: h.score for h in fused} == pytest.approx(
        {"a1": 0.5 + 0.3, "a2": 0.25 + 0.3, "b1": 0.2, "c1": 0.0}
    )
    assert [h.chunk.chunk_id for h in fused] == ["a1", "a2", "b1", "c1"]


def test_rrf_ranks_a_parent_level_list_by_parent():
    dense = family(("a1", 0.9), parent="A") + family(("b1", 0.8), parent="B")
    parent_bm25 = family(("b2", 5.0), parent="B") + family(("a2", 1.0), parent="A")
    fused = {
        h.chunk.chunk_id: h.score
        for h in reciprocal_rank_fusion([dense, parent_bm25], k=60, levels=["chunk", "parent"])
    }
    assert fused == pytest.approx({"a1": 1 / 61 + 1 / 62, "b1": 1 / 62 + 1 / 61, "b2": 1 / 61, "a2": 1 / 62})


def test_levels_must_match_the_lists():
    with pytest.raises(ValueError):
        convex_fusion([ranked("a"), ranked("b")], levels=["chunk"])


def test_fusion_weights_split_the_bm25_weight_between_children_and_parents():
    assert fusion_weights(0.6, 0.0) == pytest.approx((0.6, 0.4))  # the seed's two lists
    assert fusion_weights(0.6, 0.25) == pytest.approx((0.6, 0.3, 0.1))
    assert fusion_weights(0.5, 1.0) == pytest.approx((0.5, 0.0, 0.5))


def test_make_fuser_fuses_the_parent_list_at_the_parent_level():
    dense = family(("a1", 0.9), parent="A") + family(("b1", 0.8), parent="B")
    child_bm25 = family(("b1", 2.0), parent="B")
    parent_bm25 = family(("a9", 7.0), parent="A")  # lifts a1 through its parent
    fuse = make_fuser("convex", dense_weight=0.5, rrf_k=60, bm25_parent_share=0.6)
    assert [h.chunk.chunk_id for h in fuse([dense, child_bm25, parent_bm25])] == ["a1", "a9", "b1"]
