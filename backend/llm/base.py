"""The one interface every LLM provider implements: chat messages in, streamed text out.

Streams are plain iterators: closing one (``.close()``, or dropping out of a ``for`` loop and letting it be
collected) must stop generation at the provider — the embedded model stops decoding, an HTTP provider closes its
connection — so a user's Stop frees the CPU.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypedDict

from backend.errors import SynthesisFailed


class ChatMessage(TypedDict):
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class GenerationParams:
    max_tokens: int = 512
    temperature: float = 0.1
    stop: tuple[str, ...] = ()
    # When set, the provider must return JSON valid against this schema (grammar / response_format / format).
    json_schema: dict[str, Any] | None = field(default=None, hash=False)


class LLMUnavailable(SynthesisFailed):
    """The model did not answer in time or could not be reached; the API turns it into 503 SYNTHESIS_FAILED."""


class LLM(Protocol):
    name: str  # e.g. "llamacpp:SmolLM2-135M-Instruct.Q4_1.gguf"
    context_window: int  # tokens the model can attend to, prompt and answer together

    def count_tokens(self, text: str) -> int: ...

    def stream(self, messages: Sequence[ChatMessage], params: GenerationParams) -> Iterator[str]:
        """Text pieces as they are generated. Raises LLMUnavailable if the first piece does not arrive within the
        provider's first-token timeout, or if the provider cannot be reached."""
        ...

    def complete(self, messages: Sequence[ChatMessage], params: GenerationParams) -> str:
        """The whole answer (same errors as ``stream``)."""
        ...
