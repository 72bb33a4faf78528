"""A chat deleted while an answer in it is being written: the answer is not saved into the gone chat (where its
session would keep it, and carry it into another chat), the stream ends with the 410 CHAT_DELETED error event
instead of done, and the deleted chat's sessions cannot be used in another chat."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from backend.api.chats import Chats
from backend.errors import SynthesisFailed, VectorStoreUnreachable
from backend.ingest.jobs import IngestJobs
from tests.api.server import serve
from tests.api.support import assert_error, stream_events, upload
from tests.rag.scripted import ScriptedLLM
from tests.support.postgres import DATABASES
from tests.support.waiting import BACKGROUND_WAIT_SECONDS

NOTES = ("notes.txt", b"The Quorra river is 412 kilometres long and flows into the Vellichor sea.")
QUESTION = "How long is the Quorra river?"


class HeldAnswerLLM(ScriptedLLM):
    """Once ``hold`` is set, writes its whole answer and then waits for ``release`` before it ends: the chat is
    deleted at the moment an answer is written but not saved yet. (A stand-in: the real model cannot be stopped
    at that point.)"""

    def __init__(self) -> None:
        super().__init__("The Quorra is 412 kilometres long [Source 1].")
        self.hold = threading.Event()
        self.written = threading.Event()
        self.release = threading.Event()
        self.fail_when_stopped = False  # as a model whose connection the stop cuts

    def stream(self, messages, params, cancelled=None):
        yield from super().stream(messages, params, cancelled)
        if self.hold.is_set():
            self.written.set()
            self.release.wait(BACKGROUND_WAIT_SECONDS)
            if self.fail_when_stopped and cancelled is not None and cancelled():
                raise SynthesisFailed("The model's connection was cut.")


@pytest.fixture(scope="module")
def llm() -> HeldAnswerLLM:
    return HeldAnswerLLM()


@pytest.fixture(scope="module", params=DATABASES)
def server(request, build_app_services, tmp_path_factory, new_database_url, llm):
    services = build_app_services(
        tmp_path_factory.mktemp("held"), llm=llm, database_url=new_database_url(request.param)
    )
    with serve(services) as running:
        yield running
    services.database.dispose()


def deleted_while_answering(client: httpx.Client, llm: HeldAnswerLLM, chat_id: str, ask) -> tuple[dict, object]:
    """``ask()`` runs until its answer is written, then the chat is deleted, then the answer goes on to be saved;
    returns what the deletion reported and what ``ask()`` returned."""
    deleted, asked = deleting_while_answering(client, llm, chat_id, ask)
    assert deleted.status_code == 200, deleted.text
    return deleted.json(), asked


def deleting_while_answering(
    client: httpx.Client, llm: HeldAnswerLLM, chat_id: str, ask
) -> tuple[httpx.Response, object]:
    """As ``deleted_while_answering``, whatever the deletion's response."""
    llm.hold.set()
    llm.written.clear()
    llm.release.clear()
    with ThreadPoolExecutor(1) as pool:
        asked = pool.submit(ask)
        try:
            assert llm.written.wait(BACKGROUND_WAIT_SECONDS), "the answer was not written"
            deleted = client.delete(f"/chats/{chat_id}")
        finally:
            llm.hold.clear()
            llm.release.set()
        return deleted, asked.result()


def history(client: httpx.Client, session_id: str) -> httpx.Response:
    return client.get(f"/chat/history/{session_id}")


def test_a_chat_deleted_while_an_answer_streams_keeps_nothing_and_the_stream_says_so(client, llm):
    assert upload(client, "c2", NOTES).status_code == 200
    assert client.post("/chat/", json={"message": QUESTION, "chat_id": "c2", "session_id": "s2"}).status_code == 200

    deleted, events = deleted_while_answering(
        client, llm, "c2",
        lambda: stream_events(client, "/chat/c2/stream", {"message": QUESTION, "session_id": "s2"}),
    )

    assert deleted["messages_deleted"] == 2  # the exchange before: the one being written was not saved
    names = [name for name, _ in events]
    assert "token" in names and "done" not in names and names[-1] == "error"
    error = events[-1][1]
    assert error["error"] == "CHAT_DELETED" and error["details"] == {"chat_id": "c2"}
    assert "was deleted while this answer was being written" in error["message"]
    assert_error(history(client, "s2"), 404, "NOT_FOUND", session_id="s2")
    # Its session is still the deleted chat's: another chat cannot take it up.
    assert upload(client, "c1", NOTES).status_code == 200
    refused = client.post("/chat/", json={"message": QUESTION, "chat_id": "c1", "session_id": "s2"})
    assert_error(refused, 404, "NOT_FOUND", session_id="s2", chat_id="c1")
    assert_error(history(client, "s2"), 404, "NOT_FOUND", session_id="s2")
    assert_error(client.delete("/chats/c2"), 404, "NOT_FOUND", chat_id="c2")  # it did not come back


def test_a_chat_deleted_while_an_answer_is_written_is_a_410_and_keeps_nothing(client, llm):
    assert upload(client, "c3", NOTES).status_code == 200

    deleted, answered = deleted_while_answering(
        client, llm, "c3",
        lambda: client.post("/chat/", json={"message": QUESTION, "chat_id": "c3", "session_id": "s3"}),
    )

    assert deleted["messages_deleted"] == 0
    refused = assert_error(answered, 410, "CHAT_DELETED", chat_id="c3")
    assert "the question and its answer were not saved" in refused["message"]
    assert_error(history(client, "s3"), 404, "NOT_FOUND", session_id="s3")
    assert upload(client, "c1", NOTES).status_code == 200
    refused = client.post("/chat/", json={"message": QUESTION, "chat_id": "c1", "session_id": "s3"})
    assert_error(refused, 404, "NOT_FOUND", session_id="s3", chat_id="c1")


def test_an_answer_whose_step_fails_once_its_chat_deletion_stopped_it_is_a_410(client, llm, monkeypatch):
    """The step's own error (here the model's, its stream cut by the stop) is the deletion's doing: the answer
    ends as one stopped by the deletion, not as a failure to ask again in a chat that is gone."""
    assert upload(client, "c7", NOTES).status_code == 200
    monkeypatch.setattr(llm, "fail_when_stopped", True)

    deleted, answered = deleted_while_answering(
        client, llm, "c7",
        lambda: client.post("/chat/", json={"message": QUESTION, "chat_id": "c7", "session_id": "s7"}),
    )

    assert deleted["messages_deleted"] == 0
    refused = assert_error(answered, 410, "CHAT_DELETED", chat_id="c7")
    assert "was deleted while this answer was being written" in refused["message"]


def test_an_answer_stopped_by_a_deletion_that_then_failed_is_a_503_to_ask_again_in_the_chat_still_there(
    client, llm, server, monkeypatch
):
    """The answer is stopped as soon as the conversation is cleared, before the deletion fails: its chat is
    still there, so it was not a 410 CHAT_DELETED but a failure to ask again."""
    assert upload(client, "c6", NOTES).status_code == 200

    def unreachable(chat_id: str) -> None:  # a stand-in for a Chroma server that went away: one cannot here
        raise VectorStoreUnreachable("The vector store did not answer.")

    monkeypatch.setattr(server.services.vectors, "delete_chat", unreachable)
    deleted, answered = deleting_while_answering(
        client, llm, "c6",
        lambda: client.post("/chat/", json={"message": QUESTION, "chat_id": "c6", "session_id": "s6"}),
    )
    monkeypatch.undo()

    assert_error(deleted, 503, "RETRIEVAL_FAILED")
    refused = assert_error(answered, 503, "SERVER_BUSY", chat_id="c6")
    assert refused["message"] == "The chat's deletion failed, so this answer was stopped; ask again."
    again = client.post("/chat/", json={"message": QUESTION, "chat_id": "c6", "session_id": "s6"})
    assert again.status_code == 200, again.text
    assert "412 kilometres" in again.json()["answer"]


def test_deleting_a_chat_stops_the_answers_being_written_in_it(build_app_services, tmp_path):
    """The answer went on being written (and rewritten) for nobody after its chat was deleted, holding the model
    while other chats' questions waited, only to be refused when saved."""
    llm = ScriptedLLM(" ".join(["word"] * 400), seconds_per_word=0.05)  # 20 s if never stopped
    services = build_app_services(tmp_path, llm=llm, answer_max_tokens=400, max_retries=2)
    with serve(services) as running, httpx.Client(
        base_url=running.url, timeout=BACKGROUND_WAIT_SECONDS
    ) as client:
        assert upload(client, "c4", NOTES).status_code == 200
        events = []
        with client.stream("POST", "/chat/c4/stream", json={"message": QUESTION}) as response:
            for line in filter(None, response.iter_lines()):
                events.append(line)
                if line == "event: token" and events.count("event: token") == 1:
                    assert client.delete("/chats/c4").status_code == 200
        assert events[-2] == "event: error" and "CHAT_DELETED" in events[-1]
        assert "was deleted while this answer was being written" in events[-1]
        assert llm.closed_streams == 1 and llm.words_streamed < 100 and len(llm.prompts) == 1


def test_deleting_a_chat_stops_its_answers_once_its_conversation_is_cleared_before_its_documents_go(
    make_services, tmp_path
):
    """Stopped by the deletion itself (Chats.delete), not after the slow removal of the chat's indexes: from the
    clearing on, none of its answers could be saved."""
    services = make_services(tmp_path / "data")
    services.ingestion.ingest("c5", *NOTES)
    services.memory.add_exchange("c5", "q", "a", chat_id="c5")
    stopped = []

    def stop_answers(chat_id: str) -> None:
        stopped.append((chat_id, services.memory.has_conversation(chat_id), len(services.documents.list(chat_id))))

    chats = Chats(services.chats, services.documents, services.ingestion, services.memory,
                  IngestJobs(None, services.jobs, workers=0), stop_answers=stop_answers)
    chats.delete("c5")
    assert stopped == [("c5", False, 1)]
