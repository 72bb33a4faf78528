"""What the stores write differently per engine.

INSERT … ON CONFLICT: SQLite and PostgreSQL spell it alike, but SQLAlchemy builds it from each dialect's own
``insert``. Taking turns: SQLite lets one transaction write at a time, so writes that must not interleave
never do; PostgreSQL runs them side by side unless they lock, so they take an advisory lock on what they
share. Being alive: on PostgreSQL a process holds an advisory lock on work in progress for as long as it works
on it, and the server releases the lock the moment the process's connection closes (it ended or died), so
another process can tell live work from what a dead one left (SQLite has one process per database).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from enum import IntEnum

from sqlalchemy import Connection, Engine, Table, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError


class LockSpace(IntEnum):
    """What a transaction can wait its turn for: the first of PostgreSQL's two advisory lock keys."""

    SESSION = 1  # a conversation's messages
    DOCUMENT = 2  # a document being stored: held by the process storing it
    CHAT = 3  # a chat's conversation being saved to, or deleted


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


@contextmanager
def holding(engine: Engine, space: LockSpace, keys: Iterable[str]) -> Iterator[None]:
    """Holds ``keys`` in ``space`` while the block runs (waiting for any other holder first), or until this
    process dies. PostgreSQL only: on SQLite nothing is held."""
    keys = sorted(set(keys))  # in one order: two processes holding some of the same keys cannot deadlock
    if engine.dialect.name != "postgresql" or not keys:
        yield
        return
    with engine.connect() as connection:
        for key in keys:
            _advisory(connection, "pg_advisory_lock", space, key)
        try:
            yield
        finally:
            _release(connection, space, keys)


@contextmanager
def holding_if_free(engine: Engine, space: LockSpace, key: str) -> Iterator[bool]:
    """Whether nobody holds ``key`` in ``space`` (no live process works on it); if so it is held while the
    block runs. Always True on SQLite."""
    if engine.dialect.name != "postgresql":
        yield True
        return
    with engine.connect() as connection:
        free = _advisory(connection, "pg_try_advisory_lock", space, key)
        try:
            yield free
        finally:
            if free:
                _release(connection, space, [key])


def _release(connection: Connection, space: LockSpace, keys: Iterable[str]) -> None:
    """Unlocks ``keys``. On a connection the server closed meanwhile (it restarted, or the connection was cut) the
    server let go of them already: the block's work, done over other connections, is not failed for that."""
    try:
        for key in keys:
            _advisory(connection, "pg_advisory_unlock", space, key)
    except DBAPIError as error:
        if not error.connection_invalidated:
            raise


def _advisory(connection: Connection, function: str, space: LockSpace, key: str):
    """Calls a session-level advisory lock function: the lock outlives the transaction, which is ended at once
    so the connection is not left idle in one."""
    result = connection.execute(select(getattr(func, function)(int(space), func.hashtext(key)))).scalar_one()
    connection.commit()
    return result
