"""Hybrid retrieval on real stores and the bundled embedder: right passages, isolation, graceful degradation."""

import pytest

from backend.errors import RetrievalFailed
from backend.retrieval.hybrid import HybridRetriever
from backend.retrieval.sparse import ParentSparseRetriever

PAPER = "academic_2col_squad_rajpurkar2016.pdf"
OTHER = "academic_2col_naacl06-shinyama.pdf"


@pytest.fixture
def library(services, pdfs):
    squad = services.ingestion.ingest("squad", PAPER, (pdfs / PAPER).read_bytes())
    other = services.ingestion.ingest("other", OTHER, (pdfs / OTHER).read_bytes())
    return services, squad, other


def test_a_question_retrieves_parent_passages_of_the_right_document(library):
    services, squad, _ = library
    result = services.retriever.retrieve("squad", "How many question-answer pairs does SQuAD contain?")
    assert result.relevant and result.failed_retrievers == []
    assert len(result.relevant) <= services.settings.retrieval_final_k
    top = result.relevant[0]
    assert top.parent.document_id == squad.document_id and top.parent.filename == PAPER
    assert "107,785" in " ".join(p.parent.text for p in result.relevant[:3])  # the paper's exact count
    assert len({p.parent.parent_id for p in result.candidates}) == len(result.candidates)  # deduped by parent
    assert all(0.0 <= p.score <= 1.0 for p in result.candidates)
    assert all(p.score >= services.settings.relevance_threshold for p in result.relevant)


def test_a_chat_never_retrieves_another_chats_chunks(library):
    services, squad, _other = library
    query = "paraphrase acquisition from comparable news articles"  # the other paper's topic
    for hits in (services.dense.search("squad", query, 50), services.sparse.search("squad", query, 50),
                 services.keywords.search_parents("squad", query, 50), services.retriever.fused("squad", query)[0]):
        assert {hit.chunk.document_id for hit in hits} <= {squad.document_id}
    assert {p.parent.document_id for p in services.retriever.retrieve("squad", query).candidates} <= {
        squad.document_id
    }


def test_a_deleted_document_is_gone_from_every_level_of_retrieval(library):
    services, squad, _ = library
    query = "How many question-answer pairs does SQuAD contain?"
    assert services.keywords.search_parents("squad", query, 10)
    services.ingestion.delete("squad", squad.document_id)
    assert services.keywords.search_parents("squad", query, 10) == []
    assert services.retriever.retrieve("squad", query).candidates == []


def test_the_seeds_two_list_fusion_stays_selectable(tmp_path, make_services, pdfs):
    seed = make_services(tmp_path / "seed", bm25_parent_share=0.0)
    squad = seed.ingestion.ingest("squad", PAPER, (pdfs / PAPER).read_bytes())
    assert len(seed.retriever._retrievers) == 2
    top = seed.retriever.retrieve("squad", "How many question-answer pairs does SQuAD contain?").relevant[0]
    assert top.parent.document_id == squad.document_id


def test_a_question_the_documents_cannot_answer_finds_nothing_relevant(library):
    services, _, _ = library
    assert services.retriever.retrieve("squad", "What is a good recipe for chocolate cake?").relevant == []


class BrokenRetriever:
    """Stands in for a retriever whose engine is down (e.g. the Chroma server stopped)."""

    def __init__(self, name):
        self.name = name

    def search(self, chat_id, query, k):
        raise ConnectionError(f"{self.name} is down")


def rebuilt(services, *, dense=None, sparse=None) -> HybridRetriever:
    """The configured retriever with some engines swapped; a broken BM25 breaks both of its levels."""
    r = services.retriever
    return HybridRetriever(dense or services.dense, sparse or services.sparse, r._fuse, services.documents,
                           r.reranker, r.depths, parent_sparse=sparse or ParentSparseRetriever(services.keywords))


def test_one_retriever_down_returns_the_others_results(library):
    services, squad, _ = library
    for broken, survivor in (("dense", "bm25"), ("bm25", "dense")):
        retriever = rebuilt(services, **{"dense" if broken == "dense" else "sparse": BrokenRetriever(broken)})
        result = retriever.retrieve("squad", "How were the crowdworkers paid for writing questions?")
        assert result.failed_retrievers == [broken]
        assert result.candidates and result.candidates[0].parent.document_id == squad.document_id


def test_both_retrievers_down_is_a_clear_retrieval_failure(library):
    services, _, _ = library
    retriever = rebuilt(services, dense=BrokenRetriever("dense"), sparse=BrokenRetriever("bm25"))
    with pytest.raises(RetrievalFailed) as raised:
        retriever.retrieve("squad", "anything")
    assert raised.value.status == 503
