"""OllamaLLM through the real ``ollama`` client against a STAND-IN server.

No Ollama server can run here (no model can be pulled), so each test starts a small HTTP server on 127.0.0.1 that
speaks Ollama's ``POST /api/chat`` streaming protocol: one JSON object per line, ``message.content`` carrying each
piece, a last line with ``"done": true``. It replays scripted pieces and records what the client sent, which is what
these tests check: the request the provider builds, how it reads the stream, and how it fails.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from backend.config import Settings
from backend.errors import SynthesisFailed
from backend.llm.base import GenerationParams, LLMUnavailable
from backend.llm.factory import build_llm
from backend.llm.ollama import OllamaLLM
from tests.llm.support import COLOUR_PROMPT, COLOUR_SCHEMA, COUNTING_PROMPT, TEST_MAX_TOKENS, free_port

MODEL = "stand-in-model"
NUM_CTX = 4096
TIMEOUT_S = 0.5
# Long enough for a client that ignored its timeout to still be waiting when the test looks, short enough that
# a stream that was not closed would have ended.
CLIENT_GONE_WAIT_S = 10.0


@dataclass
class Script:
    """What the stand-in answers to the next /api/chat request."""

    pieces: list[str] = field(default_factory=lambda: ["Hello", ",", " world", "."])
    seconds_between_lines: float = 0.0
    never_answer: bool = False
    error: tuple[int, str] | None = None
    cut_short: bool = False  # the connection closed before the last line, "done": true


class OllamaChatHandler(BaseHTTPRequestHandler):
    # HTTP/1.0: the body ends when the connection closes, as a streamed NDJSON answer may.
    protocol_version = "HTTP/1.0"
    server: StandInOllama

    def do_POST(self) -> None:
        assert self.path == "/api/chat"
        self.server.requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        script = self.server.script
        if script.never_answer:
            self.server.released.wait()
        elif script.error is not None:
            self._send_error(*script.error)
        else:
            self._send_pieces(script)

    def _send_error(self, status: int, message: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps({"error": message}).encode())

    def _send_pieces(self, script: Script) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()
        lines = [self._line(piece, done=False) for piece in script.pieces]
        if not script.cut_short:
            lines.append(self._line("", done=True))
        try:
            for line in lines:
                self.wfile.write(json.dumps(line).encode() + b"\n")
                self.wfile.flush()
                self.server.released.wait(script.seconds_between_lines)
        except (BrokenPipeError, ConnectionResetError):
            self.server.client_went_away.set()

    @staticmethod
    def _line(piece: str, *, done: bool) -> dict[str, Any]:
        line: dict[str, Any] = {
            "model": MODEL,
            "message": {"role": "assistant", "content": piece},
            "done": done,
        }
        if done:
            line["done_reason"] = "stop"
        return line

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep the test output to the test's own


class StandInOllama(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), OllamaChatHandler)
        self.script = Script()
        self.requests: list[dict[str, Any]] = []
        self.client_went_away = threading.Event()
        # Set at teardown, so a handler told never to answer can finish.
        self.released = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def stand_in() -> Iterator[StandInOllama]:
    server = StandInOllama()
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield server
    server.released.set()
    server.shutdown()
    server.server_close()


def ollama_at(url: str) -> OllamaLLM:
    return OllamaLLM(MODEL, url, num_ctx=NUM_CTX, timeout=TIMEOUT_S)


def test_stream_yields_the_servers_pieces_in_order(stand_in: StandInOllama) -> None:
    params = GenerationParams(max_tokens=TEST_MAX_TOKENS, temperature=0.2, stop=("\n\n",))

    assert list(ollama_at(stand_in.url).stream(COUNTING_PROMPT, params)) == stand_in.script.pieces

    (request,) = stand_in.requests
    assert request["model"] == MODEL
    assert request["messages"] == COUNTING_PROMPT
    assert request["stream"] is True
    assert request["options"] == {
        "num_ctx": NUM_CTX,
        "num_predict": TEST_MAX_TOKENS,
        "temperature": 0.2,
        "stop": ["\n\n"],
    }
    assert "format" not in request


def test_json_schema_is_sent_as_format_and_complete_joins_the_pieces(stand_in: StandInOllama) -> None:
    stand_in.script.pieces = ['{"colour"', ': "blue"', "}"]
    params = GenerationParams(max_tokens=TEST_MAX_TOKENS, json_schema=COLOUR_SCHEMA)

    answer = ollama_at(stand_in.url).complete(COLOUR_PROMPT, params)

    assert json.loads(answer) == {"colour": "blue"}
    assert stand_in.requests[0]["format"] == COLOUR_SCHEMA


def test_closing_the_stream_closes_the_connection(stand_in: StandInOllama) -> None:
    stand_in.script.pieces = [f" {n}" for n in range(500)]
    stand_in.script.seconds_between_lines = 0.01
    stream = ollama_at(stand_in.url).stream(COUNTING_PROMPT, GenerationParams())

    first_three = [next(stream) for _ in range(3)]
    stream.close()

    assert first_three == [" 0", " 1", " 2"]
    # The stand-in notices when its next writes fail; had the stream not been closed, it would write all 500
    # lines (about five seconds) without error and never set the flag.
    assert stand_in.client_went_away.wait(CLIENT_GONE_WAIT_S)


# Without the provider's timeout this test would hang until pytest-timeout ends it.
@pytest.mark.timeout(30)
def test_a_server_that_never_answers_is_unavailable_after_the_timeout(stand_in: StandInOllama) -> None:
    stand_in.script.never_answer = True

    with pytest.raises(LLMUnavailable) as raised:
        list(ollama_at(stand_in.url).stream(COUNTING_PROMPT, GenerationParams()))

    assert raised.value.status == 503
    assert raised.value.details["provider"] == f"ollama:{MODEL}"


def test_no_server_at_all_is_unavailable() -> None:
    with pytest.raises(LLMUnavailable):
        ollama_at(f"http://127.0.0.1:{free_port()}").complete(COUNTING_PROMPT, GenerationParams())


def test_an_error_from_the_server_is_a_synthesis_failure_not_unavailability(stand_in: StandInOllama, caplog) -> None:
    stand_in.script.error = (404, f"model '{MODEL}' not found")

    with caplog.at_level(logging.WARNING), pytest.raises(SynthesisFailed) as raised:
        ollama_at(stand_in.url).complete(COUNTING_PROMPT, GenerationParams())

    assert not isinstance(raised.value, LLMUnavailable)
    assert raised.value.details["status"] == 404
    # The server's address and its words are the operator's, in the log; the asker reads a plain sentence.
    assert stand_in.url.removeprefix("http://") not in raised.value.message and "not found" not in raised.value.message
    assert any(stand_in.url in r.getMessage() and "not found" in r.getMessage() for r in caplog.records)


def test_a_stream_cut_short_is_a_failure_not_a_short_answer(stand_in: StandInOllama, caplog) -> None:
    stand_in.script.cut_short = True

    with caplog.at_level(logging.WARNING), pytest.raises(SynthesisFailed) as raised:
        ollama_at(stand_in.url).complete(COUNTING_PROMPT, GenerationParams())

    assert raised.value.message == "The language model server could not write the answer; try again shortly."
    assert any(stand_in.url in r.getMessage() and "ended before it was finished" in r.getMessage()
               for r in caplog.records)


def test_token_count_is_a_rough_estimate_that_grows_with_the_text() -> None:
    llm = ollama_at("http://127.0.0.1:1")

    assert llm.count_tokens("") == 0
    assert llm.count_tokens("abcd") == 1
    assert llm.count_tokens("a" * 401) == 101


def test_factory_builds_ollama_from_settings(stand_in: StandInOllama) -> None:
    settings = Settings(
        llm_provider="ollama", ollama_model=MODEL, ollama_base_url=stand_in.url, ollama_num_ctx=NUM_CTX
    )

    llm = build_llm(settings)

    assert isinstance(llm, OllamaLLM)
    assert (llm.name, llm.context_window) == (f"ollama:{MODEL}", NUM_CTX)
    assert llm.complete(COUNTING_PROMPT, GenerationParams()) == "Hello, world."
