"""A conversation's stored messages: read or clear them (seed §11)."""

from __future__ import annotations

from fastapi import APIRouter

from backend.api.chats import session_not_found
from backend.api.deps import ServicesDep, SessionId
from backend.api.schemas import History, HistoryCleared, HistoryMessage, error_responses

router = APIRouter(tags=["history"])


@router.get("/chat/history/{session_id}", response_model=History, responses=error_responses(400, 404))
def get_history(session_id: SessionId, services: ServicesDep) -> History:
    messages = services.memory.history(session_id)
    if not messages:
        raise session_not_found(session_id)
    return History(session_id=session_id, messages=[HistoryMessage.of(m) for m in messages])


@router.delete("/chat/history/{session_id}", response_model=HistoryCleared, responses=error_responses(400, 404))
def clear_history(session_id: SessionId, services: ServicesDep) -> HistoryCleared:
    deleted = services.memory.clear(session_id)
    if not deleted:
        raise session_not_found(session_id)
    return HistoryCleared(session_id=session_id, deleted=deleted)
