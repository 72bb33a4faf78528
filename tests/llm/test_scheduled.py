"""ScheduledLLM: a provider behind the scheduler, with the waiter a call brings or the one its block sets."""

from __future__ import annotations

import pytest

from backend.llm.base import GenerationParams
from backend.llm.scheduled import ScheduledLLM
from backend.llm.scheduler import LLMScheduler, ModelBusy, TurnCancelled, Waiter
from tests.rag.scripted import ScriptedLLM
from tests.support.model_queue import model_busy

HELLO = [{"role": "user", "content": "Say hello."}]
PARAMS = GenerationParams(max_tokens=8)


def test_a_call_made_inside_a_block_waits_as_the_blocks_waiter() -> None:
    """How the intent router's and the verifier's own model calls get their chat's place and the run's Stop."""
    llm = ScheduledLLM(ScriptedLLM("hello"), LLMScheduler(slots=1))

    busy_and_impatient = Waiter(chat_id="pets", patience=0.0)
    with model_busy(llm.scheduler), llm.calls_wait_as(busy_and_impatient), pytest.raises(ModelBusy):
        llm.complete(HELLO, PARAMS)
    with llm.calls_wait_as(Waiter(chat_id="pets", cancelled=lambda: True)), pytest.raises(TurnCancelled):
        llm.complete(HELLO, PARAMS)

    assert llm.complete(HELLO, PARAMS).strip() == "hello"  # outside any block: an ordinary call
    assert llm.provider.prompts == [HELLO]  # the model was never started for the calls that gave up
