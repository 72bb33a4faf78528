"""A background job whose storing met the vector store unreachable waits to be tried again (``jobs.retry_at``)
instead of failing, until it has been unreachable for too long since ``jobs.retrying_since``.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as jobs:
        jobs.add_column(sa.Column("retry_at", sa.Double(), nullable=True))
        jobs.add_column(sa.Column("retrying_since", sa.Double(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as jobs:
        jobs.drop_column("retrying_since")
        jobs.drop_column("retry_at")
