"""The OpenAI chat-completions wire format, so OpenAI clients (the official SDK, chat UIs) can talk to Axiom.

Axiom's extras ride along in fields OpenAI clients ignore: ``axiom_sources`` (the cited sources, as in
POST /chat/) and ``axiom`` (the final answer text, ids and groundedness) on the response or on the last chunk.
A stream cannot take back text it sent, so when a rejected answer is regenerated the retry's reason is streamed
as a note between the two attempts; ``axiom.answer`` on the last chunk is the answer to keep.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from sse_starlette import ServerSentEvent

from backend.api.answers import Answered, Answerer, Question
from backend.api.sse import error_data, iterate_in_thread
from backend.rag.pipeline import RAGAnswer

OWNER = "axiom"


def model_list(model: str) -> dict[str, Any]:
    return {"object": "list", "data": [{"id": model, "object": "model", "created": 0, "owned_by": OWNER}]}


def _extras(answer: RAGAnswer, message_id: str, question: Question) -> dict[str, Any]:
    return {
        "axiom_sources": answer.sources,
        "axiom": {
            "answer": answer.answer,
            "message_id": message_id,
            "session_id": question.session_id,
            "chat_id": question.chat_id,
            "was_grounded": answer.is_grounded,
            "confidence": answer.groundedness_score,
            "answer_kind": answer.answer_kind,
            "evidence_reason": answer.evidence_reason,
            "intent": answer.intent,
        },
    }


def completion(answered: Answered, question: Question, *, model: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": answered.answer.answer},
            "finish_reason": "stop",
        }],
        **_extras(answered.answer, answered.message_id, question),
    }


def _chunk(completion_id: str, created: int, model: str, delta: dict, finish_reason: str | None = None) -> dict:
    return {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def _data(payload: dict[str, Any] | str) -> ServerSentEvent:
    return ServerSentEvent(payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False))


async def completion_chunks(answerer: Answerer, question: Question, *, model: str) -> AsyncIterator[ServerSentEvent]:
    """chat.completion.chunk events, then ``data: [DONE]``; a failure is sent as ``data: {"error": {...}}``."""
    completion_id, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
    yield _data(_chunk(completion_id, created, model, {"role": "assistant", "content": ""}))
    cancel = threading.Event()
    try:
        async for item in iterate_in_thread(lambda: answerer.events(question, cancel), on_stop=cancel.set):
            if item["type"] == "token":
                yield _data(_chunk(completion_id, created, model, {"content": item["content"]}))
            elif item["type"] == "retry":
                yield _data(_chunk(completion_id, created, model, {"content": f"\n\n[{item['reason']}]\n\n"}))
            elif item["type"] == "result":
                last = _chunk(completion_id, created, model, {}, finish_reason="stop")
                yield _data({**last, **_extras(item["result"], item["message_id"], question)})
    except Exception as error:  # noqa: BLE001 - the stream has started: errors travel as an event
        yield _data({"error": error_data(error)})
        return
    yield _data("[DONE]")
