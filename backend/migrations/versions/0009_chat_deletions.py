"""How many times each chat's documents were all removed by its deletion (``chat_versions.deletions``): what
tells a storer whose document row is gone whether the chat was deleted (and perhaps made again) meanwhile, or
only its document rolled back by another replica's sweep (backend/stores/documents.py, ``mark_ready``).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("chat_versions") as chat_versions:
        chat_versions.add_column(sa.Column("deletions", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("chat_versions") as chat_versions:
        chat_versions.drop_column("deletions")
