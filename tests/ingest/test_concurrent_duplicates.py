"""The same file sent through two replicas at once (two IngestionServices on one PostgreSQL database: each has its
own chat locks, as two processes do): the second is answered "duplicate" only once the first is stored, and when
the first fails to be stored, the second stores the file itself instead of pointing at a document that never
was."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import threading

import pytest

from backend.errors import Conflict
from backend.ids import new_document_id
from tests.support.replicas import replica_with, waiting_for_a_lock
from tests.support.waiting import wait_for

NOTES = b"Axolotls regrow their limbs. They live in the lakes of Mexico City and never leave the water."


@pytest.fixture
def replica(tmp_path, make_services, new_database_url):
    """This test's replica on a new PostgreSQL database."""
    services = make_services(tmp_path / "data", database_url=new_database_url("postgresql"))
    yield services
    services.database.dispose()


class FailingVectors:
    """Stand-in for a vector store failing mid-write (the failure injection only; every other call goes to the
    real Chroma store): ``add`` says it is storing, waits until ``until()``, then fails."""

    def __init__(self, real, until) -> None:
        self._real = real
        self._until = until
        self.storing = threading.Event()

    def add(self, chat_id, chunks, embeddings) -> None:
        self.storing.set()
        wait_for(self._until, "the other replica to answer or wait")
        raise RuntimeError("stand-in: the vector store failed while storing")

    def __getattr__(self, name):
        return getattr(self._real, name)


class HeldEmbedder:
    """The real embedder, held until ``gate`` opens (to order the two replicas' steps); ``started`` says it was
    reached."""

    def __init__(self, real, gate: threading.Event) -> None:
        self._real = real
        self._gate = gate
        self.started = threading.Event()

    def embed_documents(self, texts):
        self.started.set()
        assert self._gate.wait(60)
        return self._real.embed_documents(texts)


def assert_stored_once_as(services, document_id: str, chunk_count: int) -> None:
    (listed,) = services.documents.list("chat1")
    assert listed.document_id == document_id and listed.chunk_count == chunk_count > 0
    assert services.documents.incomplete() == []
    assert services.vectors.count("chat1") == services.keywords.count("chat1") == chunk_count


def assert_stored_by_the_second(replica, failing: concurrent.futures.Future, again: concurrent.futures.Future):
    """The first replica's ingest fails at the stand-in; the second's stores the file itself, once."""
    with pytest.raises(RuntimeError, match="stand-in"):
        failing.result(timeout=120)
    stored = again.result(timeout=120)
    assert not stored.duplicate and stored.filename == "copy.txt"
    assert_stored_once_as(replica, stored.document_id, stored.chunk_count)


def test_a_file_the_first_replica_fails_to_store_after_the_duplicate_check_is_stored_by_the_second(replica):
    """The second replica's duplicate check finds the first's document still being stored."""
    second_done = threading.Event()
    vectors = FailingVectors(
        replica.vectors, until=lambda: waiting_for_a_lock(replica) or second_done.is_set()
    )
    first, second = replica_with(replica, vectors=vectors), replica_with(replica)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        failing = pool.submit(first.ingest, "chat1", "notes.txt", NOTES)
        assert vectors.storing.wait(60)
        again = pool.submit(second.ingest, "chat1", "copy.txt", NOTES)
        again.add_done_callback(lambda _: second_done.set())
        assert_stored_by_the_second(replica, failing, again)


def test_a_file_two_replicas_take_at_once_is_stored_by_the_second_when_the_first_fails(replica):
    """Both pass the duplicate check; the second to store meets the first's document (the unique content) while
    the first is still storing it, then the first fails."""
    second_done = threading.Event()
    vectors = FailingVectors(
        replica.vectors, until=lambda: waiting_for_a_lock(replica) or second_done.is_set()
    )
    second_embedding = threading.Event()
    first_embedder = HeldEmbedder(replica.embedder, gate=second_embedding)  # the second checks before it begins
    second_embedder = HeldEmbedder(replica.embedder, gate=vectors.storing)  # and begins after the first did
    first = replica_with(replica, vectors=vectors, embedder=first_embedder)
    second = replica_with(replica, embedder=second_embedder)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        failing = pool.submit(first.ingest, "chat1", "notes.txt", NOTES)
        assert first_embedder.started.wait(60)
        again = pool.submit(second.ingest, "chat1", "copy.txt", NOTES)
        again.add_done_callback(lambda _: second_done.set())
        assert second_embedder.started.wait(60)
        second_embedding.set()
        assert_stored_by_the_second(replica, failing, again)


def test_a_file_the_first_replica_stores_is_a_duplicate_once_it_is_ready(replica):
    """The second replica waits for the first's outcome: a duplicate of a document that is now listed."""
    second_done = threading.Event()
    storing = threading.Event()
    real_add = replica.vectors.add

    class SlowVectors(FailingVectors):
        def add(self, chat_id, chunks, embeddings) -> None:  # stored, once the second waits (or answered)
            storing.set()
            wait_for(lambda: waiting_for_a_lock(replica) or second_done.is_set(), "the second replica")
            real_add(chat_id, chunks, embeddings)

    first = replica_with(replica, vectors=SlowVectors(replica.vectors, until=None))
    second = replica_with(replica)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        storing_first = pool.submit(first.ingest, "chat1", "notes.txt", NOTES)
        assert storing.wait(60)
        again = pool.submit(second.ingest, "chat1", "copy.txt", NOTES)
        again.add_done_callback(lambda _: second_done.set())
        stored = storing_first.result(timeout=120)
        duplicate = again.result(timeout=120)
    assert duplicate.duplicate and duplicate.document_id == stored.document_id
    assert replica.documents.get("chat1", duplicate.document_id).status == "ready"
    assert_stored_once_as(replica, stored.document_id, stored.chunk_count)


def test_a_file_other_replicas_keep_beginning_and_failing_to_store_is_refused_after_a_few_rounds(
    replica, monkeypatch
):
    """Each time this replica begins storing the file, another has just begun the same content and then fails:
    it stops storing it again after a few rounds and refuses the file with CONFLICT, leaving nothing behind."""
    begin = replica.documents.begin
    others = []

    def begun_by_another_first(record):
        # Stand-in for other replicas each beginning the same content just before this one and then dying (their
        # row left 'indexing', held by nobody), which cannot be timed from outside. Only ten of them: without a
        # bound on the rounds, the file is then stored rather than the test hanging.
        if len(others) < 10:
            other = dataclasses.replace(record, document_id=new_document_id())
            assert begin(other) is None
            others.append(other.document_id)
        return begin(record)

    monkeypatch.setattr(replica.documents, "begin", begun_by_another_first)
    with pytest.raises(Conflict, match="“notes.txt” could not be stored.*Upload it again in a moment"):
        replica.ingestion.ingest("chat1", "notes.txt", NOTES)
    assert len(others) == 3
    assert replica.documents.list("chat1") == [] and replica.documents.incomplete() == []
    assert replica.vectors.count("chat1") == 0
