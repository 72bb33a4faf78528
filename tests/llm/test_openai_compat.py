"""OpenAICompatLLM against a real ``python -m llama_cpp.server`` serving the bundled SmolLM2 GGUF, and against
servers that are down or never answer."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from backend.config import Settings
from backend.errors import SynthesisFailed
from backend.llm.base import GenerationParams, LLMUnavailable
from backend.llm.factory import build_llm
from backend.llm.llamacpp import bundled_model_path
from backend.llm.openai_compat import OpenAICompatLLM
from tests.llm.support import (
    COLOUR_PROMPT,
    COLOUR_SCHEMA,
    COUNTING_PROMPT,
    ENDLESS_ARRAY,
    NUMBERS_PROMPT,
    TEST_MAX_TOKENS,
    TEST_THREADS,
    free_port,
)
from tests.rag.test_graph import CARE

N_CTX = 2048
SERVER_START_TIMEOUT_S = 60.0
# Bounds every read, so also the server's time to the first piece on a busy machine.
READ_TIMEOUT_S = 30.0
UNANSWERED_TIMEOUT_S = 0.5
TCP_ESTABLISHED = "01"


@dataclass
class LlamaCppServer:
    base_url: str
    port: int


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaCppServer]:
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama_cpp_server") / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable, "-m", "llama_cpp.server",
                "--model", str(bundled_model_path()),
                "--host", "127.0.0.1", "--port", str(port),
                "--n_ctx", str(N_CTX),
                "--n_threads", str(TEST_THREADS), "--n_threads_batch", str(TEST_THREADS),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_serving(base_url, process, log_path)
        yield LlamaCppServer(base_url=base_url, port=port)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_until_serving(base_url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"llama_cpp.server exited with {process.returncode}:\n{log_path.read_text()}")
        try:
            if httpx.get(f"{base_url}/models", timeout=1.0).is_success:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    pytest.fail(f"llama_cpp.server did not answer within {SERVER_START_TIMEOUT_S} s:\n{log_path.read_text()}")


@pytest.fixture
def llm(server: LlamaCppServer) -> OpenAICompatLLM:
    """A fresh provider per test, so its HTTP connections are the test's own."""
    return OpenAICompatLLM(
        server.base_url, "smollm2", api_key=None, context_window=N_CTX, timeout=READ_TIMEOUT_S
    )


def established_client_ports(server_port: int) -> set[int]:
    """Local ports of this machine's open TCP connections to `server_port` on 127.0.0.1 (from /proc/net/tcp)."""
    ports = set()
    for row in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, remote, state = row.split()[1:4]
        if state == TCP_ESTABLISHED and int(remote.split(":")[1], 16) == server_port:
            ports.add(int(local.split(":")[1], 16))
    return ports


def test_stream_yields_several_pieces(llm: OpenAICompatLLM) -> None:
    pieces = list(llm.stream(COUNTING_PROMPT, GenerationParams(max_tokens=TEST_MAX_TOKENS)))

    assert len(pieces) > 1
    assert all(isinstance(piece, str) and piece for piece in pieces)


def test_complete_answers_text(llm: OpenAICompatLLM) -> None:
    assert llm.complete(COUNTING_PROMPT, GenerationParams(max_tokens=TEST_MAX_TOKENS)).strip()


def test_json_schema_mode_answers_valid_json_from_the_enum(llm: OpenAICompatLLM) -> None:
    answer = llm.complete(COLOUR_PROMPT, GenerationParams(max_tokens=32, json_schema=COLOUR_SCHEMA))

    assert json.loads(answer)["colour"] in COLOUR_SCHEMA["properties"]["colour"]["enum"]


def test_closing_the_stream_early_closes_the_connection(llm: OpenAICompatLLM, server: LlamaCppServer) -> None:
    already_open = established_client_ports(server.port)
    stream = llm.stream(NUMBERS_PROMPT, ENDLESS_ARRAY)

    first_pieces = [next(stream) for _ in range(3)]
    streaming_over = established_client_ports(server.port) - already_open
    stream.close()

    assert first_pieces[0] == "["
    assert len(streaming_over) == 1
    assert not streaming_over & established_client_ports(server.port)


def test_a_stream_that_ends_before_its_answer_is_a_failure_not_an_empty_answer(
    llm: OpenAICompatLLM, server: LlamaCppServer, caplog
) -> None:
    """llama_cpp.server answers a streamed prompt too long for its context with a 200 and then nothing at all."""
    too_long = [{"role": "user", "content": "word " * N_CTX}]

    with caplog.at_level(logging.WARNING), pytest.raises(SynthesisFailed) as raised:
        llm.complete(too_long, GenerationParams(max_tokens=TEST_MAX_TOKENS))

    assert not isinstance(raised.value, LLMUnavailable)
    assert raised.value.message == "The language model server could not write the answer; try again shortly."
    # The operator's line: the server's address, and what went wrong there.
    assert any(server.base_url in r.getMessage() and "ended before it was finished" in r.getMessage()
               for r in caplog.records)


@pytest.fixture
def garbling_server_url() -> Iterator[str]:
    """A STAND-IN (no real server sends this): a 200 event stream whose data is not JSON, as a proxy's page."""

    class Garbling(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(b"data: <html>Bad gateway</html>\n\n")

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Garbling)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_a_stream_that_is_not_json_is_a_synthesis_failure(garbling_server_url: str, caplog) -> None:
    llm = OpenAICompatLLM(garbling_server_url, "any", api_key=None, context_window=N_CTX, timeout=READ_TIMEOUT_S)

    with caplog.at_level(logging.WARNING), pytest.raises(SynthesisFailed) as raised:
        llm.complete(COUNTING_PROMPT, GenerationParams())

    assert raised.value.message == "The language model server could not write the answer; try again shortly."
    assert any(garbling_server_url in r.getMessage() and "Bad gateway" in r.getMessage() for r in caplog.records)


def test_a_server_address_is_logged_without_its_password(caplog) -> None:
    address = f"http://axiom:s3cret@127.0.0.1:{free_port()}/v1"
    llm = OpenAICompatLLM(address, "any", api_key=None, context_window=N_CTX, timeout=READ_TIMEOUT_S)

    with caplog.at_level(logging.WARNING), pytest.raises(SynthesisFailed):
        llm.complete(COUNTING_PROMPT, GenerationParams())

    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "axiom:***@127.0.0.1" in logged and "s3cret" not in logged


def test_a_server_that_is_down_is_unavailable() -> None:
    llm = OpenAICompatLLM(
        f"http://127.0.0.1:{free_port()}/v1",
        "any",
        api_key=None,
        context_window=N_CTX,
        timeout=READ_TIMEOUT_S,
    )

    with pytest.raises(LLMUnavailable, match="did not answer"):
        llm.complete(COUNTING_PROMPT, GenerationParams())


# Without the provider's timeout this test would hang until pytest-timeout ends it.
@pytest.mark.timeout(30)
def test_a_server_that_never_answers_is_unavailable_after_the_timeout(silent_server_url: str) -> None:
    llm = OpenAICompatLLM(
        f"{silent_server_url}/v1", "any", api_key=None, context_window=N_CTX, timeout=UNANSWERED_TIMEOUT_S
    )

    with pytest.raises(LLMUnavailable, match="did not answer") as raised:
        llm.complete(COUNTING_PROMPT, GenerationParams())

    assert raised.value.details["provider"] == "openai:any"


def test_token_count_is_a_rough_estimate_that_grows_with_the_text() -> None:
    llm = OpenAICompatLLM("http://127.0.0.1:1/v1", "any", api_key=None, context_window=N_CTX, timeout=1.0)

    assert llm.count_tokens("") == 0
    assert llm.count_tokens("abcd") == 1
    assert llm.count_tokens("a" * 401) == 101


def test_factory_builds_the_openai_provider_from_settings(server: LlamaCppServer) -> None:
    settings = Settings(
        llm_provider="openai",
        openai_base_url=server.base_url,
        openai_model="smollm2",
        openai_api_key="not-checked-by-this-server",
        llm_n_ctx=N_CTX,
    )

    built = build_llm(settings)

    assert isinstance(built, OpenAICompatLLM)
    assert (built.name, built.context_window) == ("openai:smollm2", N_CTX)
    assert built.complete(COUNTING_PROMPT, GenerationParams(max_tokens=TEST_MAX_TOKENS))


def test_the_model_judges_answerability_through_the_server(llm: OpenAICompatLLM, tmp_path, make_services) -> None:
    """AXIOM_ANSWERABILITY_JUDGE=model end to end: the judge's call goes through the scheduler to the server, and
    its verdict decides the route (the 135M model's verdict is not asserted for quality; a reply without one must
    leave the decision to the rules)."""
    services = make_services(
        tmp_path / "data", llm=llm, answerability_judge="model", llm_is_capable=False,
        answer_max_tokens=TEST_MAX_TOKENS, max_retries=0,
    )
    services.ingestion.ingest("pets", "care.txt", CARE.encode())

    result = services.pipeline.run("What water temperature do axolotls need?", chat_id="pets", session_id="s1")

    step = next(step for step in result.processing_steps if step.startswith("answerable:"))
    judged = re.search(r"; judged by (model|evidence, model reply unreadable)\)$", step)
    assert judged, step
    if judged[1] == "model":
        assert (result.answer_kind == "not_found") == step.startswith("answerable:no"), result.processing_steps
    else:  # the rules answer this question
        assert step.startswith("answerable:yes") and result.answer_kind != "not_found"
