"""A model served by Ollama, through the ``ollama`` Python client (``/api/chat``, NDJSON streaming)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import httpx
import ollama

from backend.llm.base import (
    ChatMessage,
    CompletesFromStream,
    GenerationParams,
    server_did_not_answer,
    server_failed,
)

# Ollama has no tokenize endpoint; about four characters per token is close enough for budgeting a prompt
# against the context window, which is all count_tokens is used for.
CHARS_PER_TOKEN_ESTIMATE = 4


class OllamaLLM(CompletesFromStream):
    def __init__(self, model: str, base_url: str, *, num_ctx: int, timeout: float) -> None:
        self.name = f"ollama:{model}"
        self.context_window = num_ctx
        self._model = model
        self._base_url = base_url
        # The timeout bounds every read, so a server that accepts but never starts answering fails after
        # `timeout` seconds instead of holding the request open.
        self._client = ollama.Client(host=base_url, timeout=timeout)

    def count_tokens(self, text: str) -> int:
        return -(-len(text) // CHARS_PER_TOKEN_ESTIMATE)

    def stream(
        self,
        messages: Sequence[ChatMessage],
        params: GenerationParams,
        cancelled: Callable[[], bool] | None = None,
    ) -> Iterator[str]:
        options: dict[str, Any] = {
            # Ollama's default context is small and silently truncates long prompts, so always say how much.
            "num_ctx": self.context_window,
            "num_predict": params.max_tokens,
            "temperature": params.temperature,
        }
        if params.stop:
            options["stop"] = list(params.stop)
        responses = self._client.chat(
            model=self._model,
            messages=list(messages),
            stream=True,
            format=params.json_schema,
            options=options,
        )
        try:
            finished = False
            for response in responses:
                if cancelled is not None and cancelled():
                    return
                finished = finished or bool(response.done)
                if response.message.content:
                    yield response.message.content
            if not finished:  # cut short (the connection closed mid-answer): not an answer
                raise server_failed(self.name, self._base_url, "the answer's stream ended before it was finished")
        # The client lets httpx's errors through while streaming and wraps them in ConnectionError otherwise.
        except (httpx.TransportError, ConnectionError) as error:
            raise server_did_not_answer(self.name, self._base_url, error) from error
        except ollama.ResponseError as error:
            raise server_failed(
                self.name, self._base_url, f"HTTP {error.status_code}: {error.error}", status=error.status_code
            ) from error
        finally:
            # Closing the client's generator closes the HTTP response, which makes Ollama stop generating.
            responses.close()

