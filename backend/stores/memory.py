"""Conversation memory: each session's messages (seed §11), and the chat each session belongs to.

The user's message and the assistant's answer are separate writes, so a question survives a failed generation;
an answer is written in one call once it is complete, so a client that disconnects mid-stream leaves nothing
half-written. Messages are ordered by an autoincrement sequence, not their timestamp, so two messages written in
the same millisecond (or under a clock step backwards) keep the order they were written in. Writes to one
session take turns (``dialect.take_turn``), so an exchange's two rows are adjacent in it and a session's rows
become visible in their order.

A session belongs to one chat (``sessions``): the chat it was first used in, for good (only clearing the session
itself frees it). Databases written before that table existed keep working: their sessions have no row until their
first use binds them, and a chat's own session (the one with the chat's id, as the web UI keeps it) counts as the
chat's until then.

A chat can be deleted while an answer in it is being written. Deleting clears its conversation and notes the
deletion in one transaction (``clear_chat``), and an answer is saved naming its chat (``add_exchange``), in a
transaction that checks for that note after its first write: both hold the chat's turn (PostgreSQL; SQLite's
single writer does the same), so an answer is either saved before the chat's conversation is cleared, and cleared
with it, or refused with ChatWasDeleted, never left behind in a chat that is gone. Likewise an answer citing documents
(``add_exchange``'s ``cited``): removing a document holds its chat's turn too (``DocumentStore.remove``), so the
answer is saved while they are all still ready, or refused with CitedDocumentsRemoved.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, cast, get_args

from sqlalchemy import Connection, Engine, Row, String, delete, exists, func, literal, select, union

from backend.errors import ChatWasDeleted, ValidationFailed
from backend.ids import validate_id
from backend.llm.base import ChatMessage
from backend.stores.chats import answer_refused_in_deleted_chat, note_deletion, noted_deletion
from backend.stores.dialect import LockSpace, take_turn, upsert_insert
from backend.stores.documents import ready_documents
from backend.stores.schema import messages, sessions

Role = Literal["user", "assistant"]
ROLES: tuple[str, ...] = get_args(Role)

_COLUMNS = (
    messages.c.id, messages.c.session_id, messages.c.role, messages.c.content, messages.c.metadata,
    messages.c.timestamp,
)


class CitedDocumentsRemoved(Exception):
    """An answer not saved because documents it cites were removed from its chat while it was written."""

    def __init__(self, document_ids: set[str]) -> None:
        super().__init__(f"cited documents removed: {sorted(document_ids)}")
        self.document_ids = document_ids


@dataclass(frozen=True, slots=True)
class MemoryWindows:
    """How many recent messages each pipeline stage reads (seed §11, "Usage Throughout Pipeline")."""

    router: int = 3
    rewrite: int = 5
    generation: int = 5
    context: int = 4  # the context handlers look this far back for the last answer


@dataclass(frozen=True, slots=True)
class StoredMessage:
    id: str
    session_id: str
    role: Role
    content: str
    metadata: dict[str, Any]
    timestamp: str  # ISO-8601 UTC, e.g. "2024-01-15T10:30:00.123Z"

    def as_chat_message(self) -> ChatMessage:
        return {"role": self.role, "content": self.content}


class MemoryStore:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def add(
        self, session_id: str, role: Role, content: str, metadata: dict[str, Any] | None = None
    ) -> StoredMessage:
        message = _new_message(session_id, role, content, metadata)
        with self._engine.begin() as db:
            take_turn(db, LockSpace.SESSION, message.session_id)
            _insert(db, message)
        return message

    def add_exchange(
        self, session_id: str, question: str, answer: str, metadata: dict[str, Any] | None = None, *,
        chat_id: str | None = None, cited: Iterable[str] = (),
    ) -> tuple[StoredMessage, StoredMessage]:
        """The user's question and the assistant's answer (with its metadata), both or neither. The same question
        kept unanswered by the attempt just before (see keep_unanswered) is replaced, so a retry leaves one copy.
        With ``chat_id``, the chat asked in: raises ChatWasDeleted, writing nothing, if it was deleted since;
        then, with ``cited`` (the ids of the documents the answer cites, in that chat), CitedDocumentsRemoved if
        any is no longer ready (``cited`` without ``chat_id`` is a ValueError: the check needs the chat's
        turn)."""
        cited = set(cited)
        if cited and chat_id is None:
            raise ValueError("cited documents are checked in their chat: pass chat_id")
        question_message, answer_message = (
            _new_message(session_id, "user", question, None),
            _new_message(session_id, "assistant", answer, metadata),
        )
        with self._engine.begin() as db:
            _take_turns(db, question_message.session_id, chat_id)
            earlier = _unanswered_tail(db, question_message.session_id, question)
            _insert(db, question_message)
            _refuse_answer_in_deleted_chat(db, chat_id)
            _refuse_answer_citing_removed_documents(db, cited)
            if earlier is not None:
                db.execute(delete(messages).where(messages.c.id == earlier))
            _insert(db, answer_message)
        return question_message, answer_message

    def keep_unanswered(self, session_id: str, question: str, *, chat_id: str | None = None) -> None:
        """Saves a question whose answer failed, marked ``answered: false``, unless it is already the session's
        last message (a retry that failed again), or its chat ``chat_id`` was deleted since."""
        message = _new_message(session_id, "user", question, {"answered": False})
        with suppress(ChatWasDeleted), self._engine.begin() as db:
            _take_turns(db, message.session_id, chat_id)
            if _unanswered_tail(db, message.session_id, question) is None:
                _insert(db, message)
                _refuse_answer_in_deleted_chat(db, chat_id)

    def recent(self, session_id: str, limit: int) -> list[StoredMessage]:
        """The last ``limit`` messages of a session, oldest first."""
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        with self._engine.connect() as db:
            rows = db.execute(
                select(*_COLUMNS).where(messages.c.session_id == _session(session_id))
                .order_by(messages.c.seq.desc()).limit(limit)
            ).all()
        return [_message(row) for row in reversed(rows)]

    def history(self, session_id: str) -> list[StoredMessage]:
        with self._engine.connect() as db:
            rows = db.execute(
                select(*_COLUMNS).where(messages.c.session_id == _session(session_id))
                .order_by(messages.c.seq)
            ).all()
        return [_message(row) for row in rows]

    def last_written_at(self, session_ids: Iterable[str]) -> dict[str, float]:
        """When each session's newest message was written (Unix time); sessions without messages are left out."""
        ids = [_session(session_id) for session_id in session_ids]
        newest = (
            select(func.max(messages.c.seq)).where(messages.c.session_id.in_(ids))
            .group_by(messages.c.session_id)
        )
        with self._engine.connect() as db:
            rows = db.execute(
                select(messages.c.session_id, messages.c.timestamp).where(messages.c.seq.in_(newest))
            ).all()
        return {session_id: datetime.fromisoformat(timestamp).timestamp() for session_id, timestamp in rows}

    def exists(self, session_id: str) -> bool:
        with self._engine.connect() as db:
            return db.execute(
                select(exists().where(messages.c.session_id == _session(session_id)))
            ).scalar_one()

    def clear(self, session_id: str) -> int:
        """Removes a session's messages and its binding to a chat; returns how many messages there were."""
        with self._engine.begin() as db:
            db.execute(delete(sessions).where(sessions.c.session_id == _session(session_id)))
            return db.execute(delete(messages).where(messages.c.session_id == session_id)).rowcount

    def chat_of(self, session_id: str) -> str | None:
        """The chat the session is bound to; None for a session never bound (new, or older than the binding)."""
        with self._engine.connect() as db:
            return db.execute(
                select(sessions.c.chat_id).where(sessions.c.session_id == _session(session_id))
            ).scalar_one_or_none()

    def bind(self, session_id: str, chat_id: str) -> str:
        """Binds an unbound session to ``chat_id``; returns the chat the session belongs to, which is another one
        when it was bound before (or by a concurrent request)."""
        with self._engine.begin() as db:
            db.execute(
                upsert_insert(db, sessions).values(session_id=_session(session_id), chat_id=_chat(chat_id))
                .on_conflict_do_nothing(index_elements=[sessions.c.session_id])
            )
            return db.execute(
                select(sessions.c.chat_id).where(sessions.c.session_id == session_id)
            ).scalar_one()

    def has_conversation(self, chat_id: str) -> bool:
        """Whether any session of the chat holds a message."""
        with self._engine.connect() as db:
            return db.execute(
                select(exists().where(messages.c.session_id.in_(_chat_sessions(_chat(chat_id)))))
            ).scalar_one()

    def clear_chat(self, chat_id: str) -> int:
        """The first step of deleting a chat: removes the messages of all its sessions and notes that the chat was
        deleted (backend/stores/chats.py), at once, so an answer saved in it from then on is refused
        (``add_exchange``), as is a document stored in it (``DocumentStore``). Its sessions stay bound to it: none
        can be used in another chat. Returns how many messages there were."""
        with self._engine.begin() as db:
            take_turn(db, LockSpace.CHAT, _chat(chat_id))
            deleted = db.execute(
                delete(messages).where(messages.c.session_id.in_(_chat_sessions(chat_id)))
            ).rowcount
            note_deletion(db, chat_id)
            return deleted

    def last_exchange(self, session_id: str, window: int = 4) -> tuple[StoredMessage, StoredMessage] | None:
        """The latest assistant answer within the last ``window`` messages and the user question before it.

        The newest message is usually the follow-up being handled ("simplify that"), so the answer searched for
        is the one before it; None when the window holds no answered question.
        """
        messages = self.recent(session_id, window)
        for index in range(len(messages) - 1, 0, -1):
            if messages[index].role != "assistant":
                continue
            question = next((m for m in reversed(messages[:index]) if m.role == "user"), None)
            if question is not None:
                return question, messages[index]
        return None


def _session(session_id: str) -> str:
    return validate_id(session_id, field="session_id")


def _chat(chat_id: str) -> str:
    return validate_id(chat_id, field="chat_id")


def _chat_sessions(chat_id: str):
    """The sessions of the chat: those bound to it, and the session named after it while that is bound to no
    chat (one that predates the binding)."""
    unbound = ~exists().where(sessions.c.session_id == chat_id)
    unbound_namesake = select(literal(chat_id, String)).where(unbound)
    return union(select(sessions.c.session_id).where(sessions.c.chat_id == chat_id), unbound_namesake)


def _new_message(session_id: str, role: Role, content: str, metadata: dict[str, Any] | None) -> StoredMessage:
    if role not in ROLES:
        raise ValidationFailed(f"role must be one of {', '.join(ROLES)}.", field="role")
    timestamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return StoredMessage(
        id=uuid.uuid4().hex, session_id=_session(session_id), role=role, content=content,
        # A copy in the form it is stored (tuples become lists), so what add() returns equals what is read back,
        # and metadata that is not JSON fails here, before anything is written.
        metadata=json.loads(json.dumps(metadata or {})), timestamp=timestamp,
    )


def _take_turns(db: Connection, session_id: str, chat_id: str | None) -> None:
    """The chat's turn first (``clear_chat`` takes it alone), then the session's."""
    if chat_id is not None:
        take_turn(db, LockSpace.CHAT, _chat(chat_id))
    take_turn(db, LockSpace.SESSION, session_id)


def _refuse_answer_in_deleted_chat(db: Connection, chat_id: str | None) -> None:
    """Raises ChatWasDeleted if the chat was deleted. Called after the transaction's first write, holding the
    chat's turn (``noted_deletion``)."""
    if chat_id is None:
        return
    deleted = noted_deletion(db, chat_id)
    if deleted is not None:
        raise answer_refused_in_deleted_chat(chat_id, deleted.title)


def _refuse_answer_citing_removed_documents(db: Connection, cited: set[str]) -> None:
    """Raises CitedDocumentsRemoved if a cited document is no longer ready. Called holding the chat's turn, as
    ``DocumentStore.remove`` does."""
    removed = cited - ready_documents(db, cited)
    if removed:
        raise CitedDocumentsRemoved(removed)


def _unanswered_tail(db: Connection, session_id: str, question: str) -> str | None:
    """The id of the session's last message if it is ``question`` kept unanswered, else None."""
    row = db.execute(
        select(messages.c.id, messages.c.role, messages.c.content, messages.c.metadata)
        .where(messages.c.session_id == session_id).order_by(messages.c.seq.desc()).limit(1)
    ).one_or_none()
    if row is None:
        return None
    id_, role, content, metadata = row
    return id_ if role == "user" and content == question and json.loads(metadata).get("answered") is False else None


def _insert(db: Connection, message: StoredMessage) -> None:
    db.execute(messages.insert().values(
        id=message.id, session_id=message.session_id, role=message.role, content=message.content,
        metadata=json.dumps(message.metadata, ensure_ascii=False), timestamp=message.timestamp,
    ))


def _message(row: Row) -> StoredMessage:
    id_, session_id, role, content, metadata, timestamp = row
    return StoredMessage(
        id=id_, session_id=session_id, role=cast(Role, role), content=content,
        metadata=json.loads(metadata), timestamp=timestamp,
    )
