"""The chats a person has named (``schema.chats``): id, title and when each was created and last changed.

A chat needs no record to exist (uploading or asking in it is enough, ADR-007); a record is what gives it a
title. So ``rename`` is an upsert: naming a chat that so far exists only through its documents creates its record.

With API keys on (AXIOM_AUTH=api-key) a record also says whose chat it is (``owner``, a user id; NULL for chats
made with auth off): every chat a user makes or first uses gets one (``claim``), so each has an owner.
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
    owner: str | None = None


_RECORD = (chats.c.id, chats.c.title, chats.c.created_at, chats.c.updated_at, chats.c.owner)


class ChatStore:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def create(self, title: str, *, owner: str | None = None) -> ChatRecord:
        now = time.time()
        record = ChatRecord(id=uuid.uuid4().hex, title=title, created_at=now, updated_at=now, owner=owner)
        with self._engine.begin() as db:
            db.execute(chats.insert().values(id=record.id, title=title, created_at=now, updated_at=now, owner=owner))
        return record

    def claim(self, chat_id: str, owner: str, *, title: str) -> ChatRecord:
        """The chat's record, made for ``owner`` if it had none, or given to ``owner`` if it had no owner; a
        record with an owner keeps it (another user's, when two claim the same new id at once: the caller
        compares)."""
        now = time.time()
        with self._engine.begin() as db:
            insert = upsert_insert(db, chats).values(
                id=_chat(chat_id), title=title, created_at=now, updated_at=now, owner=owner
            )
            row = db.execute(insert.on_conflict_do_update(
                index_elements=[chats.c.id], set_={"owner": insert.excluded.owner}, where=chats.c.owner.is_(None)
            ).returning(*_RECORD)).one_or_none()
            if row is None:  # the record has an owner already, which it keeps
                row = db.execute(select(*_RECORD).where(chats.c.id == chat_id)).one()
        return _record(row)

    def get(self, chat_id: str) -> ChatRecord | None:
        with self._engine.connect() as db:
            row = db.execute(select(*_RECORD).where(chats.c.id == _chat(chat_id))).one_or_none()
        return _record(row) if row else None

    def list(self, *, owner: str | None = None) -> list[ChatRecord]:
        """Most recently updated first; only ``owner``'s when given."""
        query = select(*_RECORD).order_by(chats.c.updated_at.desc(), chats.c.seq.desc())
        if owner is not None:
            query = query.where(chats.c.owner == owner)
        with self._engine.connect() as db:
            rows = db.execute(query).all()
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
