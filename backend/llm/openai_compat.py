"""Any OpenAI-compatible server (llama.cpp, llama_cpp.server, vLLM, LM Studio, ...) over streamed
``/v1/chat/completions`` (server-sent events), with plain httpx."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import httpx

from backend.llm.base import (
    ChatMessage,
    CompletesFromStream,
    GenerationParams,
    server_did_not_answer,
    server_failed,
)

SSE_DATA_PREFIX = "data:"
SSE_END_OF_STREAM = "[DONE]"
# Only llama.cpp serves a tokenizer endpoint, and not under /v1; about four characters per token is close
# enough for budgeting a prompt against the context window, which is all count_tokens is used for.
CHARS_PER_TOKEN_ESTIMATE = 4


class OpenAICompatLLM(CompletesFromStream):
    def __init__(
        self, base_url: str, model: str, *, api_key: str | None, context_window: int, timeout: float
    ) -> None:
        self.name = f"openai:{model}"
        self.context_window = context_window
        self._model = model
        self._base_url = base_url
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # The timeout bounds every read, so a server that accepts but never starts answering fails after
        # `timeout` seconds instead of holding the request open.
        self._client = httpx.Client(base_url=base_url, headers=headers, timeout=timeout)

    def count_tokens(self, text: str) -> int:
        return -(-len(text) // CHARS_PER_TOKEN_ESTIMATE)

    def stream(
        self,
        messages: Sequence[ChatMessage],
        params: GenerationParams,
        cancelled: Callable[[], bool] | None = None,
    ) -> Iterator[str]:
        body = self._request_body(messages, params)
        try:
            # Leaving this block early (the caller closed the stream) closes the unread response, and with it the
            # connection, which is how an OpenAI-compatible server learns to stop generating.
            with self._client.stream("POST", "chat/completions", json=body) as reply:
                if reply.is_error:
                    reply.read()
                    raise server_failed(
                        self.name, self._base_url, f"HTTP {reply.status_code}: {reply.text}", status=reply.status_code
                    )
                finished = False
                for line in reply.iter_lines():
                    if cancelled is not None and cancelled():
                        return
                    if not line.startswith(SSE_DATA_PREFIX):
                        continue  # blank separators, comments (keep-alive pings), event names
                    data = line.removeprefix(SSE_DATA_PREFIX).strip()
                    if data == SSE_END_OF_STREAM:
                        return
                    try:
                        event = json.loads(data)
                    except json.JSONDecodeError:  # a proxy's page, or not an OpenAI-compatible server at all
                        raise server_failed(self.name, self._base_url, f"not JSON: {data[:200]!r}") from None
                    finished = finished or _finish_reason(event) is not None
                    piece = self._piece_of(event)
                    if piece:
                        yield piece
                if not finished:
                    # Cut short: the server failed after its 200 (llama_cpp.server sends nothing more when a prompt
                    # is too long for its context), or the connection was closed cleanly mid-answer. Not an answer.
                    raise server_failed(
                        self.name, self._base_url, "the answer's stream ended before it was finished ([DONE])"
                    )
        except httpx.TransportError as error:
            raise server_did_not_answer(self.name, self._base_url, error) from error

    def _request_body(self, messages: Sequence[ChatMessage], params: GenerationParams) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self._model,
            "messages": list(messages),
            "stream": True,
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
        }
        if params.stop:
            body["stop"] = list(params.stop)
        if params.json_schema is not None:
            # "json_object" with a "schema" is the form both llama.cpp servers (C++ and llama_cpp.server) turn into
            # a grammar; llama_cpp.server rejects OpenAI's newer "json_schema" type outright.
            body["response_format"] = {"type": "json_object", "schema": params.json_schema}
        return body

    def _piece_of(self, event: dict[str, Any]) -> str | None:
        if "error" in event:
            raise server_failed(self.name, self._base_url, f"mid-answer: {event['error']}")
        choices = event.get("choices") or [{}]
        return choices[0].get("delta", {}).get("content")


def _finish_reason(event: dict[str, Any]) -> str | None:
    """Why the answer ended ("stop", "length", …), on its last chunk; None on every other."""
    choices = event.get("choices") or [{}]
    return choices[0].get("finish_reason")
