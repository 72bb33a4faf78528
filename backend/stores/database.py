"""The one database behind the chat, memory, document and job stores: SQLite by default, PostgreSQL when
``AXIOM_DATABASE_URL`` says so. SQLAlchemy Core speaks to both (psycopg 3 for PostgreSQL); the tables are in
``schema.py``; Alembic migrations (backend/migrations/) bring any older database up to date at start-up.

SQLite keeps the settings the stores always ran on: WAL (readers run beside the single writer), a 30 s busy
timeout (a writer waits for the lock instead of failing under concurrent requests) and foreign keys on. Its
driver begins a transaction at the first write of a block, as before; PostgreSQL runs each block as one
transaction.

Migrations take a lock first (PostgreSQL: an advisory lock; SQLite: the write lock), so replicas starting
together upgrade the database once, the others waiting and then finding it current. A database created by that
upgrade is filled, in the same transaction, from the SQLite files of releases before it (``legacy.py``).
"""

from __future__ import annotations

import logging
import sqlite3
import zlib
from collections.abc import Iterable
from pathlib import Path

import psycopg
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import URL, Connection, Engine, create_engine, event, exc, func, make_url, select

from backend.config import Settings, masked_url
from backend.errors import AxiomError, VectorStoreUnreachable
from backend.stores.legacy import import_legacy_sqlite

logger = logging.getLogger(__name__)

SQLITE_FILE = "axiom.db"
# Any constant works, as long as every Axiom process uses the same one: it names the lock in pg_locks.
_MIGRATION_LOCK = zlib.crc32(b"axiom schema migrations")
# A server thread holds a connection only for one store call; 30 at most per process, then calls wait (30 s).
# (With the pool, for both engines: hide_parameters, so a database error's text, which is logged, names no bound
# value: a job's file, its password.)
_POOL = {"pool_size": 10, "max_overflow": 20, "pool_timeout": 30, "hide_parameters": True}


class DatabaseUnavailable(AxiomError):
    """The database AXIOM_DATABASE_URL names cannot be reached or opened: start-up stops; later (a database server
    restarting, a network cut) a request fails with it and the next one reconnects."""

    code = "DATABASE_UNAVAILABLE"
    status = 503


# A database server restarting is back within seconds.
_RETRY_AFTER_SECONDS = 5
# A server on a busy network answers a new connection well within this.
_CONNECT_TIMEOUT_SECONDS = 10


# The SQLSTATEs of a server going away: shut down (57P01, a restart; pg_terminate_backend), crashed (57P02),
# starting up or stopping (57P03). Class 08 (connection exception) is matched whole.
_SERVER_AWAY = frozenset({"57P01", "57P02", "57P03"})


def unavailable(error: exc.DBAPIError) -> DatabaseUnavailable | None:
    """The error a client is told when the database server cannot be reached (refused, shut down, the connection
    cut, no connection slot free); None for any other database error. psycopg makes many server errors
    OperationalErrors (a deadlock, a statement timeout, a full disk): those are failures to log and fix, not
    outages to wait out. A failure to connect carries no SQLSTATE in psycopg, whatever the server said, so it is
    one: among them too_many_connections (53300), rightly, since slots free up as other clients finish. SQLite's
    OperationalError is never one: it means bad SQL, or a lock held past the 30 s busy timeout (a bug)."""
    # psycopg gives no SQLSTATE for a failure to connect (no statement yet) nor a connection lost mid-statement
    # (which SQLAlchemy marks invalidated); any other OperationalError without one is no outage.
    if not (error.connection_invalidated or _server_away(error.orig, connecting=error.statement is None)):
        return None
    return DatabaseUnavailable(
        "The database is not reachable right now; try again in a moment. Nothing already stored is lost.",
        retry_after_seconds=_RETRY_AFTER_SECONDS,
    )


def outage(error: BaseException) -> DatabaseUnavailable | None:
    """``unavailable`` for any error: None but for a database error saying the server cannot be reached."""
    return unavailable(error) if isinstance(error, exc.DBAPIError) else None


def warn_of(logger: logging.Logger, error: Exception, message: str, *args: object) -> None:
    """A failure the next try may not meet: a database or vector store outage as one line (every poll or sweep
    repeats it until the server is back), anything else with its traceback."""
    if outage(error) is not None:
        logger.warning(message + ": the database is unreachable (%s)", *args, error.orig)
    elif isinstance(error, VectorStoreUnreachable):
        logger.warning(message + ": %s", *args, error.message)
    else:
        logger.warning(message, *args, exc_info=error)


def _server_away(error: BaseException | None, *, connecting: bool) -> bool:
    if not isinstance(error, psycopg.OperationalError):
        return False
    state = error.sqlstate
    return connecting if state is None else state.startswith("08") or state in _SERVER_AWAY


def database_url(settings: Settings) -> URL:
    """The SQLAlchemy URL of ``settings.database_url``: ``postgresql://`` gets the psycopg 3 driver."""
    if settings.database_url is None:
        return URL.create("sqlite", database=str(settings.data_dir / SQLITE_FILE))
    url = make_url(settings.database_url)
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    return url


def shown_url(url: URL) -> str:
    """How a database URL appears in messages and logs: without its password (also one in its query)."""
    return masked_url(url.render_as_string(hide_password=True))


def one_line(error: BaseException | None) -> str:
    """A driver's message on one line: libpq adds a tab-indented hint on a line of its own."""
    return " ".join(str(error).split())


MIN_SQLITE = (3, 35)


def create_database_engine(url: URL | str) -> Engine:
    url = make_url(url)
    if url.get_backend_name() != "sqlite":
        # pre_ping: a connection the server closed (a restart, an idle timeout) is replaced, not handed out.
        # libpq waits for a server that accepted the connection but never answers (hung, or a network cut
        # swallowing its packets) as long as the operating system does, minutes: a bound, unless the URL sets one.
        timeout = {} if "connect_timeout" in url.query else {"connect_timeout": _CONNECT_TIMEOUT_SECONDS}
        return create_engine(url, pool_pre_ping=True, connect_args=timeout, **_POOL)
    if sqlite3.sqlite_version_info < MIN_SQLITE:  # RETURNING and DROP COLUMN, used by the stores and migrations
        raise DatabaseUnavailable(
            f"Axiom needs SQLite {'.'.join(map(str, MIN_SQLITE))} or newer; this Python has SQLite "
            f"{sqlite3.sqlite_version}. Use a newer Python build, or PostgreSQL through AXIOM_DATABASE_URL.",
            database="sqlite",
        )
    if url.database and url.database != ":memory:":
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": 30}, **_POOL)
    event.listen(engine, "connect", _configure_sqlite)
    return engine


def _configure_sqlite(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def open_database(settings: Settings) -> Engine:
    """The engine of the configured database, migrated to the current schema."""
    engine = create_database_engine(database_url(settings))
    legacy_files = (settings.chats_db_path, settings.memory_db_path, settings.docstore_path)
    try:
        migrate(engine, legacy_files=legacy_files)
    except exc.OperationalError as failure:
        engine.dispose()
        where = shown_url(engine.url)
        raise DatabaseUnavailable(
            f"The database {where} cannot be opened ({one_line(failure.orig)}). Check AXIOM_DATABASE_URL and "
            "that the server is running.", database=where,
        ) from failure
    except BaseException:
        engine.dispose()
        raise
    return engine


def alembic_config() -> Config:
    """Alembic's configuration for Axiom's migrations (the connection goes in ``attributes["connection"]``)."""
    config = Config()
    config.set_main_option("script_location", "backend:migrations")
    return config


def migrate(engine: Engine, *, legacy_files: Iterable[Path | None] = ()) -> None:
    """``alembic upgrade head`` under the migration lock; a database it creates gets the rows of
    ``legacy_files`` (see ``legacy.py``)."""
    config = alembic_config()
    with engine.connect() as connection:
        _lock_for_migration(connection)
        current = MigrationContext.configure(connection).get_current_revision()
        _refuse_unknown_revision(config, current, engine)
        created = current is None
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
        if created:
            imported = import_legacy_sqlite(connection, [path for path in legacy_files if path is not None])
            if imported:
                logger.warning(
                    "Copied %s from the SQLite files of the previous release into %s; those files are no "
                    "longer used and can be deleted",
                    ", ".join(f"{count} {table}" for table, count in imported.items()),
                    shown_url(engine.url),
                )
        connection.commit()


def _refuse_unknown_revision(config: Config, current: str | None, engine: Engine) -> None:
    """A schema this release has no migration for was made by a newer one (a replica of it upgraded the shared
    database): this release cannot read it, and Alembic alone would only say it cannot locate the revision."""
    script = ScriptDirectory.from_config(config)
    known = {revision.revision for revision in script.walk_revisions()}
    if current is not None and current not in known:
        where = shown_url(engine.url)
        raise DatabaseUnavailable(
            f"The database {where} was upgraded by a newer release of Axiom (its schema is at revision {current}; "
            f"this release knows up to {script.get_current_head()}). Run the newer release, as the other "
            "replicas on this database do.", database=where, revision=current,
        )


def _lock_for_migration(connection: Connection) -> None:
    """Held until the migration's transaction ends."""
    if connection.dialect.name == "postgresql":
        connection.execute(select(func.pg_advisory_xact_lock(_MIGRATION_LOCK)))
    else:
        # The driver would begin only at the first write; the schema check before it must be inside too.
        connection.exec_driver_sql("BEGIN IMMEDIATE")
