"""A language model that answers from a script.

The retry loop, the not-found path and Stop must be driven deterministically: the real 135M model cannot be made
to hallucinate (or to stay grounded) on demand. Everything else in these tests is real — stores, embedder, graph.
Tests of the real model's answers use the bundled SmolLM2 (see test_pipeline_real_model.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence

from backend.llm.base import ChatMessage, GenerationParams


class ScriptedLLM:
    name = "scripted"
    context_window = 8192

    def __init__(self, *answers: str, seconds_per_word: float = 0.0) -> None:
        self._answers = list(answers)
        self._seconds_per_word = seconds_per_word  # > 0 makes a long answer still be running when a test stops it
        self.prompts: list[list[ChatMessage]] = []
        self.closed_streams = 0
        self.words_streamed = 0

    def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 4)

    def _next(self, messages: Sequence[ChatMessage]) -> str:
        self.prompts.append(list(messages))
        return self._answers.pop(0) if len(self._answers) > 1 else self._answers[0]

    def stream(
        self, messages: Sequence[ChatMessage], params: GenerationParams, cancelled: Callable[[], bool] | None = None
    ) -> Iterator[str]:
        answer = self._next(messages)
        try:
            for word in answer.split(" "):
                if cancelled is not None and cancelled():
                    return
                time.sleep(self._seconds_per_word)
                self.words_streamed += 1
                yield word + " "
        finally:
            self.closed_streams += 1

    def complete(
        self, messages: Sequence[ChatMessage], params: GenerationParams, cancelled: Callable[[], bool] | None = None
    ) -> str:
        return self._next(messages)
