from __future__ import annotations

from dataclasses import replace

from backend.rag.answerability import closest_passages, judge, similarity_to
from backend.rag.answerability_judge import decide
from backend.rag.answerability_model import ANSWERABILITY_PARAMS, answerability_messages
from backend.rag.deps import RAGDeps
from backend.rag.nodes.events import ensure_not_cancelled, model_waiter, status
from backend.rag.state import RAGState


def judge_answerability(state: RAGState, deps: RAGDeps) -> RAGState:
    """Keeps the graded passages near this query's best (the per-query threshold) and decides whether they answer
    the question or are only about its topic: from their sentences, or by the model as ``deps.answerability_judge``
    says (answerability_judge.py). Reads the asker's own words: a rewrite is for searching, and may be the small
    model's."""
    question = state["question"]
    passages = closest_passages(state["relevant_documents"], deps.answerability.relevance_margin)

    def ask_model() -> str:
        status("judging", "Checking whether your documents answer this…")
        messages = answerability_messages(
            question, passages, deps.llm.count_tokens, deps.limits.context_budget_tokens
        )
        # In this chat's line, with the answer's patience (a model too busy to judge is too busy to write), telling
        # the asker their place; the turn is not the writing of the answer.
        waiter = replace(model_waiter(state["chat_id"], deps.limits.queue_patience_seconds), on_turn=None)
        reply = deps.llm.complete(messages, ANSWERABILITY_PARAMS, waiter=waiter)
        ensure_not_cancelled()  # a provider told to stop ends its reply quietly: what came is no verdict
        return reply

    verdict = judge(question, passages, deps.answerability, similarity_to(question, deps.embedder))
    decision = decide(deps.answerability_judge, verdict, ask_model)
    how = f"{verdict.answer_type}, coverage {verdict.coverage:.2f}"
    if verdict.similarity is not None:
        how += f", similarity {verdict.similarity:.2f}"
    step = (f"answerable:{'yes' if decision.answerable else 'no'} ({how}, {len(passages)} passages; "
            f"judged by {decision.describe()})")
    update: RAGState = {
        "relevant_documents": passages,
        "answerable": decision.answerable,
        "answer_sentence": verdict.sentence if decision.answerable and verdict.answerable else None,
        "processing_steps": [step],
    }
    if decision.model_busy:
        update["model_busy"] = True  # the written answer would wait as long again: the evidence answers
    return update
