import sqlite3
import threading

from backend.models import Parent
from backend.stores.documents import INDEXING, READY, DocumentStore, new_record


def record(document_id: str, chat_id: str = "chat1", sha256: str | None = None):
    return new_record(
        document_id=document_id, chat_id=chat_id, filename=f"{document_id}.pdf", sha256=sha256 or document_id * 2,
        file_type="pdf", size_bytes=10, page_count=2,
    )


def parents_of(document_id: str, n: int = 2) -> list[Parent]:
    return [Parent(f"{document_id}-p{i}", document_id, f"{document_id}.pdf", i + 1, f"text {i}") for i in range(n)]


def test_a_document_is_listed_and_its_parents_visible_only_once_ready(tmp_path):
    store = DocumentStore(tmp_path / "documents.db")
    store.begin(record("d1"))
    assert store.list("chat1") == []
    assert store.get("chat1", "d1").status == INDEXING
    assert [r.document_id for r in store.incomplete()] == ["d1"]

    store.mark_ready("d1", parents_of("d1"), chunk_count=7)
    assert [(r.document_id, r.status, r.chunk_count) for r in store.list("chat1")] == [("d1", READY, 7)]
    assert store.incomplete() == []
    found = store.parents(["d1-p1", "d1-p0", "missing"])
    assert set(found) == {"d1-p0", "d1-p1"} and found["d1-p1"].page == 2 and found["d1-p1"].filename == "d1.pdf"
    assert store.totals().documents == 1 and store.totals().chunks == 7


def test_remove_deletes_the_parents_too_and_chats_are_separate(tmp_path):
    store = DocumentStore(tmp_path / "documents.db")
    for doc, chat in (("a", "chat1"), ("b", "chat2")):
        store.begin(record(doc, chat))
        store.mark_ready(doc, parents_of(doc), chunk_count=1)
    assert store.get("chat1", "b") is None  # another chat's document is not reachable by id
    store.remove("a")
    assert store.parents(["a-p0"]) == {}
    assert [p.parent_id for p in store.chat_parents("chat2")] == ["b-p0", "b-p1"]
    assert store.chat_parents("chat1") == []


def test_duplicates_are_found_by_content_hash_within_a_chat_only(tmp_path):
    store = DocumentStore(tmp_path / "documents.db")
    store.begin(record("a", "chat1", sha256="same"))
    assert store.find_by_sha256("chat1", "same").document_id == "a"
    assert store.find_by_sha256("chat2", "same") is None


def test_state_survives_reopening_and_many_threads_can_read(tmp_path):
    path = tmp_path / "documents.db"
    first = DocumentStore(path)
    first.begin(record("d1"))
    first.mark_ready("d1", parents_of("d1", 300), chunk_count=300)
    reopened = DocumentStore(path)
    ids = [f"d1-p{i}" for i in range(300)]
    results = []
    threads = [threading.Thread(target=lambda: results.append(len(reopened.parents(ids)))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [300] * 4


def test_a_parent_from_a_recognised_page_stays_marked(tmp_path):
    store = DocumentStore(tmp_path / "documents.db")
    store.begin(record("d1"))
    store.mark_ready("d1", [Parent("d1-p0", "d1", "d1.pdf", 1, "read"), Parent("d1-p1", "d1", "d1.pdf", 2, "seen", True)], 2)

    assert {p.parent_id: p.ocr for p in store.parents(["d1-p0", "d1-p1"]).values()} == {"d1-p0": False, "d1-p1": True}
    assert [p.ocr for p in store.chat_parents("chat1")] == [False, True]


def test_a_database_from_before_ocr_gains_the_column(tmp_path):
    path = tmp_path / "documents.db"
    with sqlite3.connect(path) as old:
        old.executescript(
            "CREATE TABLE documents (document_id TEXT PRIMARY KEY, chat_id TEXT NOT NULL, filename TEXT NOT NULL, "
            "sha256 TEXT NOT NULL, file_type TEXT NOT NULL, size_bytes INTEGER NOT NULL, page_count INTEGER NOT NULL "
            "DEFAULT 0, chunk_count INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL, created_at REAL NOT NULL);"
            "CREATE TABLE parents (parent_id TEXT PRIMARY KEY, document_id TEXT NOT NULL REFERENCES "
            "documents(document_id) ON DELETE CASCADE, seq INTEGER NOT NULL, page INTEGER NOT NULL, text TEXT NOT NULL);"
            "INSERT INTO documents VALUES ('d0', 'chat1', 'old.pdf', 'aa', 'pdf', 10, 1, 1, 'ready', 1.0);"
            "INSERT INTO parents VALUES ('d0-p0', 'd0', 0, 1, 'stored before OCR');"
        )
    old.close()

    store = DocumentStore(path)
    store.begin(record("d1"))
    store.mark_ready("d1", [Parent("d1-p0", "d1", "d1.pdf", 1, "recognised", ocr=True)], 1)

    found = store.parents(["d0-p0", "d1-p0"])
    assert (found["d0-p0"].text, found["d0-p0"].ocr) == ("stored before OCR", False)
    assert found["d1-p0"].ocr
    assert DocumentStore(path).parents(["d1-p0"])["d1-p0"].ocr  # reopening finds the column there
