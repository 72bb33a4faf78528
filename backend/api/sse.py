"""Server-sent events: the chat stream (seed §2 "Streaming Protocol") and the thread that feeds it.

The pipeline is a blocking iterator doing CPU work and waiting for the model, so it runs on a thread of its own
(never the shared pool the sync routes use) and hands each event to the event loop, which stays free for other
requests. When the client goes away, sse-starlette cancels the response, which sets the run's cancel event at
once: a question waiting for the model leaves the queue, a model reading the prompt stops at its next batch, one
writing stops at its next token, and nothing is saved.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import closing
from typing import Any, TypeVar

from sse_starlette import EventSourceResponse, ServerSentEvent

from backend.api.answers import Answerer, Question
from backend.api.errors import client_error

T = TypeVar("T")

# Proxies (nginx and the like) must pass each event on at once rather than buffer the response.
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
_PING_SECONDS = 15

_ITEM, _ERROR, _END = "item", "error", "end"


async def iterate_in_thread(
    make: Callable[[], Iterator[T]], on_stop: Callable[[], None] | None = None
) -> AsyncIterator[T]:
    """The items of ``make()``, produced on a dedicated thread; its exceptions are re-raised here. ``on_stop`` is
    called when the consumer stops early, to stop a producer that is blocked waiting for its next item.

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
        if on_stop is not None:
            on_stop()


async def call_in_thread(function: Callable[[], T]) -> T:
    """``function()`` on a thread of its own: an answer may wait minutes for the model, which must not tie up the
    shared thread pool that every sync route runs on."""
    result: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        try:
            result.set_result(function())
        except BaseException as error:  # noqa: BLE001 - re-raised by the awaiting side
            result.set_exception(error)

    threading.Thread(target=run, name="axiom-answer", daemon=True).start()
    return await asyncio.wrap_future(result)


def event(kind: str, data: dict[str, Any]) -> ServerSentEvent:
    return ServerSentEvent(json.dumps(data, ensure_ascii=False), event=kind)


def error_data(error: Exception) -> dict[str, Any]:
    """The structured error body for a failure that happened after the stream had started."""
    return client_error(error).to_body()


def stream_response(events: AsyncIterator[ServerSentEvent]) -> EventSourceResponse:
    return EventSourceResponse(events, headers=STREAM_HEADERS, ping=_PING_SECONDS)


async def chat_events(answerer: Answerer, question: Question) -> AsyncIterator[ServerSentEvent]:
    """status, sources and evidence as soon as retrieval is done, then token / retry as the model writes, then
    done — or error, if the run fails."""
    cancel = threading.Event()
    try:
        async for item in iterate_in_thread(lambda: answerer.events(question, cancel), on_stop=cancel.set):
            if item["type"] != "result":
                yield event(item["type"], item)
                continue
            answer = item["result"]
            yield event("done", {
                "type": "done",
                "answer_kind": answer.answer_kind,
                "evidence_reason": answer.evidence_reason,
                "is_grounded": answer.is_grounded,
                # Citations may have been added after the tokens streamed: this is the text to keep.
                "answer": answer.answer,
                "sources": answer.sources,
                "iterations": answer.iterations,
                "query_complexity": answer.query_complexity,
                "is_summarization": answer.is_summarization,
                "message_id": item["message_id"],
                "session_id": question.session_id,
            })
    except Exception as error:  # noqa: BLE001 - the stream has started: errors travel as an event
        yield event("error", {"type": "error", **error_data(error)})
