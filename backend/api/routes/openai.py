"""The OpenAI-compatible API: GET /v1/models and POST /v1/chat/completions, streaming or not.

The chat whose documents are searched comes from the ``X-Axiom-Chat-Id`` header or ``metadata.chat_id``; the
question is the last user message. Axiom keeps its own conversation memory per session (``X-Axiom-Session-Id``
or ``metadata.session_id``; a new session per request when neither is given), so the earlier messages a client
resends are not read.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header
from fastapi.concurrency import run_in_threadpool
from sse_starlette import EventSourceResponse

from backend.api.deps import AnswererDep, ApiSettingsDep, UserDep
from backend.api.openai_format import completion, completion_chunks, model_list
from backend.api.schemas import ChatCompletionRequest, Id, error_responses
from backend.api.sse import call_in_thread, stream_response
from backend.errors import NotFound, ValidationFailed

router = APIRouter(prefix="/v1", tags=["openai"])


@router.get("/models")
def list_models(api: ApiSettingsDep) -> dict:
    return model_list(api.model_name)


_COMPLETION_DOC = {
    200: {
        "description": "A chat.completion object; with stream: true, server-sent chat.completion.chunk events ending "
        "with data: [DONE] (docs/api.md)",
        "content": {"application/json": {"schema": {"type": "object"}}, "text/event-stream": {}},
    },
    **error_responses(400, 404, 409, 410, 503),
}


@router.post("/chat/completions", response_model=None, responses=_COMPLETION_DOC)
async def chat_completions(
    body: ChatCompletionRequest,
    answerer: AnswererDep,
    api: ApiSettingsDep,
    user: UserDep,
    x_axiom_chat_id: Annotated[Id | None, Header()] = None,
    x_axiom_session_id: Annotated[Id | None, Header()] = None,
) -> dict | EventSourceResponse:
    if body.model != api.model_name:
        raise NotFound(f"Model '{body.model}' does not exist; use '{api.model_name}'.", model=body.model)
    question_message = next((m for m in reversed(body.messages) if m.role == "user"), None)
    if question_message is None:
        raise ValidationFailed("messages must contain a user message.", field="messages")
    metadata = body.metadata or {}
    question = await run_in_threadpool(
        answerer.question, question_message.text(),
        chat_id=x_axiom_chat_id or metadata.get("chat_id"),
        session_id=x_axiom_session_id or metadata.get("session_id"), user=user,
        message_field="messages", message_subject="the last user message",
    )
    if body.stream:
        return stream_response(completion_chunks(answerer, question, model=api.model_name))
    answered = await call_in_thread(lambda: answerer.answer(question))
    return completion(answered, question, model=api.model_name)
