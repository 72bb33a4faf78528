from __future__ import annotations

from backend.rag.deps import RAGDeps
from backend.rag.intent import Intent
from backend.rag.nodes.events import model_waiter
from backend.rag.state import RAGState


def classify_intent(state: RAGState, deps: RAGDeps) -> RAGState:
    """Reads the recent conversation once and decides what kind of message this is."""
    recent = deps.memory.recent(state["session_id"], max(deps.windows.generation, deps.windows.context))
    history = [message.as_chat_message() for message in recent]
    # A capable model may be asked when the exemplars are unsure: in this chat's line, and stopped with the run.
    with deps.llm.calls_wait_as(model_waiter(state["chat_id"], patience=None, announce=False)):
        decision = deps.router.classify(state["question"], history[-deps.windows.router :])
    return {
        "history": history,
        "detected_intent": decision.intent.value,
        "intent_confidence": decision.confidence,
        "intent_layer": decision.layer,
        "is_garbage_query": decision.intent is Intent.GARBAGE,
        "processing_steps": [f"intent:{decision.intent.value}({decision.layer},{decision.confidence:.2f})"],
    }
