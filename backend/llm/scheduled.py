"""A provider behind the scheduler: the LLM every part of Axiom talks to.

Callers pass a Waiter saying whose call it is and how long it may wait. Parts that call the model from inside
their own logic (the intent router's LLM layer, the LLM groundedness verifier) are given one by the node around
them through ``calls_wait_as``; any other call waits its turn as an anonymous chat. The provider is only called once
the turn is granted, so its own timeouts measure the model, never the queue.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from contextvars import ContextVar

from backend.llm.base import LLM, ChatMessage, GenerationParams
from backend.llm.scheduler import LLMScheduler, Waiter

# The waiter of the calls made inside a ``calls_wait_as`` block (per thread and context, so concurrent runs keep
# their own).
_BLOCK_WAITER: ContextVar[Waiter | None] = ContextVar("axiom_block_waiter", default=None)


class ScheduledLLM:
    def __init__(self, provider: LLM, scheduler: LLMScheduler) -> None:
        self.provider = provider
        self.scheduler = scheduler
        self.name = provider.name
        self.context_window = provider.context_window

    def count_tokens(self, text: str) -> int:
        return self.provider.count_tokens(text)

    def stream(
        self,
        messages: Sequence[ChatMessage],
        params: GenerationParams,
        cancelled: Callable[[], bool] | None = None,
        *,
        waiter: Waiter | None = None,
    ) -> Iterator[str]:
        """Waits for a turn (raising ModelBusy or TurnCancelled as the scheduler decides), then streams."""
        if waiter is None:
            waiter = _BLOCK_WAITER.get() or (Waiter(cancelled=cancelled) if cancelled is not None else Waiter())
        with self.scheduler.turn(waiter):
            if waiter.on_turn is not None:
                waiter.on_turn()
            with closing(self.provider.stream(messages, params, waiter.cancelled)) as pieces:
                yield from pieces

    def complete(
        self,
        messages: Sequence[ChatMessage],
        params: GenerationParams,
        cancelled: Callable[[], bool] | None = None,
        *,
        waiter: Waiter | None = None,
    ) -> str:
        return "".join(self.stream(messages, params, cancelled, waiter=waiter))

    @contextmanager
    def calls_wait_as(self, waiter: Waiter) -> Iterator[None]:
        """Calls without a waiter of their own, made in this block, wait as ``waiter`` (its chat, its Stop)."""
        token = _BLOCK_WAITER.set(waiter)
        try:
            yield
        finally:
            _BLOCK_WAITER.reset(token)

    def others_waiting(self) -> bool:
        return self.scheduler.waiting > 0

    def close(self) -> None:
        close = getattr(self.provider, "close", None)
        if close is not None:
            close()
