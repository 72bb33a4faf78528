"""The registry of each chat's documents and their parent texts (SQLite).

A document row is written with status 'indexing' before any chunk reaches Chroma or BM25 and becomes 'ready'
only when both hold all of it; its parents are written in that same transaction. So a row still 'indexing' after
a crash marks exactly the documents to roll back, and parents (what retrieval returns) exist only for complete
documents.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from backend.models import Parent
from backend.stores.sqlite import ThreadLocalSQLite

INDEXING = "indexing"
READY = "ready"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    document_id TEXT PRIMARY KEY,
    chat_id     TEXT NOT NULL,
    filename    TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    file_type   TEXT NOT NULL,
    size_bytes  INTEGER NOT NULL,
    page_count  INTEGER NOT NULL DEFAULT 0,
    chunk_count INTEGER NOT NULL DEFAULT 0,
    status      TEXT NOT NULL,
    created_at  REAL NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS documents_chat_sha ON documents(chat_id, sha256);
CREATE TABLE IF NOT EXISTS parents (
    parent_id   TEXT PRIMARY KEY,
    document_id TEXT NOT NULL REFERENCES documents(document_id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    page        INTEGER NOT NULL,
    text        TEXT NOT NULL,
    ocr         INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS parents_document ON parents(document_id, seq);
"""


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    document_id: str
    chat_id: str
    filename: str
    sha256: str
    file_type: str
    size_bytes: int
    page_count: int
    chunk_count: int
    status: str
    created_at: float


@dataclass(frozen=True, slots=True)
class ChatDocuments:
    """What a chat's ready documents add up to."""

    count: int
    first_created_at: float


@dataclass(frozen=True, slots=True)
class Totals:
    documents: int
    chunks: int


class DocumentStore:
    def __init__(self, path: Path) -> None:
        self._db = ThreadLocalSQLite(path, _SCHEMA, row_factory=sqlite3.Row)
        self._add_ocr_column_if_missing()

    def _add_ocr_column_if_missing(self) -> None:
        """A database written before OCR existed has parents without the column (all read from a text layer)."""
        with self._db.transaction() as db:
            if "ocr" not in {row["name"] for row in db.execute("PRAGMA table_info(parents)")}:
                db.execute("ALTER TABLE parents ADD COLUMN ocr INTEGER NOT NULL DEFAULT 0")

    def begin(self, record: DocumentRecord) -> None:
        with self._db.transaction() as db:
            db.execute(
                "INSERT INTO documents VALUES (?,?,?,?,?,?,?,?,?,?)",
                (record.document_id, record.chat_id, record.filename, record.sha256, record.file_type,
                 record.size_bytes, record.page_count, record.chunk_count, INDEXING, record.created_at),
            )

    def mark_ready(self, document_id: str, parents: Sequence[Parent], chunk_count: int) -> None:
        with self._db.transaction() as db:
            db.executemany(
                "INSERT INTO parents VALUES (?,?,?,?,?,?)",
                [(p.parent_id, document_id, seq, p.page, p.text, p.ocr) for seq, p in enumerate(parents)],
            )
            db.execute(
                "UPDATE documents SET status=?, chunk_count=? WHERE document_id=?", (READY, chunk_count, document_id)
            )

    def remove(self, document_id: str) -> None:
        with self._db.transaction() as db:
            db.execute("DELETE FROM documents WHERE document_id=?", (document_id,))

    def remove_chat(self, chat_id: str) -> int:
        """Removes every document of the chat, whatever its status; returns how many were ready."""
        with self._db.transaction() as db:
            (ready,) = db.execute(
                "SELECT COUNT(*) FROM documents WHERE chat_id=? AND status=?", (chat_id, READY)
            ).fetchone()
            db.execute("DELETE FROM documents WHERE chat_id=?", (chat_id,))
        return ready

    def get(self, chat_id: str, document_id: str) -> DocumentRecord | None:
        row = self._db.connection().execute(
            "SELECT * FROM documents WHERE chat_id=? AND document_id=?", (chat_id, document_id)
        ).fetchone()
        return DocumentRecord(**row) if row else None

    def find_by_sha256(self, chat_id: str, sha256: str) -> DocumentRecord | None:
        row = self._db.connection().execute(
            "SELECT * FROM documents WHERE chat_id=? AND sha256=?", (chat_id, sha256)
        ).fetchone()
        return DocumentRecord(**row) if row else None

    def list(self, chat_id: str) -> list[DocumentRecord]:
        rows = self._db.connection().execute(
            "SELECT * FROM documents WHERE chat_id=? AND status=? ORDER BY created_at", (chat_id, READY)
        ).fetchall()
        return [DocumentRecord(**row) for row in rows]

    def chats(self) -> dict[str, ChatDocuments]:
        """Every chat that has a ready document, with how many it has and when the first was added."""
        rows = self._db.connection().execute(
            "SELECT chat_id, COUNT(*) AS count, MIN(created_at) AS first_created_at FROM documents WHERE status=?"
            " GROUP BY chat_id",
            (READY,),
        ).fetchall()
        return {row["chat_id"]: ChatDocuments(row["count"], row["first_created_at"]) for row in rows}

    def totals(self) -> Totals:
        row = self._db.connection().execute(
            "SELECT COUNT(*), COALESCE(SUM(chunk_count), 0) FROM documents WHERE status=?", (READY,)
        ).fetchone()
        return Totals(documents=row[0], chunks=row[1])

    def incomplete(self) -> list[DocumentRecord]:
        rows = self._db.connection().execute("SELECT * FROM documents WHERE status=?", (INDEXING,)).fetchall()
        return [DocumentRecord(**row) for row in rows]

    def parents(self, parent_ids: Iterable[str]) -> dict[str, Parent]:
        """Parents by id; only those of ready documents exist, so nothing half-indexed is returned."""
        ids = list(dict.fromkeys(parent_ids))
        found: dict[str, Parent] = {}
        db = self._db.connection()
        for start in range(0, len(ids), 500):  # stay below SQLite's bound-parameter limit
            batch = ids[start : start + 500]
            rows = db.execute(
                "SELECT p.parent_id, p.document_id, d.filename, p.page, p.text, p.ocr FROM parents p "
                f"JOIN documents d USING(document_id) WHERE p.parent_id IN ({','.join('?' * len(batch))})",
                batch,
            ).fetchall()
            found.update({row["parent_id"]: _parent(row) for row in rows})
        return found

    def chat_parents(self, chat_id: str) -> list[Parent]:
        """Every parent of a chat's ready documents, in upload then page order (for summaries)."""
        rows = self._db.connection().execute(
            "SELECT p.parent_id, p.document_id, d.filename, p.page, p.text, p.ocr FROM parents p "
            "JOIN documents d USING(document_id) WHERE d.chat_id=? AND d.status=? ORDER BY d.created_at, p.seq",
            (chat_id, READY),
        ).fetchall()
        return [_parent(row) for row in rows]


def _parent(row: sqlite3.Row) -> Parent:
    return Parent(**{**row, "ocr": bool(row["ocr"])})


def new_record(
    *, document_id: str, chat_id: str, filename: str, sha256: str, file_type: str, size_bytes: int, page_count: int
) -> DocumentRecord:
    return DocumentRecord(
        document_id=document_id, chat_id=chat_id, filename=filename, sha256=sha256, file_type=file_type,
        size_bytes=size_bytes, page_count=page_count, chunk_count=0, status=INDEXING, created_at=time.time(),
    )
