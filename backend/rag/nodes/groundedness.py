"""The groundedness check, and the evidence answer used when regenerations keep failing it or the model is too
busy to write one."""

from __future__ import annotations

from backend.rag.citations import cited_numbers, cited_sources
from backend.rag.deps import RAGDeps
from backend.rag.evidence import quote_evidence
from backend.rag.grounding import says_enough_to_check
from backend.rag.nodes.events import emit, model_waiter, status, token
from backend.rag.prompts import BUSY_EVIDENCE_PREFIX, EXTRACTIVE_PREFIX
from backend.rag.state import RAGState


def check_groundedness(state: RAGState, deps: RAGDeps) -> RAGState:
    if state.get("answer_kind") == "not_found":
        return {"is_grounded": True, "groundedness_score": 1.0, "skip_llm_hallucination_check": True,
                "processing_steps": ["check:declined, nothing to check"]}
    status("checking", "Checking the answer against your documents…")
    # Read here so the router stays pure: a regeneration (a full prompt read, rarely grounded with a small model,
    # docs/benchmarks.md) must not keep the model from people still waiting for a first answer.
    others_waiting = deps.llm.others_waiting()
    unfit = _unfit_to_check(state["answer"])
    if unfit is not None:
        feedback, step = unfit
        return {"is_grounded": False, "groundedness_score": 0.0, "skip_llm_hallucination_check": True,
                "hallucination_details": feedback, "others_waiting": others_waiting,
                "processing_steps": [f"check:not grounded ({step})"]}
    passages = state["relevant_documents"]
    cited = [passages[n - 1] for n in cited_numbers(state["answer"]) if 1 <= n <= len(passages)] or passages
    # A capable model may verify the answer: in this chat's line, and stopped with the run.
    with deps.llm.calls_wait_as(model_waiter(state["chat_id"], patience=None, announce=False)):
        verdict = deps.checker.check(
            state["answer"], [p.parent.text for p in cited],
            question=state["question"], rewritten_question=state.get("rewritten_query"),
        )
    return {
        "is_grounded": verdict.is_grounded,
        "others_waiting": others_waiting,
        "groundedness_score": verdict.score,
        "fast_groundedness_score": verdict.fast_score,
        "skip_llm_hallucination_check": verdict.method == "fast",
        "hallucination_details": "\n".join(verdict.issues),
        "processing_steps": [f"check:{'grounded' if verdict.is_grounded else 'not grounded'} ({verdict.method})"],
    }


def _unfit_to_check(answer: str) -> tuple[str, str] | None:
    """Feedback and a step name when the answer cannot count as grounded whatever its overlap with the sources.

    Here, not inside the checker, which also judges short span answers (202 of HaluEval's 1,000 are one or two
    words, 184 of them correct): a chat answer should be a sentence, and it must point at a file and page. Uncited
    sentences that one source supports were given that citation after generation, so an answer still citing nothing
    holds no sentence any single source backs (a small model echoing the prompt: "The sources do not support the
    answer.").
    """
    if not says_enough_to_check(answer):
        return "The answer is too short to check: state the fact in a full sentence.", "too little to check"
    if not cited_numbers(answer):
        return "The answer cites no source: end each sentence with the [Source N] it comes from.", "cites nothing"
    return None


def answer_extractively(state: RAGState, deps: RAGDeps) -> RAGState:
    """The evidence as the answer: the sentences of the sources closest to the question, quoted with their
    citations, never a rejected text. Flagged, with the reason, so the caller can say it is not a written answer."""
    passages = state.get("evidence_documents") or state["relevant_documents"]
    quotes = state.get("evidence") or quote_evidence(state["question"], passages, deps.embedder)
    if state.get("model_busy"):
        reason, prefix = "busy", BUSY_EVIDENCE_PREFIX
        status("busy", "Many questions are waiting for the model: here is what your documents say.")
    else:
        reason, prefix = "unsupported", EXTRACTIVE_PREFIX
        emit({"type": "retry", "reason": "Showing the relevant passages instead of an unsupported answer.",
              "code": "extractive"})
    answer = f"{prefix}\n\n{quotes}"
    token(answer)
    return {
        "answer": answer,
        "answer_kind": "extractive",
        "evidence_reason": reason,
        "answer_synthesized": False,
        "sources": cited_sources(answer, passages),
        "is_grounded": True,
        "groundedness_score": 1.0,
        "processing_steps": [f"fallback:extractive ({reason})"],
    }
