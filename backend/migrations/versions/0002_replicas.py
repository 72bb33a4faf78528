"""Stateless replicas and durable jobs: chunk texts and chat versions in the database (BM25 becomes a cache
derived from them), jobs claimed with a lease and their uploaded files kept until they end.

The chunks of documents stored before this revision are in the BM25 files of each replica; ``BM25Store``
copies them into ``chunks`` on first use (``import_legacy_files``).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "chunks",
        sa.Column("chunk_id", sa.Text(), nullable=False),
        sa.Column("document_id", sa.Text(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("parent_id", sa.Text(), nullable=False),
        sa.Column("page", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("ocr", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.ForeignKeyConstraint(
            ["document_id"], ["documents.document_id"], name=op.f("chunks_document_id_fkey"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("chunk_id", name=op.f("chunks_pkey")),
    )
    op.create_index("chunks_document", "chunks", ["document_id", "seq"])
    op.create_table(
        "chat_versions",
        sa.Column("chat_id", sa.Text(), nullable=False),
        sa.Column("version", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("chat_id", name=op.f("chat_versions_pkey")),
    )
    with op.batch_alter_table("jobs") as jobs:
        jobs.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"))
        jobs.add_column(sa.Column("claimed_by", sa.Text(), nullable=True))
        jobs.add_column(sa.Column("lease_until", sa.Double(), nullable=True))
        jobs.add_column(sa.Column("progress", sa.Double(), nullable=False, server_default="0"))
        jobs.add_column(sa.Column("cancel_requested", sa.Boolean(), nullable=False, server_default=sa.false()))
        jobs.create_index("jobs_state", ["state", "created_at"])
    op.create_table(
        "job_files",
        sa.Column("job_id", sa.Text(), nullable=False),
        sa.Column("filename", sa.Text(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.job_id"], name=op.f("job_files_job_id_fkey"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("job_id", name=op.f("job_files_pkey")),
    )


def downgrade() -> None:
    op.drop_table("job_files")
    with op.batch_alter_table("jobs") as jobs:
        jobs.drop_index("jobs_state")
        for column in ("cancel_requested", "progress", "lease_until", "claimed_by", "attempts"):
            jobs.drop_column(column)
    op.drop_table("chat_versions")
    op.drop_index("chunks_document", table_name="chunks")
    op.drop_table("chunks")
