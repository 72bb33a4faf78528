"""The shared database: chats, conversation memory, documents and parents, jobs, users and API keys.

Before it, each store created its tables in its own SQLite file; a database this revision creates is filled
from those files by backend/stores/legacy.py.

Revision ID: 0001
Revises:
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SEQUENCE = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "chats",
        sa.Column("seq", _SEQUENCE, autoincrement=True, nullable=False),
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.Column("owner", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("seq", name=op.f("chats_pkey")),
        sa.UniqueConstraint("id", name=op.f("chats_id_key")),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "messages",
        sa.Column("seq", _SEQUENCE, autoincrement=True, nullable=False),
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("timestamp", sa.Text(), nullable=False),
        sa.CheckConstraint("role IN ('user', 'assistant')", name=op.f("messages_role_check")),
        sa.PrimaryKeyConstraint("seq", name=op.f("messages_pkey")),
        sa.UniqueConstraint("id", name=op.f("messages_id_key")),
        sqlite_autoincrement=True,
    )
    op.create_index("messages_session", "messages", ["session_id", "seq"])
    op.create_table(
        "sessions",
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("chat_id", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("session_id", name=op.f("sessions_pkey")),
    )
    op.create_index("sessions_chat", "sessions", ["chat_id"])
    op.create_table(
        "documents",
        sa.Column("document_id", sa.Text(), nullable=False),
        sa.Column("chat_id", sa.Text(), nullable=False),
        sa.Column("filename", sa.Text(), nullable=False),
        sa.Column("sha256", sa.Text(), nullable=False),
        sa.Column("file_type", sa.Text(), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("page_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("chunk_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("document_id", name=op.f("documents_pkey")),
    )
    op.create_index("documents_chat_sha", "documents", ["chat_id", "sha256"], unique=True)
    op.create_table(
        "parents",
        sa.Column("parent_id", sa.Text(), nullable=False),
        sa.Column("document_id", sa.Text(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("page", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("ocr", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.ForeignKeyConstraint(
            ["document_id"], ["documents.document_id"], name=op.f("parents_document_id_fkey"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("parent_id", name=op.f("parents_pkey")),
    )
    op.create_index("parents_document", "parents", ["document_id", "seq"])
    op.create_table(
        "jobs",
        sa.Column("job_id", sa.Text(), nullable=False),
        sa.Column("chat_id", sa.Text(), nullable=False),
        sa.Column("filename", sa.Text(), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("document_id", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("job_id", name=op.f("jobs_pkey")),
    )
    op.create_index("jobs_chat", "jobs", ["chat_id", "state"])
    op.create_table(
        "users",
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("user_id", name=op.f("users_pkey")),
        sa.UniqueConstraint("name", name=op.f("users_name_key")),
    )
    op.create_table(
        "api_keys",
        sa.Column("key_id", sa.Text(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("key_hash", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("revoked_at", sa.Double(), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.user_id"], name=op.f("api_keys_user_id_fkey"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("key_id", name=op.f("api_keys_pkey")),
        sa.UniqueConstraint("key_hash", name=op.f("api_keys_key_hash_key")),
    )


def downgrade() -> None:
    for table in ("api_keys", "users", "jobs", "parents", "documents", "sessions", "messages", "chats"):
        op.drop_table(table)
