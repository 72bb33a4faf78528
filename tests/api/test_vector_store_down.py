"""The vector store going down under a running service: a real `chroma run` server is stopped, or frozen
(SIGSTOP: connections accepted, never answered), after a file was uploaded, and questions then go over HTTP.

With Chroma alone down, BM25 still finds the chat's file and the answer cites it, and /health says "degraded".
A frozen server needs the request timeout for that (chromadb on its own waits forever). With the keyword index
unreadable as well (its cache file torn and the chunk texts it is rebuilt from unreadable in the database),
nothing can be searched: the client gets 503 RETRIEVAL_FAILED and the question stays in the history, unanswered.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from backend.api.settings import ApiSettings
from backend.config import Settings
from backend.ids import collection_name
from tests.api.server import RunningServer, serve
from tests.api.support import assert_error, stream_events, upload
from tests.support.chroma_server import ChromaServer, start_chroma_server
from tests.support.postgres import DATABASES
from tests.support.waiting import wait_for

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
# Short, so each request to a frozen server fails soon; with room for the busy machine to serve a small upload.
CHROMA_TIMEOUT_SECONDS = 2.0


@dataclass(frozen=True)
class Outage:
    chroma_only: str  # the service the file was uploaded through; its keyword index is intact in memory
    everything: str  # a second service on the same data, started later, whose keyword index cannot be built


@dataclass(frozen=True)
class LiveChroma:
    url: str  # a service whose Chroma server runs until a test freezes it
    chroma: ChromaServer


def keyword_index_path(settings: Settings, chat_id: str) -> Path:
    return settings.bm25_dir / f"{collection_name(chat_id)}.jsonl"


def tear(path: Path) -> None:
    """Cuts the file inside its first chunk's record, as a torn write or a bad disk block would."""
    header, first_record, *_ = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(header + first_record[: len(first_record) // 2])


def services_on(build_app_services, data_dir: Path, chroma: ChromaServer, **settings):
    """Services on the Chroma server ``chroma``."""
    return build_app_services(
        data_dir, chroma_host=chroma.host, chroma_port=chroma.port, chroma_timeout_seconds=CHROMA_TIMEOUT_SECONDS,
        **settings,
    )


@contextmanager
def serving_the_notes(
    build_app_services, data_dir: Path, chroma: ChromaServer, **settings
) -> Iterator[RunningServer]:
    """A service on the Chroma server ``chroma`` whose chat CHAT holds NOTES."""
    services = services_on(build_app_services, data_dir, chroma, **settings)
    with serve(services) as running:
        with httpx.Client(base_url=running.url, timeout=300) as client:
            assert upload(client, CHAT, NOTES).status_code == 200
        assert running.services.vectors.count(CHAT) > 0  # the file really is in the Chroma server
        yield running


@pytest.fixture(scope="module")
def outage(build_app_services, tmp_path_factory) -> Iterator[Outage]:
    chroma = start_chroma_server(tmp_path_factory.mktemp("chroma"))
    data_dir = tmp_path_factory.mktemp("axiom")
    try:
        with serving_the_notes(build_app_services, data_dir, chroma) as first:
            tear(keyword_index_path(first.services.settings, CHAT))
            # The table the torn cache would be rebuilt from (the first service keeps its index in memory).
            with first.services.database.begin() as db:
                db.exec_driver_sql("ALTER TABLE chunks RENAME TO chunks_unreadable")
            # Built while Chroma is still up (a service cannot start without it); its keyword index is read
            # on first use, so it will find the torn file and then fail to rebuild it.
            second = build_app_services(data_dir, chroma_host=chroma.host, chroma_port=chroma.port)
            chroma.stop()
            with serve(second) as restarted:
                yield Outage(chroma_only=first.url, everything=restarted.url)
    finally:
        chroma.stop()


@pytest.fixture(scope="module")
def live(build_app_services, tmp_path_factory) -> Iterator[LiveChroma]:
    chroma = start_chroma_server(tmp_path_factory.mktemp("chroma-live"))
    try:
        with serving_the_notes(build_app_services, tmp_path_factory.mktemp("axiom-live"), chroma) as running:
            yield LiveChroma(running.url, chroma)
    finally:
        chroma.stop()


@pytest.fixture(params=["stopped", "frozen"])
def chroma_down(request) -> Iterator[httpx.Client]:
    """A client of a service whose Chroma server is stopped (connections refused at once) or frozen for the
    test (connections accepted, never answered: only the request timeout ends them)."""
    if request.param == "stopped":
        url, down = request.getfixturevalue("outage").chroma_only, nullcontext()
    else:
        live = request.getfixturevalue("live")
        url, down = live.url, live.chroma.frozen()
    with down, httpx.Client(base_url=url, timeout=600) as client:
        yield client


@pytest.fixture
def all_down(outage) -> Iterator[httpx.Client]:
    # Failing at retrieval involves no generation: a minute only bounds a hang.
    with httpx.Client(base_url=outage.everything, timeout=60) as client:
        yield client


# A bound for a hang (a frozen server without a request timeout), not a speed expectation: the machine may be busy.
@pytest.mark.timeout(300)
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


@pytest.mark.timeout(60)
def test_health_says_degraded_while_chroma_is_down(chroma_down):
    response = chroma_down.get("/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "degraded" and body["vector_store_reachable"] is False
    assert body["vector_store"] == "chroma-server" and body["documents"] == 1


def test_health_is_ok_while_chroma_answers(live):
    with httpx.Client(base_url=live.url, timeout=60) as client:
        body = client.get("/health").json()
    assert body["status"] == "ok" and body["vector_store_reachable"] is True
    assert body["vector_store"] == "chroma-server"


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


@pytest.fixture(params=DATABASES)
def restartable(request, build_app_services, new_database_url, tmp_path) -> Iterator[LiveChroma]:
    (tmp_path / "chroma").mkdir()
    chroma = start_chroma_server(tmp_path / "chroma")
    try:
        with serving_the_notes(
            build_app_services, tmp_path / "axiom", chroma, database_url=new_database_url(request.param)
        ) as running:
            yield LiveChroma(running.url, chroma)
    finally:
        chroma.stop()


def test_an_upload_refused_while_chroma_was_down_is_stored_whole_when_sent_again(restartable):
    """The refused upload's registry row cannot be rolled back while Chroma is down either; sent again once it
    is back, the file must be stored, not answered as a duplicate of that leftover (which was never listed,
    and which the recovery then removes)."""
    other = ("newts.txt", b"Newts are salamanders that live on land as adults and return to water to breed.")
    with httpx.Client(base_url=restartable.url, timeout=300) as client:
        with restartable.chroma.down():
            assert_error(upload(client, CHAT, other), 503, "RETRIEVAL_FAILED")

        response = upload(client, CHAT, other)
        assert response.status_code == 200, response.text
        (stored,) = response.json()["uploaded"]
        assert not stored["duplicate"] and stored["chunk_count"] > 0, stored
        listed = client.get(f"/chat/{CHAT}/documents").json()["documents"]
        assert [(d["name"], d["id"]) for d in listed] == [(NOTES[0], listed[0]["id"]), (other[0], stored["id"])]
        assert upload(client, CHAT, other).json()["uploaded"][0]["duplicate"]  # now it is one


@pytest.fixture
def chroma(tmp_path) -> Iterator[ChromaServer]:
    """A Chroma server of the test's own, which it stops and starts."""
    (tmp_path / "chroma").mkdir()
    chroma = start_chroma_server(tmp_path / "chroma")
    yield chroma
    chroma.stop()


def test_with_keys_on_an_upload_refused_while_chroma_is_down_makes_no_chat(build_app_services, tmp_path, chroma):
    """The chat is claimed for its user once the file has been read, before it is stored: when storing fails,
    the claim is undone, so the list shows no empty chat, and the id stays free (not deleted): the same upload
    once Chroma is back makes the chat."""
    services = services_on(build_app_services, tmp_path / "axiom", chroma, auth="api-key")
    key = services.users.create_key("alice").key
    with serve(services) as running, httpx.Client(
        base_url=running.url, headers={"Authorization": f"Bearer {key}"}, timeout=300
    ) as client:
        with chroma.down():
            refused = upload(client, "made-when-stored", NOTES)
            assert refused.status_code == 503, refused.text
            assert client.get("/chats").json()["chats"] == []
            assert_error(client.get("/chat/made-when-stored/documents"), 404, "NOT_FOUND")

        again = upload(client, "made-when-stored", NOTES)
        assert again.status_code == 200, again.text
        assert [chat["id"] for chat in client.get("/chats").json()["chats"]] == ["made-when-stored"]


def test_a_background_upload_while_chroma_is_down_waits_queued_and_is_stored_once_it_is_back(
    build_app_services, tmp_path, chroma
):
    """The job is polled as queued, with the error of its last try and when it is tried next; once Chroma is
    back, it is stored whole and listed."""
    services = services_on(build_app_services, tmp_path / "axiom", chroma)
    with serve(services, ApiSettings(ingest_retry_seconds=0.5)) as running, httpx.Client(
        base_url=running.url, timeout=300
    ) as client:
        with chroma.down():
            accepted = upload(client, CHAT, NOTES, background="true")
            assert accepted.status_code == 202, accepted.text
            (job,) = accepted.json()["jobs"]
            waiting = wait_for(
                lambda: (body := client.get(f"/chat/{CHAT}/documents/{job['id']}").json())["retry_at"] and body,
                "the job to wait for Chroma",
            )
            assert waiting["status"] == "queued" and waiting["error"]["error"] == "RETRIEVAL_FAILED"
            listed = client.get(f"/chat/{CHAT}/documents").json()
            assert listed["documents"] == [] and [j["id"] for j in listed["jobs"]] == [job["id"]]

        done = wait_for(
            lambda: (body := client.get(f"/chat/{CHAT}/documents/{job['id']}").json())["status"] == "ready"
            and body, "the job once Chroma is back",
        )
        assert done["percent"] == 100 and done["error"] is None and done["retry_at"] is None
        listed = client.get(f"/chat/{CHAT}/documents").json()
        assert [d["id"] for d in listed["documents"]] == [job["id"]] and listed["jobs"] == []


def test_a_background_upload_deleted_while_chroma_is_down_is_gone_and_its_vectors_too_once_chroma_is_back(
    build_app_services, tmp_path, chroma, monkeypatch
):
    """The job's try had stored its vectors when Chroma went down: deleting it while Chroma is still down cancels
    it at once, and once Chroma is back the server's sweep (on SQLite too) removes what the try left there, the
    chat's other file kept."""
    services = services_on(build_app_services, tmp_path / "axiom", chroma)
    settings = ApiSettings(ingest_retry_seconds=60, ingest_lease_seconds=0.5)
    with serve(services, settings) as running, httpx.Client(base_url=running.url, timeout=300) as client:
        kept = upload(client, CHAT, ("newts.txt", b"Newts are salamanders that return to water to breed."))
        (kept,) = kept.json()["uploaded"]
        stopped = chroma.going_down_once_stored(services.vectors, monkeypatch)
        (job,) = upload(client, CHAT, NOTES, background="true").json()["jobs"]
        assert stopped.wait(120)
        with chroma.down():  # already stopped: started again at the end of the block
            wait_for(lambda: client.get(f"/chat/{CHAT}/documents/{job['id']}").json()["retry_at"],
                     "the job to wait for Chroma")
            assert client.delete(f"/chat/{CHAT}/documents/{job['id']}").status_code == 200
            assert client.get(f"/chat/{CHAT}/documents/{job['id']}").json()["status"] == "cancelled"
            listed = client.get(f"/chat/{CHAT}/documents").json()
            assert [d["id"] for d in listed["documents"]] == [kept["id"]] and listed["jobs"] == []
            assert services.documents.incomplete() == []

        wait_for(lambda: not services.documents.discarded(), "the sweep to remove the deleted job's try")
        assert services.vectors.document_ids(CHAT) == {kept["id"]}
        assert services.vectors.count(CHAT) == kept["chunk_count"]


@pytest.mark.parametrize("auth", ["none", "api-key"])
def test_a_chat_whose_deletion_failed_while_chroma_was_down_stays_usable(build_app_services, tmp_path, chroma, auth):
    """Deleting a chat notes its deletion first, so that an answer or a file finishing meanwhile is refused.
    When removing its vectors then fails (Chroma down), the chat is still listed: the note must go too, or
    every later upload and question in it would be refused as "deleted" (with keys on nothing else lifts it)."""
    other = ("newts.txt", b"Newts are salamanders that live on land as adults and return to water to breed.")
    services = services_on(build_app_services, tmp_path / "axiom", chroma, auth=auth)
    headers = {"Authorization": f"Bearer {services.users.create_key('alice').key}"} if auth != "none" else {}
    with serve(services) as running, httpx.Client(base_url=running.url, headers=headers, timeout=300) as client:
        assert upload(client, CHAT, NOTES).status_code == 200
        with chroma.down():
            assert_error(client.delete(f"/chats/{CHAT}"), 503, "RETRIEVAL_FAILED")

        response = upload(client, CHAT, other)
        assert response.status_code == 200, response.text
        listed = client.get(f"/chat/{CHAT}/documents").json()["documents"]
        assert [d["name"] for d in listed] == [NOTES[0], other[0]]
        assert client.delete(f"/chats/{CHAT}").status_code == 200  # and the deletion can be done again
        assert_error(upload(client, CHAT, other), 410, "CHAT_DELETED")
