"""A background job's file in pieces (``job_file_pieces``) instead of one value in ``job_files.data``: SQLite's
cached INSERT statement kept its last bound value, so every pooled connection that had stored a 50 MB file held
a 50 MB copy of it (docs/benchmarks.md, "Memory after ordinary and hostile uploads").

A file waiting in ``job_files`` becomes one piece.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "job_file_pieces",
        sa.Column("job_id", sa.Text(), nullable=False),
        sa.Column("piece", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["job_files.job_id"], name=op.f("job_file_pieces_job_id_fkey"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("job_id", "piece", name=op.f("job_file_pieces_pkey")),
    )
    op.execute("INSERT INTO job_file_pieces (job_id, piece, data) SELECT job_id, 0, data FROM job_files")
    # Not in batch mode: on SQLite that copies job_files and drops the original, which the new table's foreign key
    # would follow, deleting every piece. SQLite drops a column in place since 3.35.
    op.drop_column("job_files", "data")


def downgrade() -> None:
    op.add_column("job_files", sa.Column("data", sa.LargeBinary(), nullable=False, server_default=""))
    pieces = sa.table("job_file_pieces", sa.column("job_id"), sa.column("piece"), sa.column("data"))
    files = sa.table("job_files", sa.column("job_id"), sa.column("data"))
    connection = op.get_bind()
    for job_id in connection.execute(sa.select(pieces.c.job_id).distinct()).scalars().all():
        data = b"".join(connection.execute(
            sa.select(pieces.c.data).where(pieces.c.job_id == job_id).order_by(pieces.c.piece)
        ).scalars())
        connection.execute(sa.update(files).where(files.c.job_id == job_id).values(data=data))
    op.drop_table("job_file_pieces")
