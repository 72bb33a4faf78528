"""Page labels: how citations name a parent's or a chunk's page ("Slide 3", "Sheet “Q3 sales”", an EPUB chapter's
title). Rows stored before this revision get "", which citations read as "Page N".

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLES = ("parents", "chunks")


def upgrade() -> None:
    for table in _TABLES:
        with op.batch_alter_table(table) as labelled:
            labelled.add_column(sa.Column("label", sa.Text(), nullable=False, server_default=""))


def downgrade() -> None:
    for table in _TABLES:
        with op.batch_alter_table(table) as labelled:
            labelled.drop_column("label")
