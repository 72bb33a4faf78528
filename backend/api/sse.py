"""Server-sent events: the chat stream (seed §2 "Streaming Protocol") and the thread that feeds it.

The pipeline is a blocking iterator doing CPU work, so it runs on a thread of its own and hands each event to
the event loop, which stays free for other requests. When the client goes away, sse-starlette cancels the
response; the thread then closes the pipeline's iterator after the event it is waiting for (the next token at
the latest), which sets the run's cancel event: the LLM stream is closed and nothing is saved.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import closing
from typing import Any, TypeVar

from sse_starlette import EventSourceResponse, ServerSentEvent

from backend.api.answers import Answerer, Question
from backend.api.errors import unexpected_error
from backend.errors import AxiomError

log = logging.getLogger(__name__)

T = TypeVar("T")

# Proxies (nginx and the like) must pass each event on at once rather than buffer the response.
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
_PING_SECONDS = 15

_ITEM, _ERROR, _END = "item", "error", "end"


async def iterate_in_thread(make: Callable[[], Iterator[T]]) -> AsyncIterator[T]:
    """The items of ``make()``, produced on a dedicated thread; its exceptions are re-raised here.

    The thread owns the iterator from creation to close, so code that keeps per-thread or per-context state
    between items (LangGraph does) always runs where it started.
    """
    loop = asyncio.get_running_loop()
    handed_over: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    stop = threading.Event()

    def hand_over(kind: str, value: Any) -> None:
        try:
            loop.call_soon_threadsafe(handed_over.put_nowait, (kind, value))
        except RuntimeError:  # the event loop is gone (server shut down): nobody is listening any more
            stop.set()

    def produce() -> None:
        try:
            with closing(make()) as items:
                for item in items:
                    if stop.is_set():
                        return
                    hand_over(_ITEM, item)
        except BaseException as error:  # noqa: BLE001 - re-raised on the event loop's side
            hand_over(_ERROR, error)
        else:
            hand_over(_END, None)

    threading.Thread(target=produce, name="axiom-stream", daemon=True).start()
    try:
        while True:
            kind, value = await handed_over.get()
            if kind == _END:
                return
            if kind == _ERROR:
                raise value
            yield value
    finally:
        stop.set()


def event(kind: str, data: dict[str, Any]) -> ServerSentEvent:
    return ServerSentEvent(json.dumps(data, ensure_ascii=False), event=kind)


def error_data(error: Exception) -> dict[str, Any]:
    """The structured error body for a failure that happened after the stream had started."""
    if not isinstance(error, AxiomError):
        log.error("stream failed unexpectedly", exc_info=error)
        error = unexpected_error()
    return error.to_body()


def stream_response(events: AsyncIterator[ServerSentEvent]) -> EventSourceResponse:
    return EventSourceResponse(events, headers=STREAM_HEADERS, ping=_PING_SECONDS)


async def chat_events(answerer: Answerer, question: Question) -> AsyncIterator[ServerSentEvent]:
    """status / token / retry as they happen, then sources and done — or error, if the run fails."""
    try:
        async for item in iterate_in_thread(lambda: answerer.events(question)):
            if item["type"] != "result":
                yield event(item["type"], item)
                continue
            answer = item["result"]
            yield event("sources", {"type": "sources", "sources": answer.sources})
            yield event("done", {
                "type": "done",
                "is_grounded": answer.is_grounded,
                "iterations": answer.iterations,
                "query_complexity": answer.query_complexity,
                "is_summarization": answer.is_summarization,
                "answer_kind": answer.answer_kind,
                # Citations may have been added after the tokens streamed: this is the text to keep.
                "answer": answer.answer,
                "message_id": item["message_id"],
                "session_id": question.session_id,
            })
    except Exception as error:  # noqa: BLE001 - the stream has started: errors travel as an event
        yield event("error", {"type": "error", **error_data(error)})
