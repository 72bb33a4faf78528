"""What the stores write differently per engine.

INSERT … ON CONFLICT: SQLite and PostgreSQL spell it alike, but SQLAlchemy builds it from each dialect's own
``insert``. Taking turns: SQLite lets one transaction write at a time, so writes that must not interleave
never do; PostgreSQL runs them side by side unless they lock, so they take an advisory lock on what they
share.
"""

from __future__ import annotations

from enum import IntEnum

from sqlalchemy import Connection, Table, func, select
from sqlalchemy.dialects import postgresql, sqlite


class LockSpace(IntEnum):
    """What a transaction can wait its turn for: the first of PostgreSQL's two advisory lock keys."""

    SESSION = 1  # a conversation's messages


def upsert_insert(connection: Connection, table: Table) -> sqlite.Insert | postgresql.Insert:
    """An INSERT into ``table`` offering ``on_conflict_do_update`` and ``on_conflict_do_nothing``."""
    dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
    return dialect.insert(table)


def take_turn(connection: Connection, space: LockSpace, key: str) -> None:
    """Waits until no other transaction holds ``key`` in ``space``, then holds it until this one ends.

    PostgreSQL only: on SQLite the transaction's first write already waits for every other writer.
    """
    if connection.dialect.name == "postgresql":
        connection.execute(select(func.pg_advisory_xact_lock(int(space), func.hashtext(key))))
