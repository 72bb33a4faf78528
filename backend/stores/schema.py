"""Every table of the shared database (SQLite or PostgreSQL), in one place: the stores query these, and
Alembic's migrations (backend/migrations/) build them. A change here needs a new migration: see
docs/architecture.md.

Types are the portable subset both engines store alike: text, integers, doubles (Unix times, as
``time.time()`` returns them) and booleans. JSON stays text, so what a store writes reads back byte for byte
on either engine.
"""

from __future__ import annotations

import re

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
    TypeDecorator,
    false,
)

# Alembic needs every constraint named to alter it later (and SQLite's batch mode to rebuild a table).
metadata = MetaData(
    naming_convention={
        "ix": "%(table_name)s_%(column_0_N_name)s",
        "uq": "%(table_name)s_%(column_0_N_name)s_key",
        "ck": "%(table_name)s_%(constraint_name)s_check",
        "fk": "%(table_name)s_%(column_0_name)s_fkey",
        "pk": "%(table_name)s_pkey",
    }
)


class _NulSafeText(TypeDecorator):
    """PostgreSQL text that keeps NUL characters, which its text type refuses but a person's message may hold
    (SQLite keeps them as they are). Reversibly spelled: NUL as U+E000 "0", U+E000 itself doubled."""

    impl = Text
    cache_ok = True
    _ESCAPED = re.compile("\ue000(.)", re.DOTALL)

    def process_bind_param(self, value: str | None, dialect) -> str | None:
        if value is None or ("\x00" not in value and "\ue000" not in value):
            return value
        return value.replace("\ue000", "\ue000\ue000").replace("\x00", "\ue0000")

    def process_result_value(self, value: str | None, dialect) -> str | None:
        if value is None or "\ue000" not in value:
            return value
        return self._ESCAPED.sub(lambda escaped: "\x00" if escaped[1] == "0" else escaped[1], value)


# Free text as people (and the model) write it; other text columns hold ids, file names and JSON, never a NUL.
_FreeText = Text().with_variant(_NulSafeText(), "postgresql")

# An increasing row number: what orders rows written within the same clock tick. SQLite autoincrements only an
# INTEGER PRIMARY KEY; PostgreSQL gets a 64-bit sequence.
_Sequence = BigInteger().with_variant(Integer(), "sqlite")

# Named chats (backend/stores/chats.py). ``owner``: the user who created the chat, NULL when auth is off.
chats = Table(
    "chats",
    metadata,
    Column("seq", _Sequence, primary_key=True, autoincrement=True),
    Column("id", Text, nullable=False, unique=True),
    Column("title", _FreeText, nullable=False),
    Column("created_at", Double, nullable=False),
    Column("updated_at", Double, nullable=False),
    Column("owner", Text, nullable=True),
    sqlite_autoincrement=True,
)

# Chats that were deleted (backend/stores/chats.py): an upload or a question addressed to one does not make it
# again. ``title`` and ``owner`` as its record had them (NULL: it had no record, or no owner).
deleted_chats = Table(
    "deleted_chats",
    metadata,
    Column("chat_id", Text, primary_key=True),
    Column("title", _FreeText, nullable=True),
    Column("owner", Text, nullable=True),
    Column("deleted_at", Double, nullable=False),
)

# Conversation memory (backend/stores/memory.py): each session's messages, and the chat each session is in.
messages = Table(
    "messages",
    metadata,
    Column("seq", _Sequence, primary_key=True, autoincrement=True),
    Column("id", Text, nullable=False, unique=True),
    Column("session_id", Text, nullable=False),
    Column("role", Text, CheckConstraint("role IN ('user', 'assistant')", name="role"), nullable=False),
    Column("content", _FreeText, nullable=False),
    Column("metadata", Text, nullable=False),  # JSON
    Column("timestamp", Text, nullable=False),  # ISO-8601 UTC, e.g. "2024-01-15T10:30:00.123Z"
    Index("messages_session", "session_id", "seq"),
    sqlite_autoincrement=True,
)

sessions = Table(
    "sessions",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("chat_id", Text, nullable=False),
    Index("sessions_chat", "chat_id"),
)

# The document registry and parent texts (backend/stores/documents.py).
documents = Table(
    "documents",
    metadata,
    Column("document_id", Text, primary_key=True),
    Column("chat_id", Text, nullable=False),
    Column("filename", Text, nullable=False),
    Column("sha256", Text, nullable=False),
    Column("file_type", Text, nullable=False),
    Column("size_bytes", BigInteger, nullable=False),
    Column("page_count", Integer, nullable=False, server_default="0"),
    Column("chunk_count", Integer, nullable=False, server_default="0"),
    Column("status", Text, nullable=False),
    Column("created_at", Double, nullable=False),
    Index("documents_chat_sha", "chat_id", "sha256", unique=True),
    # Every replica's recovery sweep asks for the documents still 'indexing' (a few, among all ready ones).
    Index("documents_status", "status"),
)

parents = Table(
    "parents",
    metadata,
    Column("parent_id", Text, primary_key=True),
    Column("document_id", Text, ForeignKey("documents.document_id", ondelete="CASCADE"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("page", Integer, nullable=False),
    Column("text", Text, nullable=False),
    Column("ocr", Boolean, nullable=False, server_default=false()),  # the text was read from an image by OCR
    Column("label", Text, nullable=False, server_default=""),  # how citations name its page; "": "Page N"
    Index("parents_document", "document_id", "seq"),
)

# The child chunks of ready documents, written with the parents: the truth every replica's BM25 cache is derived
# from (backend/stores/bm25.py). Chroma holds their vectors.
chunks = Table(
    "chunks",
    metadata,
    Column("chunk_id", Text, primary_key=True),
    Column("document_id", Text, ForeignKey("documents.document_id", ondelete="CASCADE"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("parent_id", Text, nullable=False),
    Column("page", Integer, nullable=False),
    Column("text", Text, nullable=False),
    Column("ocr", Boolean, nullable=False, server_default=false()),  # the text was read from an image by OCR
    Column("label", Text, nullable=False, server_default=""),  # how citations name its page; "": "Page N"
    Index("chunks_document", "document_id", "seq"),
)

# A new random token in the same transaction as every change to a chat's ready documents: a replica whose BM25
# cache carries another token rebuilds it. Never deleted, so a token is never seen twice for one chat.
# ``deletions`` counts the chat's deletions (``DocumentStore.remove_chat``): a chat made again under the same id
# has a higher count than when a document began to be stored in it.
chat_versions = Table(
    "chat_versions",
    metadata,
    Column("chat_id", Text, primary_key=True),
    Column("version", Text, nullable=False),
    Column("deletions", Integer, nullable=False, server_default="0"),
)

# Background ingestion jobs (backend/stores/jobs.py).
jobs = Table(
    "jobs",
    metadata,
    Column("job_id", Text, primary_key=True),
    Column("chat_id", Text, nullable=False),
    Column("filename", Text, nullable=False),
    Column("size_bytes", BigInteger, nullable=False),
    Column("state", Text, nullable=False),
    Column("document_id", Text, nullable=True),
    Column("error", Text, nullable=True),  # JSON: the error contract's body
    Column("created_at", Double, nullable=False),
    # Claiming (backend/stores/jobs.py): how often a worker took it, which one has it and until when.
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("claimed_by", Text, nullable=True),
    Column("lease_until", Double, nullable=True),
    Column("progress", Double, nullable=False, server_default="0"),
    Column("cancel_requested", Boolean, nullable=False, server_default=false()),
    # Waiting to be tried again after the vector store was unreachable: not claimed before ``retry_at``; given up
    # once it has been unreachable for long enough since ``retrying_since`` (backend/ingest/jobs.py).
    Column("retry_at", Double, nullable=True),
    Column("retrying_since", Double, nullable=True),
    Index("jobs_chat", "chat_id", "state"),
    Index("jobs_state", "state", "created_at"),
)

# An unfinished job's uploaded file, so a worker in any replica can index it; deleted when the job ends.
job_files = Table(
    "job_files",
    metadata,
    Column("job_id", Text, ForeignKey("jobs.job_id", ondelete="CASCADE"), primary_key=True),
    Column("filename", Text, nullable=False),  # as uploaded (the job's own is the base name)
    # The password its uploader gave to open it (a PDF's), deleted with the file when the job ends (jobs.py).
    Column("password", Text, nullable=True),
)

# Its bytes, in pieces (backend/stores/jobs.py says why), in order of ``piece``.
job_file_pieces = Table(
    "job_file_pieces",
    metadata,
    Column("job_id", Text, ForeignKey("job_files.job_id", ondelete="CASCADE"), primary_key=True),
    Column("piece", Integer, primary_key=True),
    Column("data", LargeBinary, nullable=False),
)

# Users and their API keys (AXIOM_AUTH=api-key). Keys are stored hashed only.
users = Table(
    "users",
    metadata,
    Column("user_id", Text, primary_key=True),
    Column("name", Text, nullable=False, unique=True),
    Column("created_at", Double, nullable=False),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("key_id", Text, primary_key=True),
    Column("user_id", Text, ForeignKey("users.user_id", ondelete="CASCADE"), nullable=False),
    Column("key_hash", Text, nullable=False, unique=True),
    Column("created_at", Double, nullable=False),
    Column("revoked_at", Double, nullable=True),
)
