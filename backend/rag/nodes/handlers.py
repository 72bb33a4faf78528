"""Replies that need no retrieval: fixed replies, the honest "not in your documents", and the context handlers
that rework the previous answer (followup / simplify / deepen) from that answer's own sources."""

from __future__ import annotations

from backend.llm.base import GenerationParams
from backend.models import Chunk, Parent, Passage
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
    PREVIOUS_SOURCES_REMOVED_REPLY,
    SOURCES_REMOVED_MID_ANSWER_REPLY,
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


_NAMED_FILES = 3  # files named in a reply; past it the rest are counted


def listed_files(filenames: list[str]) -> str:
    """“a.pdf”, “b.docx” and 2 more files."""
    names = [f"“{name}”" for name in filenames]
    if len(names) > _NAMED_FILES:
        names = [*names[: _NAMED_FILES - 1], f"{len(names) - _NAMED_FILES + 1} more files"]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _still_indexing(chat_id: str, deps: RAGDeps) -> str:
    """The sentence naming the chat's files that background jobs are still indexing, or "": they were not
    searched, so "not found" (or "no documents") is not the last word on them."""
    filenames = [job.filename for job in deps.jobs.unfinished(chat_id)] if deps.jobs else []
    if not filenames:
        return ""
    if len(filenames) == 1:
        return (f"{listed_files(filenames)} is still being indexed, so it was not searched yet: ask again once it "
                "is ready.")
    return (f"{listed_files(filenames)} are still being indexed, so they were not searched yet: ask again once "
            "they are ready.")


def reply_not_found(state: RAGState, deps: RAGDeps) -> RAGState:
    indexing = _still_indexing(state["chat_id"], deps)
    if state.get("collection_empty"):
        if indexing:
            return _fixed(indexing, "not_found", "reply:still_indexing")
        return _fixed(NO_DOCUMENTS_REPLY, "not_found", "reply:no_documents")
    closest = state.get("relevant_documents")
    if not closest:
        return _fixed(" ".join(filter(None, [NOT_FOUND_REPLY, indexing])), "not_found", "reply:not_found")
    # On topic but not answering: say so, then the closest sentences, labelled as what they are.
    quotes = quote_evidence(state["question"], closest, deps.embedder)
    answer = f"{' '.join(filter(None, [NOT_ANSWERED_REPLY, indexing]))}\n\n{CLOSEST_PASSAGES_PREFIX}\n{quotes}"
    return {
        **_fixed(answer, "not_found", "reply:not_found (closest passages)"),
        "evidence_reason": "closest",
        "sources": cited_sources(answer, closest),
    }


def _previous_passages(sources: list[dict], parents: dict[str, Parent]) -> list[Passage]:
    """The passages the previous answer cited, read back from the document registry (``parents``: still there
    if the document was not deleted since)."""
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


def _removed_files(sources: list[dict], removed_ids: set[str]) -> list[str]:
    return list(dict.fromkeys(s["filename"] for s in sources if s["document_id"] in removed_ids))


def _removed_reply(template: str, filenames: list[str]) -> str:
    """``template`` naming the removed files, in the singular or the plural."""
    return template.format(files=listed_files(filenames), was="was" if len(filenames) == 1 else "were")


def reply_sources_removed_mid_answer(sources: list[dict], removed_ids: set[str]) -> RAGState:
    """The reply in place of an answer citing documents (``removed_ids``) removed while it was written."""
    reply = _removed_reply(SOURCES_REMOVED_MID_ANSWER_REPLY, _removed_files(sources, removed_ids))
    return {**_fixed(reply, "fixed", "remember:sources removed"), "evidence_reason": None}


def transform_previous(state: RAGState, deps: RAGDeps) -> RAGState:
    previous = deps.memory.last_exchange(state["session_id"], deps.windows.context)
    question, answer = previous
    sources = with_page_labels(answer.metadata.get("sources", []))  # an answer may predate page labels
    parents = deps.documents.parents(p["parent_id"] for source in sources for p in source.get("passages", []))
    present = {parent.document_id for parent in parents.values()}  # only ready documents' parents are found
    removed = [s["document_id"] for s in sources if s.get("passages") and s["document_id"] not in present]
    if removed:
        # Reworking it would cite, and repeat, documents the user removed.
        reply = _removed_reply(PREVIOUS_SOURCES_REMOVED_REPLY, _removed_files(sources, set(removed)))
        return _fixed(reply, "fixed", "transform:removed")
    passages = _previous_passages(sources, parents)
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
