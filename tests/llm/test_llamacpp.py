"""LlamaCppLLM with the real bundled SmolLM2-135M-Instruct GGUF, decoding on this machine."""

from __future__ import annotations

import json
import logging
import threading

import pytest

from backend.config import Settings
from backend.errors import SynthesisFailed
from backend.llm.base import GenerationParams, LLMUnavailable
from backend.llm.factory import build_llm
from backend.llm.llamacpp import WORKER_THREAD_NAME, LlamaCppLLM, bundled_model_path
from tests.llm.support import (
    COLOUR_PROMPT,
    COLOUR_SCHEMA,
    COUNTING_PROMPT,
    ENDLESS_ARRAY,
    NUMBERS_PROMPT,
    TEST_MAX_TOKENS,
    TEST_THREADS,
)

N_CTX = 2048
# Ample for one batch of a prompt or one token on a busy machine.
STALL_TIMEOUT_S = 60.0
# The chat template's default system prompt and NUMBERS_PROMPT come to about 32 tokens; a generation stopped
# after a few pieces stays far below this, one left to run writes hundreds.
STOPPED_GENERATION_TOKEN_BOUND = 100


def new_llm(stall_timeout: float, batch_tokens: int = 64) -> LlamaCppLLM:
    return LlamaCppLLM(
        bundled_model_path(), n_ctx=N_CTX, n_threads=TEST_THREADS, stall_timeout=stall_timeout,
        batch_tokens=batch_tokens,
    )


def tokens_in_context(llm: LlamaCppLLM) -> int:
    """How many tokens the model has evaluated for the last generation, prompt and answer (read from inside the
    provider: how far decoding went is not part of the LLM interface)."""
    return llm._models[0].n_tokens


def wait_for_workers_to_end() -> None:
    for thread in threading.enumerate():
        if thread.name == WORKER_THREAD_NAME:
            thread.join()


@pytest.fixture(scope="module")
def llm() -> LlamaCppLLM:
    return new_llm(STALL_TIMEOUT_S)


def test_stream_yields_text_in_several_pieces(llm: LlamaCppLLM) -> None:
    pieces = list(llm.stream(COUNTING_PROMPT, GenerationParams(max_tokens=TEST_MAX_TOKENS)))

    assert len(pieces) > 1
    assert all(isinstance(piece, str) and piece for piece in pieces)
    assert "".join(pieces).strip()


def test_json_schema_mode_answers_valid_json_from_the_enum(llm: LlamaCppLLM) -> None:
    answer = llm.complete(COLOUR_PROMPT, GenerationParams(max_tokens=32, json_schema=COLOUR_SCHEMA))

    assert json.loads(answer)["colour"] in COLOUR_SCHEMA["properties"]["colour"]["enum"]


def test_closing_the_stream_stops_generation_and_frees_the_model(llm: LlamaCppLLM) -> None:
    stream = llm.stream(NUMBERS_PROMPT, ENDLESS_ARRAY)

    first_pieces = [next(stream) for _ in range(3)]
    stream.close()

    assert first_pieces[0] == "["
    assert tokens_in_context(llm) < STOPPED_GENERATION_TOKEN_BOUND
    assert WORKER_THREAD_NAME not in {thread.name for thread in threading.enumerate()}
    assert llm.complete(COUNTING_PROMPT, GenerationParams(max_tokens=TEST_MAX_TOKENS))


def test_two_instances_write_two_answers_at_once() -> None:
    pair = LlamaCppLLM(bundled_model_path(), n_ctx=N_CTX, n_threads=TEST_THREADS, stall_timeout=STALL_TIMEOUT_S,
                       instances=2)
    first, second = pair.stream(NUMBERS_PROMPT, ENDLESS_ARRAY), pair.stream(NUMBERS_PROMPT, ENDLESS_ARRAY)

    assert next(first) == "[" and next(second) == "["  # the second did not wait for the first to end
    first.close()
    second.close()
    pair.close()


def test_a_second_caller_waits_for_the_running_generation_instead_of_failing(llm: LlamaCppLLM) -> None:
    running = llm.stream(NUMBERS_PROMPT, ENDLESS_ARRAY)
    next(running)
    second: list[str] = []
    waiting = threading.Thread(
        target=lambda: second.append(llm.complete(COUNTING_PROMPT, GenerationParams(max_tokens=TEST_MAX_TOKENS)))
    )
    waiting.start()

    waiting.join(0.5)
    assert waiting.is_alive()  # it waits for the model; the scheduler in front decides who goes first
    running.close()
    waiting.join()
    assert second and second[0]


def test_cancelling_while_the_prompt_is_read_stops_between_two_batches() -> None:
    small_batches = new_llm(STALL_TIMEOUT_S, batch_tokens=8)
    long_prompt = [{"role": "user", "content": "Repeat after me: " + "the quick brown fox " * 100}]
    prompt_tokens = small_batches.count_tokens(long_prompt[0]["content"])

    def cancel_after_two_batches() -> bool:
        return tokens_in_context(small_batches) >= 16

    pieces = list(small_batches.stream(long_prompt, GenerationParams(max_tokens=8), cancel_after_two_batches))

    assert pieces == []
    assert 16 <= tokens_in_context(small_batches) < prompt_tokens  # stopped part-way through the prompt
    assert WORKER_THREAD_NAME not in {thread.name for thread in threading.enumerate()}


def test_a_model_making_no_progress_is_unavailable_and_its_worker_is_joined_before_the_error() -> None:
    impatient = new_llm(stall_timeout=0.001, batch_tokens=512)

    with pytest.raises(LLMUnavailable, match="made no progress"):
        list(impatient.stream(NUMBERS_PROMPT, ENDLESS_ARRAY))

    # Nothing outlives the call: no worker is left to run on while the model is freed (the exit crash).
    assert WORKER_THREAD_NAME not in {thread.name for thread in threading.enumerate()}
    assert tokens_in_context(impatient) < STOPPED_GENERATION_TOKEN_BOUND


def test_a_model_error_is_a_synthesis_failure_and_frees_the_model(llm: LlamaCppLLM, caplog) -> None:
    too_long = [{"role": "user", "content": "word " * N_CTX}]

    with caplog.at_level(logging.ERROR), pytest.raises(SynthesisFailed) as raised:
        llm.complete(too_long, GenerationParams(max_tokens=TEST_MAX_TOKENS))

    assert not isinstance(raised.value, LLMUnavailable)
    # What llama.cpp said is the operator's, in the log; the asker reads a plain sentence.
    assert raised.value.message == "The language model failed while writing the answer; try again shortly."
    assert any(r.exc_info and "exceed context window" in str(r.exc_info[1]) for r in caplog.records)
    wait_for_workers_to_end()
    assert llm.complete(COUNTING_PROMPT, GenerationParams(max_tokens=TEST_MAX_TOKENS))


def test_tokens_are_counted_with_the_models_tokenizer(llm: LlamaCppLLM) -> None:
    assert llm.count_tokens("") == 0
    assert llm.count_tokens("Hello world") == 2  # no beginning-of-text token added
    assert llm.count_tokens("Hello world" * 50) > llm.count_tokens("Hello world" * 10)


def test_factory_builds_the_bundled_model_by_default() -> None:
    built = build_llm(Settings(llm_n_ctx=N_CTX, llm_threads=TEST_THREADS))

    assert isinstance(built, LlamaCppLLM)
    assert (built.name, built.context_window) == ("llamacpp:SmolLM2-135M-Instruct.Q4_1.gguf", N_CTX)


def test_factory_uses_a_configured_model_path() -> None:
    built = build_llm(Settings(llm_model_path=bundled_model_path(), llm_n_ctx=512, llm_threads=TEST_THREADS))

    assert isinstance(built, LlamaCppLLM)
    assert built.context_window == 512
