"""The chats a person has named (``schema.chats``): id, title and when each was created and last changed.

A chat needs no record to exist (uploading or asking in it is enough, ADR-007); a record is what gives it a
title. So ``rename`` is an upsert: naming a chat that so far exists only through its documents creates its record.

With API keys on (AXIOM_AUTH=api-key) a record also says whose chat it is (``owner``, a user id; NULL for chats
made with auth off): every chat a user makes or first uses gets one (``claim``), so each has an owner.

Deleting a chat leaves a note that it was deleted (``schema.deleted_chats``, with its record's title and owner):
what tells a deleted chat, which an upload or a question must not make again, from an id never used. The note is
written first, in the transaction that clears the chat's conversation (``MemoryStore.clear_chat``), before its
documents and its record are removed; what is saved in the chat after that, an answer or a file being stored, is
refused (``noted_deletion``) rather than left behind in a chat that is gone.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, Row, delete, select, update

from backend.errors import ChatWasDeleted
from backend.ids import validate_id
from backend.stores.dialect import upsert_insert
from backend.stores.schema import chats, deleted_chats


@dataclass(frozen=True, slots=True)
class DeletedChatRecord:
    id: str
    title: str | None  # None: it had no record (it existed only through its documents or conversation)
    owner: str | None
    deleted_at: float


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

    def create(self, title: str, *, owner: str | None = None, chat_id: str | None = None) -> ChatRecord | None:
        """Under a new random id, or ``chat_id``: None if a record of that id exists (nothing is written)."""
        now = time.time()
        record = ChatRecord(
            id=uuid.uuid4().hex if chat_id is None else _chat(chat_id), title=title, created_at=now, updated_at=now,
            owner=owner,
        )
        with self._engine.begin() as db:
            made = db.execute(
                upsert_insert(db, chats).values(id=record.id, title=title, created_at=now, updated_at=now, owner=owner)
                .on_conflict_do_nothing(index_elements=[chats.c.id]).returning(chats.c.id)
            ).one_or_none()
        return record if made is not None else None

    def claim(self, chat_id: str, owner: str, *, title: str) -> tuple[ChatRecord, bool]:
        """The chat's record, made for ``owner`` if it had none, or given to ``owner`` if it had no owner; a
        record with an owner keeps it (another user's, when two claim the same new id at once: the caller
        compares). And whether this claim made the record (see ``drop_claim``)."""
        now = time.time()
        with self._engine.begin() as db:
            made = db.execute(
                upsert_insert(db, chats).values(
                    id=_chat(chat_id), title=title, created_at=now, updated_at=now, owner=owner
                ).on_conflict_do_nothing(index_elements=[chats.c.id]).returning(chats.c.id)
            ).one_or_none() is not None  # RETURNING: psycopg's rowcount is -1 for an INSERT … ON CONFLICT
            if not made:
                db.execute(update(chats).where(chats.c.id == chat_id, chats.c.owner.is_(None)).values(owner=owner))
            row = db.execute(select(*_RECORD).where(chats.c.id == chat_id)).one()
        return _record(row), made

    def drop_claim(self, chat_id: str, owner: str) -> None:
        """Deletes the record a claim made for a request that then stored nothing, unless it changed since
        (renamed, or used by another request: ``keep_claim``), in one statement. Leaves no note of a deletion:
        the chat was never used, so its id stays free, a retry makes it."""
        with self._engine.begin() as db:
            db.execute(delete(chats).where(
                chats.c.id == _chat(chat_id), chats.c.owner == owner, chats.c.updated_at == chats.c.created_at
            ))

    def keep_claim(self, chat_id: str, owner: str) -> bool:
        """For another request using a chat whose record is as its claim made it: marks the record changed
        (``updated_at``), so the claim's undo (``drop_claim``) leaves it. False if the record is gone: it was
        dropped meanwhile."""
        with self._engine.begin() as db:
            return db.execute(
                update(chats).where(chats.c.id == _chat(chat_id), chats.c.owner == owner)
                .values(updated_at=time.time())
            ).rowcount > 0

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
        """Deletes the record, if any: the last step of deleting a chat, whose deletion was noted with its
        conversation's removal (``MemoryStore.clear_chat``)."""
        with self._engine.begin() as db:
            return db.execute(delete(chats).where(chats.c.id == _chat(chat_id))).rowcount > 0

    def deleted(self, chat_id: str) -> DeletedChatRecord | None:
        """The note that the chat was deleted, if it ever was (and the note was not forgotten since)."""
        with self._engine.connect() as db:
            return noted_deletion(db, _chat(chat_id))

    def forget_deletion(self, chat_id: str) -> None:
        """For a deleted chat that is in use again (made on purpose): an id like any other from now on."""
        with self._engine.begin() as db:
            db.execute(delete(deleted_chats).where(deleted_chats.c.chat_id == _chat(chat_id)))


def deleted_chat_name(chat_id: str, title: str | None) -> str:
    """How a message names a deleted chat: by the title its record had, else by its id."""
    return f"“{title}”" if title is not None else f"Chat {chat_id}"


def chat_deleted_while(chat_id: str, title: str | None, *, doing: str, lost: str) -> ChatWasDeleted:
    """The error of something refused because its chat was deleted while ``doing``: ``lost`` says what."""
    return ChatWasDeleted(
        f"{deleted_chat_name(chat_id, title)} was deleted while {doing}, perhaps in another window: {lost}.",
        chat_id=chat_id,
    )


def answer_refused_in_deleted_chat(chat_id: str, title: str | None) -> ChatWasDeleted:
    """The error of an answer whose chat was deleted while it was written (refused when saved, or stopped)."""
    return chat_deleted_while(
        chat_id, title, doing="this answer was being written", lost="the question and its answer were not saved"
    )


def noted_deletion(db: Connection, chat_id: str) -> DeletedChatRecord | None:
    """The note of the chat's deletion as ``db``'s transaction sees it. To refuse a write into a deleted chat,
    read it after the transaction's first write, holding the chat's turn (``LockSpace.CHAT``, which the note's
    writer holds): SQLite's write lock is held from the first write to the commit, and the turn is on PostgreSQL,
    so no deletion is noted between the check and the commit."""
    row = db.execute(
        select(deleted_chats.c.chat_id.label("id"), deleted_chats.c.title, deleted_chats.c.owner,
               deleted_chats.c.deleted_at)
        .where(deleted_chats.c.chat_id == chat_id)
    ).one_or_none()
    return DeletedChatRecord(**row._mapping) if row else None


def note_deletion(db: Connection, chat_id: str) -> None:
    """Notes in ``db``'s transaction that the chat is deleted, with the title and owner of its record (if any)."""
    record = db.execute(select(chats.c.title, chats.c.owner).where(chats.c.id == chat_id)).one_or_none()
    title, owner = record if record is not None else (None, None)
    note = upsert_insert(db, deleted_chats).values(chat_id=chat_id, title=title, owner=owner, deleted_at=time.time())
    db.execute(note.on_conflict_do_update(
        index_elements=[deleted_chats.c.chat_id],
        set_={name: note.excluded[name] for name in ("title", "owner", "deleted_at")},
    ))


def _record(row: Row) -> ChatRecord:
    return ChatRecord(**row._mapping)


def _chat(chat_id: str) -> str:
    return validate_id(chat_id, field="chat_id")
