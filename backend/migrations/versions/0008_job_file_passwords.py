"""A background job's file keeps the password its uploader gave to open it (a PDF's) until the job ends
(``job_files.password``, deleted with the file: backend/stores/jobs.py).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("job_files") as job_files:
        job_files.add_column(sa.Column("password", sa.Text(), nullable=True))


def downgrade() -> None:
    # Not in batch mode (as in 0004): on SQLite that copies job_files and drops the original, which the foreign key
    # of job_file_pieces would follow, deleting every waiting file's bytes. SQLite drops a column in place.
    op.drop_column("job_files", "password")
