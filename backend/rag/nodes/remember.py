from __future__ import annotations

from backend.rag.deps import RAGDeps
from backend.rag.nodes.events import emit, ensure_not_cancelled, token
from backend.rag.nodes.handlers import listed_files, removed_since
from backend.rag.prompts import SOURCES_REMOVED_MID_ANSWER_REPLY
from backend.rag.state import RAGState


def _without_removed_sources(state: RAGState, deps: RAGDeps) -> RAGState:
    """The answer in place of one citing a document deleted while it was written (its text was streamed, and
    would be kept with citations nobody can open): a retry event, then a reply naming the removed files."""
    removed = removed_since(state.get("sources", []), state["chat_id"], deps)
    if not removed:
        return {}
    reply = SOURCES_REMOVED_MID_ANSWER_REPLY.format(files=listed_files(removed))
    emit({"type": "retry", "reason": "A document this answer cites was removed from the chat."})
    token(reply)
    return {"answer": reply, "answer_kind": "fixed", "evidence_reason": None, "sources": [], "is_grounded": True,
            "groundedness_score": 1.0}


def remember(state: RAGState, deps: RAGDeps) -> RAGState:
    """Saves the question and the finished answer together, with what the UI and the context handlers need; never
    the answer of a run its caller stopped (whatever step noticed the Stop last), nor one in a chat deleted while
    it was written (ChatWasDeleted, backend/stores/memory.py)."""
    ensure_not_cancelled()
    replaced = _without_removed_sources(state, deps)
    state = {**state, **replaced}
    deps.memory.add_exchange(state["session_id"], state["question"], state["answer"], {
        "sources": state.get("sources", []),
        "is_grounded": state.get("is_grounded", True),
        "groundedness_score": state.get("groundedness_score", 1.0),
        "intent": state.get("detected_intent"),
        "answer_kind": state.get("answer_kind"),
        "evidence_reason": state.get("evidence_reason"),
        "query_complexity": state.get("query_complexity"),
        "iterations": state.get("iteration", 0),
    }, chat_id=state["chat_id"])
    return {**replaced, "processing_steps": ["remember"] if not replaced else ["remember:sources removed"]}
