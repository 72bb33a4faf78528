"""What nodes stream to the caller while the graph runs (LangGraph's custom stream), and the caller's Stop.

Nodes run in a worker thread, so a caller that stops reading cannot interrupt them directly: it sets the run's
cancel event instead, and the next token a node emits raises GenerationCancelled, which closes the LLM stream
(stopping generation) and ends the run before anything is saved.
"""

from __future__ import annotations

import threading

from langgraph.config import get_config, get_stream_writer

CANCEL_EVENT = "cancel_event"


class GenerationCancelled(Exception):
    """The caller stopped the run (client disconnect or Stop button)."""


def run_config(cancel: threading.Event) -> dict:
    return {"configurable": {CANCEL_EVENT: cancel}}


def emit(event: dict) -> None:
    """Sends an event ({"type": "token" | "status" | "retry", ...}) to whoever streams the graph.

    A node called on its own, outside a graph run (as unit tests do), has no listener: the event is dropped.
    """
    try:
        config = get_config()
    except RuntimeError:
        return
    cancel = config.get("configurable", {}).get(CANCEL_EVENT)
    if cancel is not None and cancel.is_set():
        raise GenerationCancelled()
    get_stream_writer()(event)


def status(stage: str, message: str) -> None:
    emit({"type": "status", "stage": stage, "message": message})


def token(text: str) -> None:
    emit({"type": "token", "content": text})
