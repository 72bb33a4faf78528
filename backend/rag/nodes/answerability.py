from __future__ import annotations

from backend.rag.answerability import closest_passages, judge, similarity_to
from backend.rag.deps import RAGDeps
from backend.rag.state import RAGState


def judge_answerability(state: RAGState, deps: RAGDeps) -> RAGState:
    """Keeps the graded passages near this query's best (the per-query threshold) and decides, from their
    sentences, whether they answer the question or are only about its topic. Reads the asker's own words: a
    rewrite is for searching, and may be the small model's."""
    question = state["question"]
    passages = closest_passages(state["relevant_documents"], deps.answerability.relevance_margin)
    verdict = judge(question, passages, deps.answerability, similarity_to(question, deps.embedder))
    how = f"{verdict.answer_type}, coverage {verdict.coverage:.2f}"
    if verdict.similarity is not None:
        how += f", similarity {verdict.similarity:.2f}"
    return {
        "relevant_documents": passages,
        "answerable": verdict.answerable,
        "answer_sentence": verdict.sentence if verdict.answerable else None,
        "processing_steps": [f"answerable:{'yes' if verdict.answerable else 'no'} ({how}, {len(passages)} passages)"],
    }
