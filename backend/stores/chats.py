"""The chats a person has named (SQLite): id, title and when each was created and last changed.

A chat needs no record to exist (uploading or asking in it is enough, ADR-007); a record is what gives it a
title. So ``rename`` is an upsert: naming a chat that so far exists only through its documents creates its record.

With API keys on (AXIOM_AUTH=api-key) a record also says whose chat it is (``owner``, a user id; NULL for chats
made with auth off): every chat a user makes or first uses gets one (``claim``), so each has an owner.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from backend.ids import validate_id
from backend.stores.sqlite import ThreadLocalSQLite

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chats (
    id         TEXT PRIMARY KEY,
    title      TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    owner      TEXT NULL
);
"""
_COLUMNS = "id, title, created_at, updated_at, owner"


@dataclass(frozen=True, slots=True)
class ChatRecord:
    id: str
    title: str
    created_at: float
    updated_at: float
    owner: str | None = None


class ChatStore:
    def __init__(self, path: Path) -> None:
        self._db = ThreadLocalSQLite(path, _SCHEMA, row_factory=sqlite3.Row)
        with self._db.transaction() as db:  # a file from before owners: the column is added, NULL for every chat
            if "owner" not in {row["name"] for row in db.execute("PRAGMA table_info(chats)")}:
                db.execute("ALTER TABLE chats ADD COLUMN owner TEXT NULL")

    def create(self, title: str, *, owner: str | None = None) -> ChatRecord:
        now = time.time()
        record = ChatRecord(id=uuid.uuid4().hex, title=title, created_at=now, updated_at=now, owner=owner)
        with self._db.transaction() as db:
            db.execute(f"INSERT INTO chats ({_COLUMNS}) VALUES (?,?,?,?,?)", (record.id, title, now, now, owner))
        return record

    def claim(self, chat_id: str, owner: str, *, title: str) -> ChatRecord:
        """The chat's record, made for ``owner`` if it had none, or given to ``owner`` if it had no owner; a
        record with an owner keeps it (another user's, when two claim the same new id at once: the caller
        compares)."""
        now = time.time()
        with self._db.transaction() as db:
            db.execute(
                f"INSERT INTO chats ({_COLUMNS}) VALUES (?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET owner=excluded.owner"
                " WHERE chats.owner IS NULL",
                (_chat(chat_id), title, now, now, owner),
            )
            row = db.execute(f"SELECT {_COLUMNS} FROM chats WHERE id=?", (chat_id,)).fetchone()
        return ChatRecord(**row)

    def get(self, chat_id: str) -> ChatRecord | None:
        row = self._db.connection().execute(f"SELECT {_COLUMNS} FROM chats WHERE id=?", (_chat(chat_id),)).fetchone()
        return ChatRecord(**row) if row else None

    def list(self, *, owner: str | None = None) -> list[ChatRecord]:
        """Most recently updated first; only ``owner``'s when given."""
        mine = "WHERE owner=?" if owner is not None else ""
        rows = self._db.connection().execute(
            f"SELECT {_COLUMNS} FROM chats {mine} ORDER BY updated_at DESC, rowid DESC", (owner,) if mine else ()
        ).fetchall()
        return [ChatRecord(**row) for row in rows]

    def rename(self, chat_id: str, title: str, *, created_at: float | None = None) -> ChatRecord:
        """``created_at`` is used only when the record is new (when the chat began before it had a record)."""
        now = time.time()
        with self._db.transaction() as db:
            row = db.execute(
                "INSERT INTO chats (id, title, created_at, updated_at) VALUES (?,?,?,?) ON CONFLICT(id) DO UPDATE "
                f"SET title=excluded.title, updated_at=excluded.updated_at RETURNING {_COLUMNS}",
                (_chat(chat_id), title, now if created_at is None else created_at, now),
            ).fetchone()
        return ChatRecord(**row)

    def remove(self, chat_id: str) -> bool:
        with self._db.transaction() as db:
            return db.execute("DELETE FROM chats WHERE id=?", (_chat(chat_id),)).rowcount > 0


def _chat(chat_id: str) -> str:
    return validate_id(chat_id, field="chat_id")
