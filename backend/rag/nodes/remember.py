from __future__ import annotations

from backend.rag.deps import RAGDeps
from backend.rag.nodes.events import ensure_not_cancelled
from backend.rag.state import RAGState


def remember(state: RAGState, deps: RAGDeps) -> RAGState:
    """Saves the question and the finished answer together, with what the UI and the context handlers need; never
    the answer of a run its caller stopped (whatever step noticed the Stop last), nor one in a chat deleted while
    it was written (ChatWasDeleted, backend/stores/memory.py)."""
    ensure_not_cancelled()
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
    return {"processing_steps": ["remember"]}
