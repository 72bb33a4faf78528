"""The chats a person has named (SQLite): id, title and when each was created and last changed.

A chat needs no record to exist (uploading or asking in it is enough, ADR-007); a record is what gives it a
title. So ``rename`` is an upsert: naming a chat that so far exists only through its documents creates its record.
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
    updated_at REAL NOT NULL
);
"""


@dataclass(frozen=True, slots=True)
class ChatRecord:
    id: str
    title: str
    created_at: float
    updated_at: float


class ChatStore:
    def __init__(self, path: Path) -> None:
        self._db = ThreadLocalSQLite(path, _SCHEMA, row_factory=sqlite3.Row)

    def create(self, title: str) -> ChatRecord:
        now = time.time()
        record = ChatRecord(id=uuid.uuid4().hex, title=title, created_at=now, updated_at=now)
        with self._db.transaction() as db:
            db.execute("INSERT INTO chats VALUES (?,?,?,?)", (record.id, title, now, now))
        return record

    def get(self, chat_id: str) -> ChatRecord | None:
        row = self._db.connection().execute("SELECT * FROM chats WHERE id=?", (_chat(chat_id),)).fetchone()
        return ChatRecord(**row) if row else None

    def list(self) -> list[ChatRecord]:
        """Most recently updated first."""
        rows = self._db.connection().execute("SELECT * FROM chats ORDER BY updated_at DESC, rowid DESC").fetchall()
        return [ChatRecord(**row) for row in rows]

    def rename(self, chat_id: str, title: str, *, created_at: float | None = None) -> ChatRecord:
        """``created_at`` is used only when the record is new (when the chat began before it had a record)."""
        now = time.time()
        with self._db.transaction() as db:
            row = db.execute(
                "INSERT INTO chats VALUES (?,?,?,?) ON CONFLICT(id) DO UPDATE SET title=excluded.title, "
                "updated_at=excluded.updated_at RETURNING *",
                (_chat(chat_id), title, now if created_at is None else created_at, now),
            ).fetchone()
        return ChatRecord(**row)

    def remove(self, chat_id: str) -> bool:
        with self._db.transaction() as db:
            return db.execute("DELETE FROM chats WHERE id=?", (_chat(chat_id),)).rowcount > 0


def _chat(chat_id: str) -> str:
    return validate_id(chat_id, field="chat_id")
