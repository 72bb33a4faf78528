"""Ingestion end to end on real stores: Chroma, BM25 and the SQLite registry, with the bundled embedder."""

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import psycopg
import pytest
import sqlalchemy.exc

from backend.errors import (
    ChatWasDeleted,
    Conflict,
    NotFound,
    UnreadableDocument,
    ValidationFailed,
    VectorStoreUnreachable,
)
from backend.ingest.service import IngestedDocument
from backend.models import Chunk
from backend.stores.documents import DISCARDED, READY, new_record
from tests.support import pdf_files
from tests.support.postgres import DATABASES
from tests.support.replicas import replica_with, waiting_for_a_lock
from tests.support.waiting import wait_for

PAPER = "academic_2col_naacl06-shinyama.pdf"
NOTES = b"Axolotls regrow their limbs completely."


def stored_chunks(services, chat_id: str) -> tuple[int, int, int]:
    """(Chroma, BM25, registry) chunk counts for a chat: the three must always agree."""
    registry = sum(r.chunk_count for r in services.documents.list(chat_id))
    return services.vectors.count(chat_id), services.keywords.count(chat_id), registry


def test_a_pdf_lands_in_every_store_with_its_pages(services, pdfs):
    result = services.ingestion.ingest("chat1", PAPER, (pdfs / PAPER).read_bytes())
    assert result.chunk_count > 20 and result.page_count == 8 and not result.duplicate
    assert stored_chunks(services, "chat1") == (result.chunk_count,) * 3
    chunks = services.vectors.get_chunks("chat1")
    assert {c.page for c in chunks} == set(range(1, 9))
    assert all(c.filename == PAPER and c.document_id == result.document_id for c in chunks)


def test_a_pdf_counts_its_pages_without_text(services):
    """Its page count is the PDF's, not the number of its last page with text (the 400-page IRS manual's last
    page is blank)."""
    pages = ["Axolotls regrow their limbs within weeks of losing them.", "", "Salamanders can too.", ""]

    result = services.ingestion.ingest("chat1", "notes.pdf", pdf_files.pdf(pages))

    assert result.page_count == 4
    assert [record.page_count for record in services.documents.list("chat1")] == [4]


def test_the_same_file_twice_is_indexed_once(services, pdfs):
    data = (pdfs / PAPER).read_bytes()
    first = services.ingestion.ingest("chat1", PAPER, data)
    again = services.ingestion.ingest("chat1", "renamed.pdf", data)
    assert again.duplicate and again.document_id == first.document_id
    assert stored_chunks(services, "chat1") == (first.chunk_count,) * 3
    # Another chat is another library: the same file is indexed there separately.
    other = services.ingestion.ingest("chat2", PAPER, data)
    assert not other.duplicate and other.document_id != first.document_id


def test_the_same_file_stored_by_another_replica_after_the_duplicate_check_is_a_duplicate(
    services, pdfs, monkeypatch
):
    """Two replicas taking the same upload at once both pass the duplicate check; the second to store finds the
    first's document instead of failing, and nothing is stored twice."""
    data = (pdfs / PAPER).read_bytes()
    first = services.ingestion.ingest("chat1", PAPER, data)
    check = services.documents.find_by_sha256
    checks_missed = []

    def missed_once(chat_id: str, sha256: str):
        if not checks_missed:  # the check ran before the other replica had written its row
            checks_missed.append(sha256)
            return None
        return check(chat_id, sha256)

    monkeypatch.setattr(services.documents, "find_by_sha256", missed_once)
    again = services.ingestion.ingest("chat1", "renamed.pdf", data)
    assert checks_missed and again.duplicate and again.document_id == first.document_id
    assert stored_chunks(services, "chat1") == (first.chunk_count,) * 3
    assert [r.document_id for r in services.documents.list("chat1")] == [first.document_id]


def test_delete_removes_a_document_from_every_store(services, pdfs):
    keep = services.ingestion.ingest("chat1", "notes.txt", b"Axolotls regrow their limbs completely.")
    gone = services.ingestion.ingest("chat1", PAPER, (pdfs / PAPER).read_bytes())
    services.ingestion.delete("chat1", gone.document_id)
    assert stored_chunks(services, "chat1") == (keep.chunk_count,) * 3
    assert services.vectors.document_ids("chat1") == {keep.document_id}
    assert services.keywords.document_ids("chat1") == {keep.document_id}
    hits = services.sparse.search("chat1", "paraphrase acquisition named entities", 10)
    assert all(hit.chunk.document_id == keep.document_id for hit in hits)
    with pytest.raises(NotFound):
        services.ingestion.delete("chat1", gone.document_id)
    with pytest.raises(ValidationFailed):
        services.ingestion.delete("chat1", "../../etc")


def test_an_unreadable_file_stores_nothing_and_says_why(services, pdfs):
    with pytest.raises(UnreadableDocument) as raised:
        services.ingestion.ingest("chat1", "locked.pdf", (pdfs / "encrypted_userpw_openpassword.pdf").read_bytes())
    assert raised.value.reason == UnreadableDocument.ENCRYPTED
    assert stored_chunks(services, "chat1") == (0, 0, 0)
    assert services.documents.incomplete() == []


def test_a_batch_reports_each_file_and_keeps_the_good_ones(services, pdfs):
    good = (pdfs / PAPER).read_bytes()
    results = services.ingestion.ingest_many("chat1", [
        (PAPER, good),
        ("empty.pdf", b""),
        ("copy.pdf", good),
        ("notes.md", b"# Notes\n\nThe quarterly revenue grew by 12 percent."),
    ])
    assert isinstance(results[0], IngestedDocument) and not results[0].duplicate
    assert isinstance(results[1], UnreadableDocument) and results[1].reason == UnreadableDocument.EMPTY
    assert results[2].duplicate and results[2].document_id == results[0].document_id
    assert isinstance(results[3], IngestedDocument)
    assert len(services.documents.list("chat1")) == 2


class ExplodingRegistry:
    """The real document store, failing to mark a document ready: a storage failure after Chroma already holds
    the chunks."""

    def __init__(self, real):
        self._real = real

    def mark_ready(self, *args, **kwargs):
        raise OSError("disk full")

    def __getattr__(self, name):
        return getattr(self._real, name)


def test_a_failure_mid_ingest_leaves_no_part_of_the_document(services, pdfs):
    kept = services.ingestion.ingest("chat1", "notes.txt", b"Axolotls regrow their limbs completely.")
    services.ingestion._documents = ExplodingRegistry(services.documents)
    with pytest.raises(OSError):
        services.ingestion.ingest("chat1", PAPER, (pdfs / PAPER).read_bytes())
    assert stored_chunks(services, "chat1") == (kept.chunk_count,) * 3
    assert services.vectors.document_ids("chat1") == {kept.document_id}
    assert services.documents.incomplete() == []


def test_a_process_killed_mid_ingest_is_rolled_back_at_the_next_start(tmp_path, pdfs, make_services):
    """A real SIGKILL after Chroma holds the chunks and before the registry has them."""
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from backend.config import Settings
        from backend.container import build_services
        services = build_services(Settings(data_dir=Path({str(tmp_path)!r})))
        def die(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)
        services.ingestion._documents.mark_ready = die
        services.ingestion.ingest("chat1", {PAPER!r}, Path({str(pdfs / PAPER)!r}).read_bytes())
    """)
    env = {**os.environ, "AXIOM_EMBEDDING_CACHE_PATH": str(tmp_path / "cache.db")}
    completed = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == -signal.SIGKILL, completed.stderr

    restarted = make_services(tmp_path)  # building the services runs recovery
    assert stored_chunks(restarted, "chat1") == (0, 0, 0)
    assert restarted.documents.incomplete() == []
    again = restarted.ingestion.ingest("chat1", PAPER, (pdfs / PAPER).read_bytes())
    assert not again.duplicate and stored_chunks(restarted, "chat1") == (again.chunk_count,) * 3


def test_progress_is_reported_up_to_done(services):
    seen = []
    text = "".join(f"Sentence {i} is about tides and moons. " for i in range(1500))  # ~160 chunks
    services.ingestion.ingest("chat1", "long.txt", text.encode(), seen.append)
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) > 2


def test_a_chats_last_document_rolled_back_leaves_no_empty_collection(services):
    """A replica that died storing a chat's first file (rolled back by the others' sweep, ``recover``), or a job
    cancelled as it stored: the chat's vector collection went with the document, not left empty for good."""
    kept = services.ingestion.ingest("chat2", "notes.txt", b"Axolotls regrow their limbs completely.")
    record = new_record(
        document_id="left", chat_id="chat1", filename="left.txt", sha256="left", file_type="txt", size_bytes=1,
        page_count=1,
    )
    services.documents.begin(record)
    services.vectors.add("chat1", [Chunk("left-p0-c0", "left-p0", "left", "left.txt", 1, "Axolotls")], [[0.1] * 384])

    assert services.ingestion.recover() == ["left"]

    assert not services.vectors.has_collection("chat1") and services.documents.list("chat1") == []
    assert stored_chunks(services, "chat2") == (kept.chunk_count,) * 3


def test_a_sweep_keeps_a_document_whose_storer_marked_it_ready_after_the_sweep_found_it_left_behind(
    services, monkeypatch
):
    """A database restart dropped the storer's lock, so another replica's sweep took its document for left
    behind; the storer's 'ready' commits before the sweep rolls it back. The sweep leaves it stored."""
    stored = services.ingestion.ingest("chat1", "notes.txt", b"Axolotls regrow their limbs completely.")
    ready = services.documents.get("chat1", stored.document_id)
    left_behind = services.documents.left_behind

    @contextmanager
    def found_left_behind_then_marked_ready(record):  # orders the sweep's and the storer's steps
        yield True

    monkeypatch.setattr(services.documents, "incomplete", lambda: [ready])
    monkeypatch.setattr(services.documents, "left_behind", found_left_behind_then_marked_ready)

    assert services.ingestion.recover() == []

    monkeypatch.setattr(services.documents, "left_behind", left_behind)
    assert [d.document_id for d in services.documents.list("chat1")] == [stored.document_id]
    assert stored_chunks(services, "chat1") == (stored.chunk_count,) * 3


def test_a_document_whose_ready_commit_meets_a_database_outage_keeps_its_vectors(services, monkeypatch):
    """PostgreSQL went away as the 'ready' committed, unacknowledged (a stand-in: the commit goes through, then
    the lost connection's error is raised): nothing is rolled back under it; the sweep settles it later."""
    mark_ready = services.documents.mark_ready

    def ready_then_connection_lost(record, parents, chunks, **known):
        mark_ready(record, parents, chunks, **known)
        lost = psycopg.OperationalError("server closed the connection unexpectedly")
        raise sqlalchemy.exc.OperationalError("COMMIT", None, lost, connection_invalidated=True)

    monkeypatch.setattr(services.documents, "mark_ready", ready_then_connection_lost)
    with pytest.raises(sqlalchemy.exc.OperationalError):
        services.ingestion.ingest("chat1", "notes.txt", b"Axolotls regrow their limbs completely.")

    (stored,) = services.documents.list("chat1")
    assert services.ingestion.recover() == []
    assert stored_chunks(services, "chat1") == (stored.chunk_count,) * 3


def test_a_file_another_replicas_sweep_rolls_back_while_it_is_stored_is_refused_as_interrupted(
    services, monkeypatch
):
    """A database restart dropped the storer's lock, so another replica's sweep took its document for left behind
    and rolled it back, row and vectors, before the storer reached 'ready': the upload is refused with 409 (upload
    it again), not as a chat deleted (410), and nothing of it is left."""
    add = services.vectors.add

    def add_then_swept(chat_id, chunks, embeddings):  # orders the two replicas' steps
        add(chat_id, chunks, embeddings)
        assert replica_with(services).recover() == [chunks[0].document_id]

    monkeypatch.setattr(services.vectors, "add", add_then_swept)
    with pytest.raises(Conflict, match="“notes.txt” was interrupted by a database restart and rolled back"):
        services.ingestion.ingest("chat1", "notes.txt", b"Axolotls regrow their limbs completely.")

    assert stored_chunks(services, "chat1") == (0, 0, 0) and services.documents.incomplete() == []


def test_a_replica_settling_a_document_whose_storer_lost_its_lock_refuses_that_storers_late_ready(
    services, monkeypatch
):
    """Another replica uploads the same content while a database restart has dropped the first storer's lock:
    it settles the document (rolls it back), and the first storer's 'ready', arriving during that roll-back, is
    refused (409) rather than committed just before its row is removed (reported stored, then gone)."""
    first = new_record(
        document_id="first", chat_id="chat1", filename="notes.txt", sha256=hashlib.sha256(NOTES).hexdigest(),
        file_type="txt", size_bytes=len(NOTES), page_count=1,
    )
    services.documents.begin(first)
    delete_document = services.vectors.delete_document
    late_ready = []

    def deleted_then_late_ready(chat_id, document_id):  # orders the two replicas' steps
        delete_document(chat_id, document_id)
        try:
            services.documents.mark_ready(first, [], [], chat_deletions=0)
        except Conflict as refused:
            late_ready.append(refused)

    monkeypatch.setattr(services.vectors, "delete_document", deleted_then_late_ready)
    stored = replica_with(services).ingest("chat1", "notes.txt", NOTES)

    assert [type(error) for error in late_ready] == [Conflict]
    assert not stored.duplicate and services.documents.get("chat1", "first") is None
    assert stored_chunks(services, "chat1") == (stored.chunk_count,) * 3


ROLL_BACKS_OUTSIDE_AN_UPLOAD = ["discard", "purge_discarded", "recover"]


def left_to_roll_back(services, how):
    """A document "left" begun in chat1 and never stored, as ``how`` finds it; the call that rolls it back."""
    record = new_record(
        document_id="left", chat_id="chat1", filename="left.txt", sha256="left", file_type="txt", size_bytes=1,
        page_count=1,
    )
    services.documents.begin(record)
    if how == "purge_discarded":
        services.documents.discard("left")
    if how == "discard":
        return lambda: services.ingestion.discard("chat1", "left")
    return getattr(services.ingestion, how)


@pytest.mark.parametrize("how", ROLL_BACKS_OUTSIDE_AN_UPLOAD)
def test_a_roll_back_outside_an_upload_holds_the_chats_lock_while_it_removes_an_empty_collection(
    services, monkeypatch, how
):
    """On SQLite only the chat's in-process lock keeps a first upload from storing its vectors between the
    roll-back's check that the chat is empty and the collection's removal: discarding a cancelled job's document
    and the sweeps take it as uploads do."""
    roll_back = left_to_roll_back(services, how)
    delete_chat_if_empty, held = services.vectors.delete_chat_if_empty, []

    def noting_the_lock(chat_id):
        held.append(services.ingestion._chat_locks[chat_id].locked())
        delete_chat_if_empty(chat_id)

    monkeypatch.setattr(services.vectors, "delete_chat_if_empty", noting_the_lock)
    roll_back()

    assert held == [True] and services.documents.get("chat1", "left") is None


@pytest.mark.parametrize("how", ROLL_BACKS_OUTSIDE_AN_UPLOAD)
def test_a_roll_back_outside_an_upload_never_waits_for_an_upload_of_its_chat(services, monkeypatch, how):
    """An upload holding the chat's lock may itself wait for the document's lock the sweep holds (a re-upload of
    the same file settling it): the roll-back must not wait for the chat's lock, or both hang. The document goes
    (a discarded one at the next sweep: that upload may be a job's retry storing it again under the same id); the
    collection is left to the upload, which fills it or removes it with its own roll-back."""
    roll_back = left_to_roll_back(services, how)
    collections_removed = []
    monkeypatch.setattr(services.vectors, "delete_chat_if_empty", collections_removed.append)

    # The lock is let go before the pool waits for its thread: a roll-back that waits fails the test, not hangs it.
    with ThreadPoolExecutor(1) as pool, services.ingestion._chat_locks["chat1"]:  # an upload of the chat runs
        pool.submit(roll_back).result(timeout=60)  # TimeoutError if it waits for the lock

    assert collections_removed == []
    if how == "purge_discarded":
        assert services.documents.get("chat1", "left").status == DISCARDED
        roll_back()  # the next sweep
    assert services.documents.get("chat1", "left") is None


@pytest.fixture(params=DATABASES)
def services_on_each_database(request, tmp_path, make_services, new_database_url):
    built = make_services(tmp_path / "data", database_url=new_database_url(request.param))
    yield built
    built.database.dispose()


def test_a_sweep_purging_discarded_documents_keeps_one_a_jobs_retry_stored_again_under_the_same_id(
    services_on_each_database, monkeypatch
):
    """A job's retry settles its dead worker's document (discards it, then rolls it back) and stores the file again
    under the same id (the job's): a sweep that listed the document while it was discarded, and purges that list
    after, leaves the document stored again whole."""
    services = services_on_each_database
    services.documents.begin(new_record(
        document_id="job1", chat_id="chat1", filename="notes.txt", sha256=hashlib.sha256(NOTES).hexdigest(),
        file_type="txt", size_bytes=len(NOTES), page_count=1,
    ))  # what the dead worker left
    listed = []
    delete_document = services.vectors.delete_document

    def listed_meanwhile(chat_id, document_id):  # orders the sweep's reading of its list within the settling
        listed.extend(services.documents.discarded())
        delete_document(chat_id, document_id)

    with monkeypatch.context() as settling:
        settling.setattr(services.vectors, "delete_document", listed_meanwhile)
        assert services.ingestion.settle("chat1", "job1") is None
    assert [record.document_id for record in listed] == ["job1"]
    stored = services.ingestion.ingest("chat1", "notes.txt", NOTES, document_id="job1")

    monkeypatch.setattr(services.documents, "discarded", lambda: listed)  # the list the sweep read before
    assert services.ingestion.purge_discarded() == []

    assert services.documents.get("chat1", "job1").status == READY
    assert stored_chunks(services, "chat1") == (stored.chunk_count,) * 3


def test_a_document_is_deleted_even_if_its_chats_emptied_collection_cannot_be_removed(services, monkeypatch):
    """Removing the collection the chat's last document leaves empty is a clean-up: the vector store failing
    it then neither fails the deletion nor brings the document back."""
    stored = services.ingestion.ingest("chat1", "notes.txt", b"Axolotls regrow their limbs completely.")

    def unreachable(chat_id):
        raise VectorStoreUnreachable("The vector store did not answer.")

    monkeypatch.setattr(services.vectors, "delete_chat_if_empty", unreachable)
    services.ingestion.delete("chat1", stored.document_id)

    assert services.documents.get("chat1", stored.document_id) is None
    assert stored_chunks(services, "chat1") == (0, 0, 0)


def deleted_elsewhere(services, chat_id: str) -> None:
    """What deleting the chat on another replica does first: notes its deletion (then removes what it holds)."""
    services.memory.clear_chat(chat_id)


@pytest.mark.parametrize("when", ["embedding", "in the vector store"])
def test_a_file_whose_chat_is_deleted_while_it_is_stored_leaves_nothing(services, monkeypatch, when):
    """Deleted while the file is embedded (before its row is written) or once its vectors are in Chroma (before it
    is ready): it is refused with CHAT_DELETED and rolled back, kept in no store."""
    kept = services.ingestion.ingest("chat2", "notes.txt", b"Axolotls regrow their limbs completely.")
    services.chats.create("Axolotls", chat_id="chat1")
    if when == "embedding":
        embed = services.ingestion._embedder.embed_documents

        def embed_then_delete(texts):
            deleted_elsewhere(services, "chat1")
            return embed(texts)

        monkeypatch.setattr(services.ingestion._embedder, "embed_documents", embed_then_delete)
    else:
        add = services.vectors.add

        def add_then_delete(chat_id, chunks, embeddings):
            add(chat_id, chunks, embeddings)
            deleted_elsewhere(services, chat_id)

        monkeypatch.setattr(services.vectors, "add", add_then_delete)

    with pytest.raises(ChatWasDeleted, match="“Axolotls” was deleted while “notes.txt” was being stored"):
        services.ingestion.ingest("chat1", "notes.txt", b"Axolotls regrow their limbs completely.")

    assert stored_chunks(services, "chat1") == (0, 0, 0)
    assert services.documents.incomplete() == [] and services.documents.chunks("chat1") == []
    assert stored_chunks(services, "chat2") == (kept.chunk_count,) * 3


def test_a_file_whose_chat_another_replica_deletes_before_its_vectors_go_in_leaves_no_collection(
    make_services, tmp_path, chroma, new_database_url, monkeypatch
):
    """On a real Chroma server: another replica (which does not wait for this one's storing) deletes the chat
    after the file's row is written, so its vectors make the chat's collection again; the file is refused with
    CHAT_DELETED and no collection, not even an empty one, is left for the deleted chat."""
    services = make_services(
        tmp_path / "data", database_url=new_database_url("postgresql"), chroma_host=chroma.host,
        chroma_port=chroma.port, chroma_timeout_seconds=5,
    )
    add = services.vectors.add

    def deleted_then_add(chat_id, chunks, embeddings):  # orders the two replicas' steps
        deleted_elsewhere(services, chat_id)
        replica_with(services).delete_chat(chat_id)
        add(chat_id, chunks, embeddings)

    monkeypatch.setattr(services.vectors, "add", deleted_then_add)
    with pytest.raises(ChatWasDeleted):
        services.ingestion.ingest("gone", "notes.txt", b"Axolotls regrow their limbs completely.")
    assert not services.vectors.has_collection("gone")
    assert services.documents.incomplete() == [] and services.documents.list("gone") == []
    services.database.dispose()


def test_a_chat_made_again_while_a_refused_file_is_rolled_back_keeps_what_another_replica_stores_in_it(
    make_services, tmp_path, chroma, new_database_url, monkeypatch
):
    """The chat is deleted and made again under its id (``POST /chats`` with it) while a file is stored in it: the
    file is refused, and its roll-back removes the collection its vectors made again if that is empty, not the
    one another replica is storing a file of the new chat in at that moment (Chroma cannot delete "if empty")."""
    services = make_services(
        tmp_path / "data", database_url=new_database_url("postgresql"), chroma_host=chroma.host,
        chroma_port=chroma.port, chroma_timeout_seconds=5,
    )
    other = replica_with(services)
    add, delete_chat = services.vectors.add, services.vectors.delete_chat

    with ThreadPoolExecutor(1) as pool:
        def other_stores_meanwhile(chat_id):  # the roll-back found the collection empty and is about to delete it
            monkeypatch.setattr(services.vectors, "delete_chat", delete_chat)
            storing["new"] = pool.submit(other.ingest, chat_id, "new.txt", b"Salamanders breathe through their skin.")
            wait_for(lambda: storing["new"].done() or waiting_for_a_lock(services), "the other replica")
            delete_chat(chat_id)

        def made_again_then_add(chat_id, chunks, embeddings):  # orders the replicas' steps
            monkeypatch.setattr(services.vectors, "add", add)
            deleted_elsewhere(services, chat_id)
            other.delete_chat(chat_id)
            services.chats.forget_deletion(chat_id)
            monkeypatch.setattr(services.vectors, "delete_chat", other_stores_meanwhile)
            add(chat_id, chunks, embeddings)

        storing = {}
        monkeypatch.setattr(services.vectors, "add", made_again_then_add)
        with pytest.raises(ChatWasDeleted):
            services.ingestion.ingest("remade", "notes.txt", b"Axolotls regrow their limbs completely.")
        stored = storing["new"].result(timeout=120)

    assert [d.document_id for d in services.documents.list("remade")] == [stored.document_id]
    assert stored_chunks(services, "remade") == (stored.chunk_count,) * 3
    services.database.dispose()
