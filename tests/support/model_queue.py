"""Making the model busy on purpose: tests that look at the queue hold every slot of the scheduler themselves."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from backend.llm.scheduler import LLMScheduler, Waiter


@contextmanager
def model_busy(scheduler: LLMScheduler) -> Iterator[None]:
    """Other chats' answers occupy every slot of the model for as long as the block runs."""
    with ExitStack() as held:
        for slot in range(scheduler.slots):
            held.enter_context(scheduler.turn(Waiter(chat_id=f"someone-else-{slot}")))
        yield
