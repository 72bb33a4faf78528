"""The vector store going down under a running service: a real `chroma run` server is stopped after a file
was uploaded, and questions then go over HTTP.

With Chroma alone down, BM25 still finds the chat's file and the answer cites it. With the keyword index
unreadable on disk as well, nothing can be searched: the client gets 503 RETRIEVAL_FAILED and the question
stays in the history, unanswered.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from backend.config import Settings
from backend.ids import collection_name
from tests.api.server import serve
from tests.api.support import assert_error, stream_events, upload
from tests.support.chroma_server import start_chroma_server

CHAT = "notes"
NOTES = (
    "axolotl.txt",
    (
        b"The axolotl is a salamander that keeps its larval gills for its whole life. Axolotls can regrow "
        b"their limbs, their hearts and even parts of their brains. In the wild they live only in the lakes "
        b"around Mexico City."
    ),
)
QUESTION = "What can axolotls regrow?"


@dataclass(frozen=True)
class Outage:
    chroma_only: str  # the service the file was uploaded through; its keyword index is intact in memory
    everything: str  # a second service on the same data, started later, whose keyword index is unreadable


def keyword_index_path(settings: Settings, chat_id: str) -> Path:
    return settings.bm25_dir / f"{collection_name(chat_id)}.jsonl"


def tear(path: Path) -> None:
    """Cuts the file inside its first chunk's record, as a torn write or a bad disk block would."""
    header, first_record, *_ = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(header + first_record[: len(first_record) // 2])


@pytest.fixture(scope="module")
def outage(build_app_services, tmp_path_factory) -> Iterator[Outage]:
    chroma = start_chroma_server(tmp_path_factory.mktemp("chroma"))
    data_dir = tmp_path_factory.mktemp("axiom")
    try:
        with serve(build_app_services(data_dir, chroma_host=chroma.host, chroma_port=chroma.port)) as first:
            with httpx.Client(base_url=first.url, timeout=300) as client:
                assert upload(client, CHAT, NOTES).status_code == 200
            assert first.services.vectors.count(CHAT) > 0  # the file really is in the Chroma server
            tear(keyword_index_path(first.services.settings, CHAT))
            # Built while Chroma is still up (a service cannot start without it); its keyword index is read
            # from disk on first use, so it will find the torn file.
            second = build_app_services(data_dir, chroma_host=chroma.host, chroma_port=chroma.port)
            chroma.stop()
            with serve(second) as restarted:
                yield Outage(chroma_only=first.url, everything=restarted.url)
    finally:
        chroma.stop()


@pytest.fixture
def chroma_down(outage) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=outage.chroma_only, timeout=600) as client:
        yield client


@pytest.fixture
def all_down(outage) -> Iterator[httpx.Client]:
    # Failing at retrieval involves no generation: a minute only bounds a hang.
    with httpx.Client(base_url=outage.everything, timeout=60) as client:
        yield client


def test_with_chroma_down_bm25_alone_answers_from_the_chats_file(chroma_down, caplog):
    request = {"message": QUESTION, "chat_id": CHAT, "session_id": "bm25-only"}
    with caplog.at_level(logging.ERROR, logger="backend.retrieval.hybrid"):
        response = chroma_down.post("/chat/", json=request)

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["answer"].strip() and body["intent"] == "question"
    assert body["sources"] and {source["filename"] for source in body["sources"]} == {NOTES[0]}
    assert "dense retrieval failed" in caplog.text  # so the sources came from BM25 alone
    history = chroma_down.get("/chat/history/bm25-only").json()["messages"]
    assert [(m["role"], m["content"]) for m in history] == [("user", QUESTION), ("assistant", body["answer"])]


def test_health_still_answers_while_chroma_is_down(chroma_down):
    response = chroma_down.get("/health")
    assert response.status_code == 200
    assert response.json()["vector_store"] == "chroma-server"


def assert_only_the_unanswered_question_was_kept(client: httpx.Client, session_id: str) -> None:
    messages = client.get(f"/chat/history/{session_id}").json()["messages"]
    assert [(m["role"], m["content"], m["metadata"]) for m in messages] == [
        ("user", QUESTION, {"answered": False})
    ]


def test_with_both_retrievers_down_the_answer_is_503_and_the_question_is_kept(all_down):
    request = {"message": QUESTION, "chat_id": CHAT, "session_id": "nothing-up"}
    response = all_down.post("/chat/", json=request)
    assert_error(response, 503, "RETRIEVAL_FAILED", failed=["dense", "bm25"])
    assert_only_the_unanswered_question_was_kept(all_down, "nothing-up")


def test_with_both_retrievers_down_the_stream_ends_with_a_retrieval_failed_event(all_down):
    request = {"message": QUESTION, "session_id": "stream-down"}
    events = stream_events(all_down, f"/chat/{CHAT}/stream", request)
    names = [name for name, _ in events]
    assert names[-1] == "error" and "token" not in names and "done" not in names
    error = events[-1][1]
    assert set(error) == {"type", "error", "message", "details"}
    assert error["error"] == "RETRIEVAL_FAILED" and error["message"]
    assert error["details"] == {"failed": ["dense", "bm25"]}
    assert_only_the_unanswered_question_was_kept(all_down, "stream-down")
