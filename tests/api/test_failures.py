"""When the model is too slow, and when the client walks away: the status the client gets, what the history
keeps, and that generation really stops."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import closing

import httpx
import openai
import pytest
from httpx_sse import connect_sse

from backend.config import Settings
from backend.llm.factory import build_llm
from backend.llm.openai_compat import OpenAICompatLLM
from tests.api.server import serve
from tests.api.support import assert_error, stream_events, upload
from tests.llm.support import free_port
from tests.rag.scripted import ScriptedLLM
from tests.support.waiting import wait_for

NOTES = ("axolotl.txt", b"Axolotls can regrow their limbs, their hearts and even parts of their brains.")
QUESTION = "What can axolotls regrow?"


@pytest.fixture(scope="module")
def impatient_server(build_app_services, tmp_path_factory):
    """The real bundled model, allowed 1 ms without progress while it reads prompts in batches of 512 tokens: any
    batch takes it longer, so every answer runs into the provider's real stall watchdog."""
    llm = build_llm(Settings(llm_stall_timeout=0.001, llm_batch_tokens=512, llm_threads=1))
    with serve(build_app_services(tmp_path_factory.mktemp("impatient"), llm=llm)) as running:
        with httpx.Client(base_url=running.url) as client:
            assert upload(client, "notes", NOTES).status_code == 200
        yield running


@pytest.fixture
def impatient(impatient_server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=impatient_server.url, timeout=300) as client:
        yield client


def assert_only_the_question_was_kept(client: httpx.Client, session_id: str) -> None:
    messages = client.get(f"/chat/history/{session_id}").json()["messages"]
    assert [(m["role"], m["content"]) for m in messages] == [("user", QUESTION)]


def test_a_model_that_does_not_answer_in_time_is_503_and_the_question_is_kept(impatient):
    response = impatient.post("/chat/", json={"message": QUESTION, "chat_id": "notes", "session_id": "timed-out"})
    assert_error(response, 503, "SYNTHESIS_FAILED")
    assert_only_the_question_was_kept(impatient, "timed-out")


def test_a_stream_whose_model_does_not_answer_ends_with_an_error_event(impatient):
    events = stream_events(impatient, "/chat/notes/stream", {"message": QUESTION, "session_id": "stream-timed-out"})
    names = [name for name, _ in events]
    assert names[0] == "status" and names[-1] == "error" and "done" not in names
    error = events[-1][1]
    assert error["type"] == "error" and error["error"] == "SYNTHESIS_FAILED" and error["message"]
    assert set(error) == {"type", "error", "message", "details"}
    assert_only_the_question_was_kept(impatient, "stream-timed-out")


def test_the_openai_client_sees_the_failure(impatient_server):
    client = openai.OpenAI(base_url=f"{impatient_server.url}/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.InternalServerError) as raised:
        client.chat.completions.create(
            model="axiom", messages=[{"role": "user", "content": QUESTION}], metadata={"chat_id": "notes"}
        )
    # The SDK reads the contract's "error" member as the error body: here, the code.
    assert raised.value.status_code == 503 and raised.value.body == "SYNTHESIS_FAILED"
    stream = client.chat.completions.create(
        model="axiom", messages=[{"role": "user", "content": QUESTION}], metadata={"chat_id": "notes"}, stream=True
    )
    with pytest.raises(openai.APIError) as raised:
        list(stream)
    assert raised.value.body["error"] == "SYNTHESIS_FAILED"


@pytest.fixture(scope="module")
def server_down(build_app_services, tmp_path_factory):
    """A server model (OpenAI-compatible) whose server is not running: nothing listens at its address."""
    address = f"http://127.0.0.1:{free_port()}/v1"
    llm = OpenAICompatLLM(address, "local", api_key=None, context_window=2048, timeout=30)
    with serve(build_app_services(tmp_path_factory.mktemp("server-down"), llm=llm)) as running:
        with httpx.Client(base_url=running.url) as client:
            assert upload(client, "notes", NOTES).status_code == 200
        yield running, address


def assert_told_plainly(error: dict, address: str, caplog) -> None:
    """The asker reads a sentence without the server's address; the log names it, with the cause."""
    assert error["error"] == "SYNTHESIS_FAILED"
    assert error["message"] == "The language model server did not answer; try again shortly."
    assert address.split("//")[1].split("/")[0] not in json.dumps(error)
    assert any(address in r.getMessage() and "did not answer" in r.getMessage() for r in caplog.records)
    caplog.clear()


def test_a_model_server_that_is_down_is_told_without_its_address(server_down, caplog):
    running, address = server_down
    question = {"message": QUESTION, "chat_id": "notes"}
    with httpx.Client(base_url=running.url, timeout=300) as client, caplog.at_level(logging.WARNING):
        assert_told_plainly(assert_error(client.post("/chat/", json=question), 503, "SYNTHESIS_FAILED"), address, caplog)

        events = stream_events(client, "/chat/notes/stream", {"message": QUESTION})
        assert events[-1][0] == "error"
        assert_told_plainly(events[-1][1], address, caplog)

        openai_body = {"model": "axiom", "messages": [{"role": "user", "content": QUESTION}],
                       "metadata": {"chat_id": "notes"}}
        response = client.post("/v1/chat/completions", json=openai_body)
        assert_told_plainly(assert_error(response, 503, "SYNTHESIS_FAILED"), address, caplog)

        streamed = client.post("/v1/chat/completions", json={**openai_body, "stream": True})
        last = json.loads([line for line in streamed.text.splitlines() if line.startswith("data: ")][-1][6:])
        assert_told_plainly(last["error"], address, caplog)


class SlowLongLLM(ScriptedLLM):
    """A very long answer, one word every PAUSE seconds: a stream that is still going when the client leaves.
    (The real model cannot be made to talk this long on demand.)"""

    WORDS = 10_000
    PAUSE = 0.05

    def __init__(self) -> None:
        super().__init__(" ".join(["regrowth"] * self.WORDS) + " [Source 1]")
        self.pieces = 0

    def stream(self, messages, params, cancelled=None):
        with closing(super().stream(messages, params, cancelled)) as words:
            for word in words:
                time.sleep(self.PAUSE)
                self.pieces += 1
                yield word


@pytest.fixture(scope="module")
def slow_llm() -> SlowLongLLM:
    return SlowLongLLM()


@pytest.fixture(scope="module")
def slow_server(build_app_services, tmp_path_factory, slow_llm):
    with serve(build_app_services(tmp_path_factory.mktemp("slow"), llm=slow_llm)) as running:
        with httpx.Client(base_url=running.url) as client:
            assert upload(client, "notes", NOTES).status_code == 200
        yield running


def test_a_client_that_disconnects_stops_generation_and_leaves_no_history(slow_server, slow_llm):
    with httpx.Client(base_url=slow_server.url, timeout=300) as client:
        body = {"message": QUESTION, "session_id": "walked-away"}
        with connect_sse(client, "POST", "/chat/notes/stream", json=body) as source:
            tokens = 0
            for sse in source.iter_sse():
                tokens += sse.event == "token"
                if tokens == 3:
                    # The answer streams on a worker thread: meanwhile the server answers other requests.
                    with httpx.Client(base_url=slow_server.url, timeout=60) as other:
                        assert other.get("/health").status_code == 200
                    break
        # Leaving the block closed the connection mid-answer.
        wait_for(lambda: slow_llm.closed_streams == 1, "the LLM stream to be closed", timeout=30)
        assert slow_llm.pieces < SlowLongLLM.WORDS
        assert_error(client.get("/chat/history/walked-away"), 404, "NOT_FOUND", session_id="walked-away")
