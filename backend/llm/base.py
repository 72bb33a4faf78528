"""The one interface every LLM provider implements: chat messages in, streamed text out.

Streams are plain iterators: closing one (``.close()``, or dropping out of a ``for`` loop and letting it be
collected) must stop generation at the provider — the embedded model stops decoding, an HTTP provider closes its
connection — so a user's Stop frees the CPU. A caller that cannot close the stream itself while it waits for the
next piece (the model is still reading a long prompt) passes ``cancelled``, which the provider polls.

Providers do not queue: backend/llm/scheduler.py decides whose call runs, so a provider's timeouts start when the
model starts on the call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypedDict

from backend.config import masked_url
from backend.errors import SynthesisFailed

log = logging.getLogger(__name__)


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


# A model server's address and what went wrong there are for whoever runs Axiom (the log); the asker is told
# what a person can act on.
def server_did_not_answer(provider: str, address: str, cause: object) -> LLMUnavailable:
    """A model server that could not be reached, or did not answer in time."""
    log.warning("the language model server %s (%s) did not answer: %s", masked_url(address), provider, cause)
    return LLMUnavailable("The language model server did not answer; try again shortly.", provider=provider)


def server_failed(provider: str, address: str, cause: object, **details: Any) -> SynthesisFailed:
    """A model server that answered with an error: it refused the request, or failed while writing."""
    log.warning("the language model server %s (%s) failed: %s", masked_url(address), provider, cause)
    return SynthesisFailed(
        "The language model server could not write the answer; try again shortly.", provider=provider, **details
    )


class LLM(Protocol):
    name: str  # e.g. "llamacpp:SmolLM2-135M-Instruct.Q4_1.gguf"
    context_window: int  # tokens the model can attend to, prompt and answer together

    def count_tokens(self, text: str) -> int: ...

    def stream(
        self,
        messages: Sequence[ChatMessage],
        params: GenerationParams,
        cancelled: Callable[[], bool] | None = None,
    ) -> Iterator[str]:
        """Text pieces as they are generated; the stream ends early once ``cancelled()`` is true. Raises
        LLMUnavailable if the model stops making progress (the embedded model) or does not start answering in time
        (servers), or cannot be reached."""
        ...

    def complete(
        self, messages: Sequence[ChatMessage], params: GenerationParams, cancelled: Callable[[], bool] | None = None
    ) -> str:
        """The whole answer (same errors as ``stream``)."""
        ...


class CompletesFromStream:
    """``complete`` for a provider whose ``stream`` does the work: the pieces joined."""

    def complete(
        self, messages: Sequence[ChatMessage], params: GenerationParams, cancelled: Callable[[], bool] | None = None
    ) -> str:
        return "".join(self.stream(messages, params, cancelled))
