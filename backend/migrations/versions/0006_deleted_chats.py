"""The chats that were deleted (``deleted_chats``), so that an upload or a question sent to a deleted chat's id
(from a browser tab that still shows it) is refused instead of making the chat again with only the new file.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "deleted_chats",
        sa.Column("chat_id", sa.Text(), nullable=False),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("owner", sa.Text(), nullable=True),
        sa.Column("deleted_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("chat_id", name=op.f("deleted_chats_pkey")),
    )


def downgrade() -> None:
    op.drop_table("deleted_chats")
