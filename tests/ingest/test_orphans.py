"""Vectors whose document has no row (orphans: left by a storer interrupted by two database outages) are freed by
the recovery sweep (``IngestionService.free_orphans``), on SQLite and PostgreSQL, with an embedded Chroma and a
real `chroma run` server; what any row holds, and what a live storer may be writing, is never touched."""

from __future__ import annotations

import logging

import numpy as np
import psycopg
import pytest
import sqlalchemy.exc

from backend.ingest.recovery import RecoverySweep
from backend.models import Chunk
from backend.stores.documents import INDEXING, new_record
from tests.support.postgres import DATABASES
from tests.support.replicas import replica_with
from tests.support.waiting import wait_for

NOTES = b"Axolotls regrow their limbs completely. They keep their larval gills for life."


@pytest.fixture(params=DATABASES)
def services(request, tmp_path, make_services, new_database_url):
    """A replica's services on each database, with an embedded Chroma."""
    built = make_services(tmp_path / "data", database_url=new_database_url(request.param))
    yield built
    built.database.dispose()


@pytest.fixture
def served_services(tmp_path, make_services, new_database_url, chroma):
    """A replica's services on PostgreSQL and a real `chroma run` server, as replicas share them."""
    built = make_services(
        tmp_path / "data", database_url=new_database_url("postgresql"), chroma_host=chroma.host,
        chroma_port=chroma.port, chroma_timeout_seconds=5,
    )
    yield built
    built.database.dispose()


def write_vectors(services, chat_id: str, document_id: str, count: int = 3) -> None:
    """Vectors of a document, as its storer writes them (with no row unless the test begins one)."""
    chunks = [
        Chunk(f"{document_id}-p0-c{i}", f"{document_id}-p0", document_id, "lost.txt", 1, f"lost text {i}")
        for i in range(count)
    ]
    vectors = np.random.default_rng(0).standard_normal((count, 384)).astype(np.float32)
    services.vectors.add(chat_id, chunks, vectors / np.linalg.norm(vectors, axis=1, keepdims=True))


def begin(services, chat_id: str, document_id: str) -> None:
    services.documents.begin(new_record(
        document_id=document_id, chat_id=chat_id, filename=f"{document_id}.txt", sha256=document_id,
        file_type="txt", size_bytes=1, page_count=1,
    ))


def vector_documents(services, chat_id: str) -> set[str]:
    return services.vectors.document_ids(chat_id)


def frees_orphans_and_keeps_the_rest(services, caplog) -> None:
    kept = services.ingestion.ingest("chat1", "notes.txt", NOTES)
    write_vectors(services, "chat1", "orphan", count=250)  # more than one look reads
    begin(services, "chat1", "begun")  # being stored: its row came first
    write_vectors(services, "chat1", "begun")
    services.ingestion.delete_chat("gone")
    write_vectors(services, "gone", "lost")  # the deleted chat's collection made again by a late storer

    with caplog.at_level(logging.INFO, logger="backend.ingest.service"):
        sweep = RecoverySweep(services.ingestion, services.jobs, every_seconds=0.1)
        try:
            # Held as its storer holds it: on PostgreSQL the sweep's roll-back of what is left behind skips it.
            with services.documents.storing(["begun"]):
                wait_for(lambda: not services.vectors.has_collection("gone"), "the sweep to free the orphans")
                wait_for(lambda: "orphan" not in vector_documents(services, "chat1"), "the sweep to free them")
        finally:
            sweep.close()

    assert vector_documents(services, "chat1") == {kept.document_id, "begun"}
    assert services.documents.get("chat1", "begun").status == INDEXING
    assert services.vectors.count("chat1") == kept.chunk_count + 3
    freed = sorted(r.getMessage() for r in caplog.records if r.getMessage().startswith("freed the vectors"))
    assert freed == [
        "freed the vectors of document lost in chat gone: it has no row (its storing was interrupted)",
        "freed the vectors of document orphan in chat chat1: it has no row (its storing was interrupted)",
    ]


def test_the_sweep_frees_vectors_without_a_row_and_keeps_every_documents_with_one(services, caplog):
    frees_orphans_and_keeps_the_rest(services, caplog)


def test_the_sweep_frees_vectors_without_a_row_on_a_chroma_server(served_services, caplog):
    frees_orphans_and_keeps_the_rest(served_services, caplog)


def test_vectors_of_a_document_a_live_storer_holds_are_kept_until_it_lets_go(services):
    """Vectors of an id with no row while a storer holds it (a job's retry beginning the same document id again,
    another replica's lock; this process's upload of the chat) are left to that storer."""
    write_vectors(services, "chat1", "retried")
    with services.documents.storing(["retried"]):
        if services.database.dialect.name == "postgresql":  # another replica's: the document's lock
            assert replica_with(services).free_orphans("chat1") == []
    with services.ingestion._chat_locks["chat1"]:  # this process's upload of the chat runs
        assert services.ingestion.free_orphans("chat1") == []
    assert vector_documents(services, "chat1") == {"retried"}

    assert services.ingestion.free_orphans("chat1") == ["retried"]
    assert not services.vectors.has_collection("chat1")


def test_a_storer_interrupted_by_two_outages_leaves_orphans_that_are_freed(services, monkeypatch):
    """The real path: another replica's sweep rolls the document back before its vectors are written (a database
    restart dropped the storer's lock), the storer writes them, and its 'ready' meets a second outage (a
    stand-in: the lost connection's error), so it rolls nothing back; the next sweep frees what it wrote."""
    kept = services.ingestion.ingest("chat1", "kept.txt", b"Salamanders breathe through their skin.")
    add = services.vectors.add

    def swept_then_add(chat_id, chunks, embeddings):  # orders the two replicas' steps
        document_id = chunks[0].document_id
        assert services.documents.discard(document_id)  # what the other replica's sweep does
        replica_with(services)._roll_back_beside_storers(chat_id, document_id)
        add(chat_id, chunks, embeddings)

    def outage(*args, **kwargs):  # a stand-in for the second restart, as the 'ready' is sent
        lost = psycopg.OperationalError("server closed the connection unexpectedly")
        raise sqlalchemy.exc.OperationalError("UPDATE", None, lost, connection_invalidated=True)

    monkeypatch.setattr(services.vectors, "add", swept_then_add)
    monkeypatch.setattr(services.documents, "mark_ready", outage)
    with pytest.raises(sqlalchemy.exc.OperationalError):
        services.ingestion.ingest("chat1", "notes.txt", NOTES)
    (orphan,) = vector_documents(services, "chat1") - {kept.document_id}
    assert services.documents.get("chat1", orphan) is None

    assert services.ingestion.free_orphans("chat1") == [orphan]
    assert vector_documents(services, "chat1") == {kept.document_id}
    assert services.vectors.count("chat1") == kept.chunk_count


def test_nothing_is_freed_in_a_chat_whose_vectors_all_have_rows(services):
    services.ingestion.ingest("chat1", "notes.txt", NOTES)
    begin(services, "chat1", "begun")
    write_vectors(services, "chat1", "begun")
    services.ingestion.free_orphans_from(0, 100)
    assert len(vector_documents(services, "chat1")) == 2



@pytest.mark.parametrize("when", ["looking", "freeing"])
def test_a_chat_deleted_through_another_replica_while_the_sweep_looks_in_it_is_passed_by(
    served_services, monkeypatch, when
):
    """Its collection goes between the sweep finding it and reading (or freeing) its vectors: nothing to free
    there, and no failure that would end the sweep (and warn, with a traceback) before the other chats."""
    write_vectors(served_services, "chat1", "orphan")
    vectors = served_services.vectors
    existing_collection = vectors._existing_collection
    calls = []

    def deleted_once_found(chat_id):  # orders the two replicas' steps
        collection = existing_collection(chat_id)
        calls.append(chat_id)
        if len(calls) == (1 if when == "looking" else 2):
            replica_with(served_services).delete_chat(chat_id)
        return collection

    monkeypatch.setattr(vectors, "_existing_collection", deleted_once_found)
    assert served_services.ingestion.free_orphans("chat1") == ([] if when == "looking" else ["orphan"])
    assert not vectors.has_collection("chat1")


def test_collections_of_chats_this_database_never_knew_are_left_alone(services):
    """A Chroma server shared with another deployment (its own database): its chats' vectors have no row here and
    would all look orphaned; and a collection Axiom could not have named does not stop the sweep."""
    write_vectors(services, "theirs", "their-document")
    services.vectors._client.create_collection("chat_not.an.id", embedding_function=None).add(
        ids=["x"], embeddings=[[1.0, 0.0]], metadatas=[{"source": "elsewhere"}]
    )
    services.ingestion.delete_chat("ours")
    write_vectors(services, "ours", "orphan")

    assert services.ingestion.free_orphans_from(0, 100) == 0
    assert vector_documents(services, "theirs") == {"their-document"}
    assert not services.vectors.has_collection("ours")


def test_each_sweep_looks_in_its_share_of_the_collections_and_the_next_one_in_the_rest(services):
    for chat_id in ("chat1", "chat2", "chat3"):
        services.ingestion.delete_chat(chat_id)  # versioned, as a chat whose document was rolled back is
        write_vectors(services, chat_id, f"orphan-of-{chat_id}")

    following = services.ingestion.free_orphans_from(0, 2)
    assert [services.vectors.has_collection(chat) for chat in ("chat1", "chat2", "chat3")].count(True) == 1
    # The two collections the first share emptied are gone: the next share starts where the third now is.
    assert services.ingestion.free_orphans_from(following, 2) == 0  # the last share: the next starts again
    assert not any(services.vectors.has_collection(chat) for chat in ("chat1", "chat2", "chat3"))


def test_a_chat_with_more_documents_than_one_look_can_exclude_is_left_alone(services, monkeypatch):
    monkeypatch.setattr("backend.ingest.service._MOST_DOCUMENTS_EXCLUDED", 2)
    for chat_id, documents in (("big", 2), ("small", 1)):
        for number in range(documents):
            begin(services, chat_id, f"{chat_id}{number}")
        write_vectors(services, chat_id, f"orphan-of-{chat_id}")

    assert services.ingestion.free_orphans("big") == []
    assert services.ingestion.free_orphans("small") == ["orphan-of-small"]
