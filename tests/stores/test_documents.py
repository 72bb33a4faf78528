"""The document registry against real databases: a SQLite file and a PostgreSQL server (tests/conftest.py)."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import exc, text

from backend.errors import ChatWasDeleted, Conflict
from backend.models import Chunk, Parent
from backend.stores.chats import ChatStore
from backend.stores.documents import INDEXING, READY, DocumentStore, new_record
from backend.stores.memory import MemoryStore
from tests.support.storing_process import left_behind_now, process_storing
from tests.support.waiting import wait_for

THREADS = 8


def record(document_id: str, chat_id: str = "chat1", sha256: str | None = None):
    return new_record(
        document_id=document_id, chat_id=chat_id, filename=f"{document_id}.pdf", sha256=sha256 or document_id * 2,
        file_type="pdf", size_bytes=10, page_count=2,
    )


def parents_of(document_id: str, n: int = 2) -> list[Parent]:
    return [Parent(f"{document_id}-p{i}", document_id, f"{document_id}.pdf", i + 1, f"text {i}") for i in range(n)]


def chunks_of(document_id: str, n: int) -> list[Chunk]:
    return [Chunk(f"{document_id}-c{i}", f"{document_id}-p0", document_id, f"{document_id}.pdf", 1, f"chunk {i}")
            for i in range(n)]


def test_a_document_is_listed_and_its_parents_visible_only_once_ready(database):
    store = DocumentStore(database)
    store.begin(record("d1"))
    assert store.list("chat1") == []
    assert store.get("chat1", "d1").status == INDEXING
    assert [r.document_id for r in store.incomplete()] == ["d1"]

    store.mark_ready(record("d1"), parents_of("d1"), chunks_of("d1", 7))
    assert [(r.document_id, r.status, r.chunk_count) for r in store.list("chat1")] == [("d1", READY, 7)]
    assert store.incomplete() == []
    found = store.parents(["d1-p1", "d1-p0", "missing"])
    assert set(found) == {"d1-p0", "d1-p1"} and found["d1-p1"].page == 2 and found["d1-p1"].filename == "d1.pdf"
    assert store.totals().documents == 1 and store.totals().chunks == 7


def test_remove_deletes_the_parents_too_and_chats_are_separate(database):
    store = DocumentStore(database)
    for doc, chat in (("a", "chat1"), ("b", "chat2")):
        store.begin(record(doc, chat))
        store.mark_ready(record(doc, chat), parents_of(doc), chunks_of(doc, 1))
    assert store.get("chat1", "b") is None  # another chat's document is not reachable by id
    store.remove("a")
    assert store.parents(["a-p0"]) == {}
    assert [p.parent_id for p in store.chat_parents("chat2")] == ["b-p0", "b-p1"]
    assert store.chat_parents("chat1") == []


def test_duplicates_are_found_by_content_hash_within_a_chat_only(database):
    store = DocumentStore(database)
    store.begin(record("a", "chat1", sha256="same"))
    assert store.find_by_sha256("chat1", "same").document_id == "a"
    assert store.find_by_sha256("chat2", "same") is None


def test_beginning_a_document_whose_content_the_chat_holds_returns_that_one_and_writes_nothing(database):
    store = DocumentStore(database)
    assert store.begin(record("a", "chat1", sha256="same")) is None
    assert store.begin(record("b", "chat1", sha256="same")).document_id == "a"
    assert store.get("chat1", "b") is None and store.get("chat1", "a") is not None


def test_state_survives_reopening_and_many_threads_can_read(database, open_engine):
    first = DocumentStore(database)
    first.begin(record("d1"))
    first.mark_ready(record("d1"), parents_of("d1", 300), chunks_of("d1", 300))
    reopened = DocumentStore(open_engine())
    ids = [f"d1-p{i}" for i in range(300)]
    results = []
    threads = [threading.Thread(target=lambda: results.append(len(reopened.parents(ids)))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [300] * 4


def test_parents_keep_whether_their_text_came_from_ocr(database):
    store = DocumentStore(database)
    store.begin(record("scan"))
    store.mark_ready(record("scan"), [Parent("scan-p0", "scan", "scan.pdf", 1, "typed"),
                                      Parent("scan-p1", "scan", "scan.pdf", 2, "read from the image", ocr=True)],
                     chunks_of("scan", 2))

    assert [p.ocr for p in store.chat_parents("chat1")] == [False, True]
    assert store.parents(["scan-p1"])["scan-p1"].ocr is True


def test_a_document_whose_parents_cannot_be_written_stays_indexing_with_none(database):
    """The parents and the 'ready' status are one transaction: a failure part-way leaves neither."""
    store = DocumentStore(database)
    store.begin(record("d1"))
    store.mark_ready(record("d1"), parents_of("d1"), chunks_of("d1", 2))
    store.begin(record("d2"))
    clashing = [*parents_of("d2"), parents_of("d1")[0]]  # the last parent's id is taken: the insert fails

    with pytest.raises(exc.IntegrityError):
        store.mark_ready(record("d2"), clashing, chunks_of("d2", 3))

    assert store.get("chat1", "d2").status == INDEXING
    assert [r.document_id for r in store.incomplete()] == ["d2"]
    assert store.parents(["d2-p0", "d2-p1"]) == {}
    assert [p.parent_id for p in store.chat_parents("chat1")] == ["d1-p0", "d1-p1"]


def test_removing_a_chat_removes_all_its_documents_and_counts_the_ready_ones(database):
    store = DocumentStore(database)
    for doc, chat in (("a", "chat1"), ("b", "chat1"), ("c", "chat2")):
        store.begin(record(doc, chat))
        store.mark_ready(record(doc, chat), parents_of(doc), chunks_of(doc, 1))
    store.begin(record("half", "chat1"))

    assert store.remove_chat("chat1") == 2
    assert store.get("chat1", "half") is None and store.list("chat1") == [] and store.parents(["a-p0"]) == {}
    assert [d.document_id for d in store.list("chat2")] == ["c"]
    assert store.remove_chat("chat1") == 0


def test_a_document_still_indexing_that_nobody_is_storing_is_left_behind_until_it_is_ready(database):
    store = DocumentStore(database)
    store.begin(record("d1"))

    with store.left_behind(store.get("chat1", "d1")) as left:
        assert left
    with store.storing(["d1"]):
        store.mark_ready(record("d1"), parents_of("d1"), chunks_of("d1", 2))
    with store.left_behind(store.get("chat1", "d1")) as left:
        assert not left


def test_a_document_another_process_is_storing_is_left_behind_only_once_that_process_died(database):
    """PostgreSQL: replicas share the database, and the storing process's advisory lock tells whether it lives."""
    if database.dialect.name != "postgresql":
        pytest.skip("one process uses a SQLite database: whatever is still indexing when it starts was left")
    store = DocumentStore(database)
    url = database.url.render_as_string(hide_password=False)

    with process_storing(url, "chat1", "d1") as replica:
        being_stored = store.get("chat1", "d1")
        with store.left_behind(being_stored) as left:
            assert not left
        replica.kill()
        replica.wait()
        wait_for(lambda: left_behind_now(store, being_stored), "the server to see the storing process gone")


def test_a_document_stored_while_the_database_server_restarts_ends_stored_without_an_error(database):
    """PostgreSQL restarted (or the connection cut) while the document's vectors were written: the server let go of
    the storer's lock with its connection, so there is none to release at the end, and the document marked ready
    once the server is back is stored, not a failed upload (or a failed job) whose document is listed all the
    same."""
    if database.dialect.name != "postgresql":
        pytest.skip("SQLite holds no lock on a connection of its own")
    store = DocumentStore(database)
    store.begin(record("d1"))

    with store.storing(["d1"]):
        with database.begin() as admin:  # every other connection cut, the one holding the lock among them
            admin.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                               "WHERE datname = current_database() AND pid <> pg_backend_pid()"))
        store.mark_ready(record("d1"), parents_of("d1"), chunks_of("d1", 2))

    assert store.get("chat1", "d1").status == READY
    with store.left_behind(store.get("chat1", "d1")) as left:
        assert not left


def test_a_document_begun_in_a_deleted_chat_is_refused_and_nothing_is_written(database):
    ChatStore(database).create("Tax returns", chat_id="chat1")
    MemoryStore(database).clear_chat("chat1")  # what deleting the chat does first: notes its deletion
    store = DocumentStore(database)

    with pytest.raises(ChatWasDeleted, match="“Tax returns” was deleted while “d1.pdf” was being stored") as refused:
        store.begin(record("d1"))

    assert refused.value.details == {"chat_id": "chat1"}
    assert store.get("chat1", "d1") is None and store.incomplete() == []
    store.begin(record("d2", "chat2"))  # another chat is untouched


def test_a_document_whose_chat_is_deleted_before_it_is_ready_is_refused_and_stays_unlisted(database):
    """The chat is deleted (on another replica, say) between the document's two writes."""
    store = DocumentStore(database)
    store.begin(record("d1"))
    MemoryStore(database).clear_chat("chat1")

    with pytest.raises(ChatWasDeleted, match="Chat chat1 was deleted while “d1.pdf” was being stored"):
        store.mark_ready(record("d1"), parents_of("d1"), chunks_of("d1", 2))

    assert store.get("chat1", "d1").status == INDEXING  # for its storer to roll back
    assert store.list("chat1") == [] and store.chunks("chat1") == [] and store.parents(["d1-p0"]) == {}


def test_a_document_whose_chat_was_deleted_and_made_again_meanwhile_is_refused(database):
    """Deleted, then made again under the same id (``POST /chats {"id": ...}`` forgets the deletion) while the file
    was embedded: its row went with the deletion, and it does not become a document of the new chat."""
    store = DocumentStore(database)
    deletions = store.chat_deletions("chat1")
    store.begin(record("d1"))
    MemoryStore(database).clear_chat("chat1")
    store.remove_chat("chat1")
    ChatStore(database).forget_deletion("chat1")
    ChatStore(database).create("A new chat", chat_id="chat1")

    with pytest.raises(ChatWasDeleted):
        store.mark_ready(record("d1"), parents_of("d1"), chunks_of("d1", 2), chat_deletions=deletions)

    assert store.get("chat1", "d1") is None and store.chunks("chat1") == [] and store.parents(["d1-p0"]) == {}


def test_a_document_discarded_before_it_is_ready_is_refused_as_interrupted(database):
    """Another replica's recovery sweep discarded it (a database restart dropped its storer's lock): the storer is
    told so, not that the chat was deleted, and nothing is written."""
    store = DocumentStore(database)
    store.begin(record("d1"))
    assert store.discard("d1")

    with pytest.raises(Conflict, match="interrupted by a database restart and rolled back; upload it again"):
        store.mark_ready(record("d1"), parents_of("d1"), chunks_of("d1", 2))

    assert store.list("chat1") == [] and store.chunks("chat1") == [] and store.parents(["d1-p0"]) == {}


def test_a_document_removed_by_another_replicas_sweep_before_it_is_ready_is_refused_as_interrupted(database):
    """The sweep discarded it and rolled it back whole, its row included, before the storer reached 'ready': the
    storer is told that storing was interrupted (409), not that its chat was deleted, which it was not since the
    storing began (it was deleted and made again once before)."""
    store = DocumentStore(database)
    MemoryStore(database).clear_chat("chat1")
    store.remove_chat("chat1")
    ChatStore(database).forget_deletion("chat1")
    deletions = store.chat_deletions("chat1")
    store.begin(record("d1"))
    assert store.discard("d1")
    store.remove("d1")

    with pytest.raises(Conflict, match="interrupted by a database restart and rolled back; upload it again"):
        store.mark_ready(record("d1"), parents_of("d1"), chunks_of("d1", 2), chat_deletions=deletions)

    assert store.get("chat1", "d1") is None and store.chunks("chat1") == [] and store.parents(["d1-p0"]) == {}


def test_a_chats_deletions_are_counted_whatever_it_held(database):
    store = DocumentStore(database)
    store.begin(record("d1"))
    store.mark_ready(record("d1"), [], [])
    assert store.chat_deletions("chat1") == 0
    store.remove_chat("chat1")
    store.remove_chat("chat1")  # a deletion retried after a failure, or an empty chat's

    assert store.chat_deletions("chat1") == 2 and store.chat_deletions("chat2") == 0


def test_documents_stored_while_their_chat_is_deleted_are_removed_with_it_or_refused(database):
    """Storers racing the deletion (its note, then the removal of the chat's documents): whichever goes first,
    no document is left in the deleted chat."""
    store = DocumentStore(database)
    start = threading.Barrier(THREADS + 1)

    def store_one(n: int) -> None:
        start.wait()
        document = record(f"d{n}")
        try:
            store.begin(document)
            store.mark_ready(document, parents_of(document.document_id), chunks_of(document.document_id, 1))
        except ChatWasDeleted:
            store.remove(document.document_id)  # the storer's roll-back

    with ThreadPoolExecutor(THREADS) as pool:
        stored = [pool.submit(store_one, n) for n in range(THREADS)]
        start.wait()
        MemoryStore(database).clear_chat("chat1")
        store.remove_chat("chat1")
        for future in stored:
            future.result()

    assert store.get("chat1", "d0") is None and store.list("chat1") == [] and store.incomplete() == []
    assert store.chunks("chat1") == []
