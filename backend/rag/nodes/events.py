"""What nodes stream to the caller while the graph runs (LangGraph's custom stream), the caller's Stop, and how a
node waits for its turn on the model.

Nodes run in a worker thread, so a caller that stops reading cannot interrupt them directly: it sets the run's
cancel event instead. The next event a node emits then raises GenerationCancelled, which closes the LLM stream
(stopping generation) and ends the run before anything is saved; a node waiting in the model's queue, or a model
still reading its prompt, polls the same event.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from contextlib import closing

from langgraph.config import get_config, get_stream_writer

from backend.llm.base import ChatMessage, GenerationParams
from backend.llm.scheduled import ScheduledLLM
from backend.llm.scheduler import ModelBusy, Waiter

CANCEL_EVENT = "cancel_event"


class GenerationCancelled(Exception):
    """The caller stopped the run (client disconnect or Stop button)."""


def run_config(cancel: threading.Event) -> dict:
    return {"configurable": {CANCEL_EVENT: cancel}}


def _cancel_event() -> threading.Event | None:
    """The run's cancel event; None for a node called on its own, outside a graph run (as unit tests do)."""
    try:
        config = get_config()
    except RuntimeError:
        return None
    return config.get("configurable", {}).get(CANCEL_EVENT)


def emit(event: dict) -> None:
    """Sends an event ({"type": "token" | "status" | "retry" | "sources" | "evidence", ...}) to whoever streams the
    graph. A node called on its own has no listener: the event is dropped."""
    if _cancel_event() is None:
        return
    ensure_not_cancelled()
    get_stream_writer()(event)


def status(stage: str, message: str, **extra: object) -> None:
    emit({"type": "status", "stage": stage, "message": message, **extra})


def token(text: str) -> None:
    emit({"type": "token", "content": text})


def queue_position(ahead: int) -> None:
    if ahead == 0:
        message = "Your question is next for the model…"
    else:
        message = f"{ahead} question{'s' if ahead > 1 else ''} ahead of yours for the model…"
    status("queued", message, position=ahead)


def _writing() -> None:
    status("generating", "Writing the answer…")


def model_waiter(chat_id: str, patience: float | None, *, announce: bool = True) -> Waiter:
    """How a node waits for the model: in its chat's line, leaving at the run's Stop, giving up after ``patience``
    seconds (None: as long as it takes) and, if ``announce``, telling the asker its place and when writing starts."""
    cancel = _cancel_event()
    if cancel is None:
        return Waiter(chat_id=chat_id, patience=patience)
    return Waiter(
        chat_id=chat_id,
        on_position=queue_position if announce else None,
        on_turn=_writing if announce else None,
        cancelled=cancel.is_set,
        patience=patience,
    )


def write_with_model(
    llm: ScheduledLLM,
    chat_id: str,
    messages: Sequence[ChatMessage],
    params: GenerationParams,
    patience: float | None,
    cut_at: Callable[[str], int | None] | None = None,
) -> str | None:
    """The model's answer, each piece streamed to the asker as a token once the model's turn comes; None when the
    wait would exceed ``patience`` (nothing was streamed then). ``cut_at`` is asked after every piece where the
    answer so far goes wrong (answer_text.loop_start: it started repeating itself); once it names a place,
    generation stops and the answer ends there."""
    written = ""
    waiter = model_waiter(chat_id, patience)
    try:
        # closing(): leaving the loop, or a Stop raised by token(), closes the LLM stream, which stops generation
        # at the provider.
        with closing(llm.stream(messages, params, waiter=waiter)) as stream:
            for piece in stream:
                token(piece)
                written += piece
                cut = cut_at(written) if cut_at is not None else None
                if cut is not None:
                    written = written[:cut]
                    break
    except ModelBusy:
        return None
    if waiter.cancelled():
        # A provider told to stop ends its stream quietly (mid-prompt, nothing written): what came is no answer.
        raise GenerationCancelled()
    return written


def ensure_not_cancelled() -> None:
    """Raises GenerationCancelled if the caller stopped the run: for a step that must not happen after a Stop."""
    cancel = _cancel_event()
    if cancel is not None and cancel.is_set():
        raise GenerationCancelled()
