"""Conversation memory: each session's messages in SQLite (seed §11), and the chat each session belongs to.

The user's message and the assistant's answer are separate writes, so a question survives a failed generation;
an answer is written in one call once it is complete, so a client that disconnects mid-stream leaves nothing
half-written. Messages are ordered by an autoincrement sequence, not their timestamp, so two messages written in
the same millisecond (or under a clock step backwards) keep the order they were written in.

A session belongs to one chat (``sessions``): the chat it was first used in. Databases written before that table
existed keep working: their sessions have no row until their first use binds them, and a chat's own session (the
one with the chat's id, as the web UI keeps it) counts as the chat's until then.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast, get_args

from backend.errors import ValidationFailed
from backend.ids import validate_id
from backend.llm.base import ChatMessage
from backend.stores.sqlite import ThreadLocalSQLite

Role = Literal["user", "assistant"]
ROLES: tuple[str, ...] = get_args(Role)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL,
    role       TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content    TEXT NOT NULL,
    metadata   TEXT NOT NULL,
    timestamp  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_session ON messages(session_id, seq);
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    chat_id    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_chat ON sessions(chat_id);
"""

# The sessions of the chat :chat: those bound to it, and the session named after it while that is bound to no chat
# (one that predates the binding).
_CHAT_SESSIONS = (
    "SELECT session_id FROM sessions WHERE chat_id=:chat"
    " UNION SELECT :chat WHERE NOT EXISTS (SELECT 1 FROM sessions WHERE session_id=:chat)"
)

_COLUMNS = "id, session_id, role, content, metadata, timestamp"


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
    def __init__(self, path: Path) -> None:
        self._db = ThreadLocalSQLite(path, _SCHEMA)

    def add(
        self, session_id: str, role: Role, content: str, metadata: dict[str, Any] | None = None
    ) -> StoredMessage:
        message = _new_message(session_id, role, content, metadata)
        with self._db.transaction() as db:
            _insert(db, message)
        return message

    def add_exchange(
        self, session_id: str, question: str, answer: str, metadata: dict[str, Any] | None = None
    ) -> tuple[StoredMessage, StoredMessage]:
        """The user's question and the assistant's answer (with its metadata), both or neither. The same question
        kept unanswered by the attempt just before (see keep_unanswered) is replaced, so a retry leaves one copy."""
        exchange = (
            _new_message(session_id, "user", question, None),
            _new_message(session_id, "assistant", answer, metadata),
        )
        with self._db.transaction() as db:
            earlier = _unanswered_tail(db, exchange[0].session_id, question)
            if earlier is not None:
                db.execute("DELETE FROM messages WHERE id=?", (earlier,))
            for message in exchange:
                _insert(db, message)
        return exchange

    def keep_unanswered(self, session_id: str, question: str) -> None:
        """Saves a question whose answer failed, marked ``answered: false``, unless it is already the session's
        last message (a retry that failed again)."""
        message = _new_message(session_id, "user", question, {"answered": False})
        with self._db.transaction() as db:
            if _unanswered_tail(db, message.session_id, question) is None:
                _insert(db, message)

    def recent(self, session_id: str, limit: int) -> list[StoredMessage]:
        """The last ``limit`` messages of a session, oldest first."""
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        rows = self._db.connection().execute(
            f"SELECT {_COLUMNS} FROM messages WHERE session_id=? ORDER BY seq DESC LIMIT ?",
            (_session(session_id), limit),
        ).fetchall()
        return [_message(row) for row in reversed(rows)]

    def history(self, session_id: str) -> list[StoredMessage]:
        rows = self._db.connection().execute(
            f"SELECT {_COLUMNS} FROM messages WHERE session_id=? ORDER BY seq", (_session(session_id),)
        ).fetchall()
        return [_message(row) for row in rows]

    def last_written_at(self, session_ids: Iterable[str]) -> dict[str, float]:
        """When each session's newest message was written (Unix time); sessions without messages are left out."""
        ids = [_session(session_id) for session_id in session_ids]
        rows = self._db.connection().execute(
            "SELECT session_id, timestamp FROM messages WHERE seq IN (SELECT MAX(seq) FROM messages"
            f" WHERE session_id IN ({','.join('?' * len(ids))}) GROUP BY session_id)",
            ids,
        ).fetchall()
        return {session_id: datetime.fromisoformat(timestamp).timestamp() for session_id, timestamp in rows}

    def exists(self, session_id: str) -> bool:
        row = self._db.connection().execute(
            "SELECT 1 FROM messages WHERE session_id=? LIMIT 1", (_session(session_id),)
        ).fetchone()
        return row is not None

    def clear(self, session_id: str) -> int:
        """Removes a session's messages and its binding to a chat; returns how many messages there were."""
        with self._db.transaction() as db:
            db.execute("DELETE FROM sessions WHERE session_id=?", (_session(session_id),))
            return db.execute("DELETE FROM messages WHERE session_id=?", (session_id,)).rowcount

    def chat_of(self, session_id: str) -> str | None:
        """The chat the session is bound to; None for a session never bound (new, or older than the binding)."""
        row = self._db.connection().execute(
            "SELECT chat_id FROM sessions WHERE session_id=?", (_session(session_id),)
        ).fetchone()
        return row[0] if row else None

    def bind(self, session_id: str, chat_id: str) -> str:
        """Binds an unbound session to ``chat_id``; returns the chat the session belongs to, which is another one
        when it was bound before (or by a concurrent request)."""
        with self._db.transaction() as db:
            db.execute(
                "INSERT INTO sessions (session_id, chat_id) VALUES (?, ?) ON CONFLICT(session_id) DO NOTHING",
                (_session(session_id), _chat(chat_id)),
            )
            return db.execute("SELECT chat_id FROM sessions WHERE session_id=?", (session_id,)).fetchone()[0]

    def has_conversation(self, chat_id: str) -> bool:
        """Whether any session of the chat holds a message."""
        row = self._db.connection().execute(
            f"SELECT 1 FROM messages WHERE session_id IN ({_CHAT_SESSIONS}) LIMIT 1", {"chat": _chat(chat_id)}
        ).fetchone()
        return row is not None

    def clear_chat(self, chat_id: str) -> int:
        """Removes every session of the chat, messages and bindings; returns how many messages there were."""
        with self._db.transaction() as db:
            deleted = db.execute(
                f"DELETE FROM messages WHERE session_id IN ({_CHAT_SESSIONS})", {"chat": _chat(chat_id)}
            ).rowcount
            db.execute("DELETE FROM sessions WHERE chat_id=?", (chat_id,))
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


def _unanswered_tail(db: sqlite3.Connection, session_id: str, question: str) -> str | None:
    """The id of the session's last message if it is ``question`` kept unanswered, else None."""
    row = db.execute(
        "SELECT id, role, content, metadata FROM messages WHERE session_id=? ORDER BY seq DESC LIMIT 1", (session_id,)
    ).fetchone()
    if row is None:
        return None
    id_, role, content, metadata = row
    return id_ if role == "user" and content == question and json.loads(metadata).get("answered") is False else None


def _insert(db: sqlite3.Connection, message: StoredMessage) -> None:
    db.execute(
        f"INSERT INTO messages ({_COLUMNS}) VALUES (?,?,?,?,?,?)",
        (message.id, message.session_id, message.role, message.content,
         json.dumps(message.metadata, ensure_ascii=False), message.timestamp),
    )


def _message(row: tuple[str, str, str, str, str, str]) -> StoredMessage:
    id_, session_id, role, content, metadata, timestamp = row
    return StoredMessage(
        id=id_, session_id=session_id, role=cast(Role, role), content=content,
        metadata=json.loads(metadata), timestamp=timestamp,
    )
