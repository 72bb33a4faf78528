from __future__ import annotations

from backend.rag.deps import RAGDeps
from backend.rag.nodes.events import emit, ensure_not_cancelled
from backend.rag.nodes.handlers import reply_sources_removed_mid_answer
from backend.rag.state import RAGState
from backend.stores.memory import CitedDocumentsRemoved

# The `retry` event's reason when the answer is replaced because documents it cites were removed: nothing is
# rewritten, and the reply naming the removed files follows at once (the web chat shows no status for it).
SOURCES_REMOVED_REASON = "A document this answer cites was removed from the chat."


def remember(state: RAGState, deps: RAGDeps) -> RAGState:
    """Saves the question and the finished answer together, with what the UI and the context handlers need; never
    the answer of a run its caller stopped (whatever step noticed the Stop last), nor one in a chat deleted while
    it was written (ChatWasDeleted, backend/stores/memory.py). An answer citing a document removed from the chat
    while it was written (its text was streamed, and would be kept with citations nobody can open) is replaced:
    a `retry` event, then a reply naming the removed files, saved instead."""
    ensure_not_cancelled()
    try:
        _save(state, deps)
    except CitedDocumentsRemoved as removed:
        emit({"type": "retry", "reason": SOURCES_REMOVED_REASON, "code": "sources_removed"})
        replaced = reply_sources_removed_mid_answer(state.get("sources", []), removed.document_ids)
        _save({**state, **replaced}, deps)
        return replaced
    return {"processing_steps": ["remember"]}


def _save(state: RAGState, deps: RAGDeps) -> None:
    sources = state.get("sources", [])
    deps.memory.add_exchange(state["session_id"], state["question"], state["answer"], {
        "sources": sources,
        "is_grounded": state.get("is_grounded", True),
        "groundedness_score": state.get("groundedness_score", 1.0),
        "intent": state.get("detected_intent"),
        "answer_kind": state.get("answer_kind"),
        "evidence_reason": state.get("evidence_reason"),
        "query_complexity": state.get("query_complexity"),
        "iterations": state.get("iteration", 0),
    }, chat_id=state["chat_id"], cited=[source["document_id"] for source in sources])
