"""Values and helpers shared by the provider tests."""

from __future__ import annotations

import socket

from backend.llm.base import ChatMessage, GenerationParams

# One decoding thread: with other work on this machine's two cores, llama.cpp's threads spin-wait for each other,
# and two of them decoded at 0.6 tokens/s against 25 for one.
TEST_THREADS = 1

# Small enough that every test answer is quick on two cores, large enough for a few words or a JSON object.
TEST_MAX_TOKENS = 24

COLOUR_SCHEMA = {
    "type": "object",
    "properties": {"colour": {"type": "string", "enum": ["red", "green", "blue"]}},
    "required": ["colour"],
}

COUNTING_PROMPT: list[ChatMessage] = [{"role": "user", "content": "Count from one to fifty in words."}]
COLOUR_PROMPT: list[ChatMessage] = [
    {"role": "system", "content": "Answer in JSON."},
    {"role": "user", "content": "What colour is the sky on a clear day?"},
]


# The grammar admits nothing shorter than 200 numbers (hundreds of tokens), so the model cannot end the answer by
# itself early: a stream of it still running after a few pieces is only stopped by closing it.
ENDLESS_ARRAY = GenerationParams(
    max_tokens=2000, json_schema={"type": "array", "items": {"type": "integer"}, "minItems": 200}
)
NUMBERS_PROMPT: list[ChatMessage] = [{"role": "user", "content": "List numbers."}]


def free_port() -> int:
    """A port nothing listens on (the probe socket is closed again before the port is used)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
