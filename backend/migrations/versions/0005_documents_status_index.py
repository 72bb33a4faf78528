"""An index of the documents by status: every replica's recovery sweep (backend/ingest/recovery.py) asks for the
few still 'indexing' every ``AXIOM_INGEST_LEASE_SECONDS``; without it that is a scan of every document of every
chat. (Not a partial index: the query binds the status as a parameter, which SQLite cannot match to one.)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("documents_status", "documents", ["status"])


def downgrade() -> None:
    op.drop_index("documents_status", table_name="documents")
