"""Replies that need no retrieval: fixed replies, the honest "not in your documents", and the context handlers
that rework the previous answer (followup / simplify / deepen) from that answer's own sources."""

from __future__ import annotations

from backend.llm.base import GenerationParams
from backend.models import Chunk, Passage
from backend.rag.answer_text import loop_start
from backend.rag.citations import build_context, cited_sources, with_page_labels
from backend.rag.deps import RAGDeps
from backend.rag.evidence import quote_evidence
from backend.rag.nodes.events import token, write_with_model
from backend.rag.prompts import (
    CLOSEST_PASSAGES_PREFIX,
    FIXED_REPLIES,
    MODEL_BUSY_REPLY,
    NO_DOCUMENTS_REPLY,
    NOT_ANSWERED_REPLY,
    NOT_FOUND_REPLY,
    SYSTEM_PROMPT,
    TRANSFORM_PROMPT,
    TRANSFORM_PROMPTS,
)
from backend.rag.state import RAGState


def _fixed(answer: str, kind: str, step: str) -> RAGState:
    token(answer)
    return {
        "answer": answer,
        "answer_kind": kind,
        "answer_synthesized": False,
        "sources": [],
        "is_grounded": True,
        "groundedness_score": 1.0,
        "processing_steps": [step],
    }


def reply_fixed(state: RAGState, deps: RAGDeps) -> RAGState:
    return _fixed(FIXED_REPLIES[state["detected_intent"]], "fixed", "reply:fixed")


def reply_not_found(state: RAGState, deps: RAGDeps) -> RAGState:
    if state.get("collection_empty"):
        return _fixed(NO_DOCUMENTS_REPLY, "not_found", "reply:no_documents")
    closest = state.get("relevant_documents")
    if not closest:
        return _fixed(NOT_FOUND_REPLY, "not_found", "reply:not_found")
    # On topic but not answering: say so, then the closest sentences, labelled as what they are.
    quotes = quote_evidence(state["question"], closest, deps.embedder)
    answer = f"{NOT_ANSWERED_REPLY}\n\n{CLOSEST_PASSAGES_PREFIX}\n{quotes}"
    return {
        **_fixed(answer, "not_found", "reply:not_found (closest passages)"),
        "evidence_reason": "closest",
        "sources": cited_sources(answer, closest),
    }


def _previous_passages(sources: list[dict], deps: RAGDeps) -> list[Passage]:
    """The passages the previous answer cited, read back from the document registry (still there if the
    document was not deleted since)."""
    parent_ids = [p["parent_id"] for source in sources for p in source.get("passages", [])]
    parents = deps.documents.parents(parent_ids)
    passages = []
    for source in sources:
        for cited in source.get("passages", []):
            parent = parents.get(cited["parent_id"])
            if parent is not None:
                # The cited excerpt stands in for the matched child: it centres the context window.
                excerpt = Chunk(f"{parent.parent_id}-cited", parent.parent_id, parent.document_id,
                                parent.filename, parent.page, cited["excerpt"])
                passages.append(Passage(parent, excerpt, source.get("relevance_score", 0.0), (excerpt,)))
    return passages


def transform_previous(state: RAGState, deps: RAGDeps) -> RAGState:
    previous = deps.memory.last_exchange(state["session_id"], deps.windows.context)
    question, answer = previous
    sources = with_page_labels(answer.metadata.get("sources", []))  # an answer may predate page labels
    passages = _previous_passages(sources, deps)
    context, _ = build_context(passages, deps.llm.count_tokens, deps.limits.context_budget_tokens)
    prompt = TRANSFORM_PROMPT.format(
        instruction=TRANSFORM_PROMPTS[state["detected_intent"]],
        question=question.content,
        answer=answer.content,
        context=context or "(no sources)",
    )
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}]
    params = GenerationParams(max_tokens=deps.limits.answer_max_tokens)
    written = write_with_model(
        deps.llm, state["chat_id"], messages, params, deps.limits.queue_patience_seconds, cut_at=loop_start
    )
    if written is None:
        # Reworking an answer needs the model; the previous answer and its sources are still on screen.
        return _fixed(MODEL_BUSY_REPLY, "fixed", "transform:model busy")
    return {
        "answer": written.strip(),
        "answer_kind": "transformed",
        "answer_synthesized": True,
        "sources": sources,  # the original sources are kept (seed §4)
        "is_grounded": answer.metadata.get("is_grounded", True),
        "groundedness_score": answer.metadata.get("groundedness_score", 1.0),
        "processing_steps": [f"transform:{state['detected_intent']}"],
    }
