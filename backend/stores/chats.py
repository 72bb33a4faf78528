"""The chats a person has named (``schema.chats``): id, title and when each was created and last changed.

A chat needs no record to exist (uploading or asking in it is enough, ADR-007); a record is what gives it a
title. So ``rename`` is an upsert: naming a chat that so far exists only through its documents creates its record.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from sqlalchemy import Engine, Row, delete, select

from backend.ids import validate_id
from backend.stores.dialect import upsert_insert
from backend.stores.schema import chats


@dataclass(frozen=True, slots=True)
class ChatRecord:
    id: str
    title: str
    created_at: float
    updated_at: float


_RECORD = (chats.c.id, chats.c.title, chats.c.created_at, chats.c.updated_at)


class ChatStore:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def create(self, title: str) -> ChatRecord:
        now = time.time()
        record = ChatRecord(id=uuid.uuid4().hex, title=title, created_at=now, updated_at=now)
        with self._engine.begin() as db:
            db.execute(chats.insert().values(id=record.id, title=title, created_at=now, updated_at=now))
        return record

    def get(self, chat_id: str) -> ChatRecord | None:
        with self._engine.connect() as db:
            row = db.execute(select(*_RECORD).where(chats.c.id == _chat(chat_id))).one_or_none()
        return _record(row) if row else None

    def list(self) -> list[ChatRecord]:
        """Most recently updated first."""
        with self._engine.connect() as db:
            rows = db.execute(select(*_RECORD).order_by(chats.c.updated_at.desc(), chats.c.seq.desc())).all()
        return [_record(row) for row in rows]

    def rename(self, chat_id: str, title: str, *, created_at: float | None = None) -> ChatRecord:
        """``created_at`` is used only when the record is new (when the chat began before it had a record)."""
        now = time.time()
        with self._engine.begin() as db:
            insert = upsert_insert(db, chats).values(
                id=_chat(chat_id), title=title, updated_at=now,
                created_at=now if created_at is None else created_at,
            )
            row = db.execute(
                insert.on_conflict_do_update(
                    index_elements=[chats.c.id],
                    set_={"title": insert.excluded.title, "updated_at": insert.excluded.updated_at},
                ).returning(*_RECORD)
            ).one()
        return _record(row)

    def remove(self, chat_id: str) -> bool:
        with self._engine.begin() as db:
            return db.execute(delete(chats).where(chats.c.id == _chat(chat_id))).rowcount > 0


def _record(row: Row) -> ChatRecord:
    return ChatRecord(**row._mapping)


def _chat(chat_id: str) -> str:
    return validate_id(chat_id, field="chat_id")
