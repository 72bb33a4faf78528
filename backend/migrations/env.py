"""Alembic's entry point. At start-up ``backend.stores.database.migrate`` hands in its connection, already
holding the migration lock; the ``alembic`` command (alembic.ini at the top level, e.g. ``alembic revision
--autogenerate -m "..."``) connects to the database the settings name instead."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from backend.config import Settings
from backend.stores.database import create_database_engine, database_url
from backend.stores.schema import metadata


def run_migrations(connection: Connection) -> None:
    # Batch mode rebuilds a SQLite table for the ALTERs SQLite cannot do in place.
    context.configure(
        connection=connection, target_metadata=metadata, render_as_batch=connection.dialect.name == "sqlite"
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("Axiom's migrations run against a database: leave out --sql.")
shared = context.config.attributes.get("connection")
if shared is not None:
    run_migrations(shared)
else:
    engine = create_database_engine(database_url(Settings()))
    try:
        with engine.connect() as connection:
            run_migrations(connection)
            connection.commit()
    finally:
        engine.dispose()
