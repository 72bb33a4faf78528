"""Asking: POST /chat/ (one JSON answer) and the SSE streams, chat-scoped and legacy (seed §2)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from sse_starlette import EventSourceResponse

from backend.api.deps import AnswererDep, ChatId, UserDep
from backend.api.schemas import (
    ChatRequest,
    ChatResponse,
    ChatStreamRequest,
    LegacyStreamRequest,
    error_responses,
)
from backend.api.sse import call_in_thread, chat_events, stream_response
from backend.errors import ValidationFailed

router = APIRouter(tags=["chat"])

_COLLECTION_PREFIX = "chat_"
_STREAM_DOC = {
    200: {
        "description": "Server-sent events: status, sources, evidence, then token…, retry, done — or error "
        "(docs/api.md)",
        "content": {"text/event-stream": {}},
    },
    **error_responses(400, 404, 409, 410, 503),
}


@router.post("/chat/", response_model=ChatResponse, responses=error_responses(400, 404, 409, 410, 503))
async def chat(body: ChatRequest, answerer: AnswererDep, user: UserDep) -> ChatResponse:
    # Its checks read and write the database, which may wait (SQLite's write lock, a slow server): never on the
    # event loop, which every other request needs meanwhile.
    question = await run_in_threadpool(
        answerer.question, body.message, chat_id=body.chat_id, session_id=body.session_id, user=user
    )
    answered = await call_in_thread(lambda: answerer.answer(question))
    return ChatResponse.of(answered.answer, session_id=question.session_id, message_id=answered.message_id)


@router.post("/chat/{chat_id}/stream", response_class=EventSourceResponse, responses=_STREAM_DOC)
async def chat_stream(
    chat_id: ChatId, body: ChatStreamRequest, answerer: AnswererDep, user: UserDep
) -> EventSourceResponse:
    question = await run_in_threadpool(
        answerer.question, body.message, chat_id=chat_id, session_id=body.session_id, user=user
    )
    return stream_response(chat_events(answerer, question))


@router.post("/chat/stream", response_class=EventSourceResponse, responses=_STREAM_DOC, deprecated=True)
async def legacy_chat_stream(
    body: LegacyStreamRequest, answerer: AnswererDep, user: UserDep
) -> EventSourceResponse:
    """The pre-ADR-007 stream: the chat is named by its collection, ``chat_{chat_id}``."""
    if not body.collection_name.startswith(_COLLECTION_PREFIX):
        raise ValidationFailed(
            f"collection_name must be '{_COLLECTION_PREFIX}' followed by a chat id.", field="collection_name"
        )
    chat_id = body.collection_name.removeprefix(_COLLECTION_PREFIX)
    question = await run_in_threadpool(
        answerer.question, body.message, chat_id=chat_id, session_id=body.session_id, user=user
    )
    return stream_response(chat_events(answerer, question))
