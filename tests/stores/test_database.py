"""The database layer on both engines: URLs, engine settings, migrations (and their lock), and the upgrade of
a data directory written by the release before the shared database."""

from __future__ import annotations

import socket
import sqlite3
import threading
from pathlib import Path

import psycopg
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from psycopg import errors as pg
from pydantic import ValidationError
from sqlalchemy import Engine, exc, func, insert, inspect, select, text

from backend.config import Settings
from backend.models import Chunk, Parent
from backend.stores.chats import ChatRecord, ChatStore
from backend.stores.database import (
    SQLITE_FILE,
    DatabaseUnavailable,
    alembic_config,
    create_database_engine,
    database_url,
    migrate,
    open_database,
    unavailable,
)
from backend.stores.documents import INDEXING, READY, DocumentStore, new_record
from backend.stores.jobs import JobStore
from backend.stores.memory import MemoryStore
from backend.stores.schema import metadata
from tests.support.postgres import PostgresServer, find_binaries


def test_the_url_is_sqlite_under_the_data_dir_by_default_and_psycopg_for_postgresql(tmp_path: Path) -> None:
    default = database_url(Settings(data_dir=tmp_path))
    assert default.render_as_string() == f"sqlite:///{tmp_path / SQLITE_FILE}"
    for scheme in ("postgresql", "postgres"):
        url = database_url(Settings(database_url=f"{scheme}://axiom:secret@db.internal:5433/axiom"))
        assert (url.drivername, url.username, url.password, url.host, url.port, url.database) == (
            "postgresql+psycopg", "axiom", "secret", "db.internal", 5433, "axiom",
        )
    explicit = database_url(Settings(database_url="postgresql+psycopg://db/axiom"))
    assert explicit.drivername == "postgresql+psycopg"


@pytest.mark.parametrize("url", ["mysql://db/axiom", "db.internal:5432", "mongodb://db"])
def test_an_engine_axiom_does_not_run_on_is_refused_at_start_up(url: str) -> None:
    with pytest.raises(ValidationError, match="postgresql://"):
        Settings(database_url=url)


def test_a_sqlite_too_old_for_the_stores_is_named_at_start_up(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 31, 1))
    monkeypatch.setattr(sqlite3, "sqlite_version", "3.31.1")
    with pytest.raises(DatabaseUnavailable, match=r"needs SQLite 3\.35 or newer; this Python has SQLite 3\.31\.1"):
        create_database_engine(f"sqlite:///{tmp_path / 'axiom.db'}")


def test_a_database_that_cannot_be_reached_is_named_at_start_up_without_its_password() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = Settings(database_url=f"postgresql://axiom:hunter2@127.0.0.1:{port}/axiom")

    with pytest.raises(DatabaseUnavailable) as refused:
        open_database(settings)

    assert f"postgresql+psycopg://axiom:***@127.0.0.1:{port}/axiom" in refused.value.message
    assert "hunter2" not in refused.value.message and "AXIOM_DATABASE_URL" in refused.value.message


@pytest.mark.timeout(120)  # without a connect timeout, libpq would wait for as long as the operating system does
def test_a_database_server_that_accepts_connections_but_never_answers_is_unavailable_not_a_hang(
    postgres_server,
) -> None:
    # A server of its own (postgres_server: skipped or failed as every PostgreSQL test is without the binaries),
    # so no other test's connection waits while it is frozen.
    server = PostgresServer.start(find_binaries())
    try:
        settings = Settings(database_url=server.create_database())
        with server.frozen(), pytest.raises(DatabaseUnavailable) as refused:
            open_database(settings)
    finally:
        server.stop()
    assert "timeout" in refused.value.message


def _refused_connection() -> psycopg.OperationalError:
    """What psycopg raises itself when no server answers: a real connection refused, without a SQLSTATE."""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(psycopg.OperationalError) as refused:
        psycopg.connect(f"postgresql://axiom@127.0.0.1:{port}/axiom", connect_timeout=5)
    assert refused.value.sqlstate is None
    return refused.value


def _locked_sqlite(tmp_path: Path) -> sqlite3.OperationalError:
    """A real "database is locked": a second writer that does not wait."""
    holder = sqlite3.connect(tmp_path / "locked.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(sqlite3.OperationalError, match="database is locked") as locked:
            sqlite3.connect(tmp_path / "locked.db", timeout=0).execute("BEGIN IMMEDIATE")
    finally:
        holder.close()
    return locked.value


def test_only_a_server_out_of_reach_is_unavailable_not_every_operational_error(tmp_path: Path) -> None:
    """psycopg makes deadlocks, timeouts and a full disk OperationalErrors too: bugs or faults to log
    and answer with 500, not "not reachable, try again"."""
    refused = _refused_connection()
    assert refused.sqlstate is None  # as every failure to connect: SQLAlchemy wraps it with no statement
    assert isinstance(unavailable(exc.OperationalError(None, None, refused)), DatabaseUnavailable)
    # Without a SQLSTATE on a statement, only a connection SQLAlchemy saw broken (checked below) is gone.
    assert unavailable(exc.OperationalError("SELECT 1", {}, pg.OperationalError("no SQLSTATE"))) is None
    away = [pg.AdminShutdown("terminating connection due to administrator command"),
            pg.CrashShutdown("crash"), pg.CannotConnectNow("the database system is starting up"),
            pg.ConnectionFailure("connection failure"), pg.ProtocolViolation("bad message")]
    faults = [pg.DeadlockDetected("deadlock detected"), pg.SerializationFailure("could not serialize access"),
              pg.QueryCanceled("canceling statement due to statement timeout"), pg.LockNotAvailable("lock"),
              pg.DiskFull("could not extend file"), pg.OutOfMemory("out of memory"), _locked_sqlite(tmp_path)]
    for orig in away:
        assert isinstance(unavailable(exc.OperationalError("SELECT 1", {}, orig)), DatabaseUnavailable), orig
    for orig in faults:
        wrapped = exc.OperationalError("SELECT 1", {}, orig)
        assert unavailable(wrapped) is None, orig
        # ...unless SQLAlchemy saw the connection broken with it: then it is gone, whatever the error said.
        wrapped.connection_invalidated = True
        assert isinstance(unavailable(wrapped), DatabaseUnavailable), orig


def test_sqlite_runs_in_wal_mode_with_foreign_keys_and_a_busy_timeout(tmp_path: Path) -> None:
    engine = open_database(Settings(data_dir=tmp_path / "data"))
    with engine.connect() as db:
        assert db.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert db.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert db.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000
    engine.dispose()
    assert (tmp_path / "data" / SQLITE_FILE).is_file()


def test_the_migrations_build_exactly_the_tables_the_stores_use(database: Engine) -> None:
    with database.connect() as db:
        differences = compare_metadata(MigrationContext.configure(db), metadata)
    assert differences == []
    assert set(inspect(database).get_table_names()) == {*metadata.tables, "alembic_version"}


def test_migrating_again_changes_nothing_and_keeps_the_rows(database: Engine, open_engine) -> None:
    created = ChatStore(database).create("kept")
    migrate(database)
    assert ChatStore(open_engine()).list() == [created]


def test_a_database_upgraded_by_a_newer_release_is_refused_saying_so(database: Engine, database_settings) -> None:
    """A replica of a newer release migrated the shared database; starting this release on it stops with a
    message saying that, not Alembic's "Can't locate revision", and changes nothing."""
    with database.begin() as db:
        db.execute(text("UPDATE alembic_version SET version_num = '9999'"))

    with pytest.raises(DatabaseUnavailable) as refused:
        open_database(database_settings)

    message = refused.value.message
    assert "upgraded by a newer release of Axiom" in message and "revision 9999" in message
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert f"knows up to {head}" in message
    with database.connect() as db:
        assert db.execute(text("SELECT version_num FROM alembic_version")).scalar_one() == "9999"


def test_processes_starting_together_migrate_once(database_settings: Settings) -> None:
    """Replicas starting at once on a new database: one creates the tables under the migration lock, the
    others wait and find them current (without the lock, the second CREATE TABLE fails)."""
    engines = [create_database_engine(database_url(database_settings)) for _ in range(4)]
    failures: list[BaseException] = []

    def start(engine: Engine) -> None:
        try:
            migrate(engine)
        except BaseException as failure:  # noqa: BLE001 - reported by the assert below
            failures.append(failure)

    threads = [threading.Thread(target=start, args=(engine,)) for engine in engines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    with engines[0].connect() as db:
        assert db.execute(text("SELECT COUNT(*) FROM alembic_version")).scalar_one() == 1
    for engine in engines:
        engine.dispose()


# The SQLite files as the release before the shared database wrote them: one file per store, these schemas.
# (Older files lack some columns and tables, e.g. parents.ocr or sessions: they get the defaults.)
LEGACY_CHATS = """
CREATE TABLE chats (
    id TEXT PRIMARY KEY, title TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL
);
INSERT INTO chats VALUES ('older', 'Older chat', 100.0, 300.0), ('newer', 'Newer chat', 200.0, 400.5);
"""
LEGACY_MEMORY = """
CREATE TABLE messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, session_id TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant')), content TEXT NOT NULL, metadata TEXT NOT NULL,
    timestamp TEXT NOT NULL
);
CREATE INDEX messages_session ON messages(session_id, seq);
CREATE TABLE sessions (session_id TEXT PRIMARY KEY, chat_id TEXT NOT NULL);
CREATE INDEX sessions_chat ON sessions(chat_id);
INSERT INTO messages (id, session_id, role, content, metadata, timestamp) VALUES
    ('m1', 'older', 'user', 'What fell?', '{}', '2024-01-15T10:30:00.123Z'),
    ('m2', 'older', 'assistant', 'Sales fell by 4 % [1].',
     '{"sources": [{"page": 3, "excerpt": "Rückgang"}]}', '2024-01-15T10:30:00.123Z'),
    ('m3', 'api-1', 'user', 'Another session', '{}', '2024-01-15T10:31:00.000Z'),
    ('m4', 'older', 'user', 'And then?', '{"answered": false}', '2024-01-15T10:29:00.000Z');
INSERT INTO sessions VALUES ('api-1', 'newer');
"""
LEGACY_DOCUMENTS = """
CREATE TABLE documents (
    document_id TEXT PRIMARY KEY, chat_id TEXT NOT NULL, filename TEXT NOT NULL, sha256 TEXT NOT NULL,
    file_type TEXT NOT NULL, size_bytes INTEGER NOT NULL, page_count INTEGER NOT NULL DEFAULT 0,
    chunk_count INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE UNIQUE INDEX documents_chat_sha ON documents(chat_id, sha256);
CREATE TABLE parents (
    parent_id TEXT PRIMARY KEY, document_id TEXT NOT NULL REFERENCES documents(document_id) ON DELETE CASCADE,
    seq INTEGER NOT NULL, page INTEGER NOT NULL, text TEXT NOT NULL, ocr INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX parents_document ON parents(document_id, seq);
CREATE TABLE jobs (
    job_id TEXT PRIMARY KEY, chat_id TEXT NOT NULL, filename TEXT NOT NULL, size_bytes INTEGER NOT NULL,
    state TEXT NOT NULL, document_id TEXT, error TEXT, created_at REAL NOT NULL
);
CREATE INDEX jobs_chat ON jobs(chat_id, state);
INSERT INTO documents VALUES
    ('d1', 'older', 'report.pdf', 'aa', 'pdf', 12345, 2, 7, 'ready', 150.0),
    ('d2', 'older', 'half.txt', 'bb', 'txt', 10, 1, 0, 'indexing', 160.0);
INSERT INTO parents VALUES ('d1-p1', 'd1', 1, 2, 'page two', 1), ('d1-p0', 'd1', 0, 1, 'page one', 0);
INSERT INTO jobs VALUES ('d1', 'older', 'report.pdf', 12345, 'ready', 'd1', NULL, 150.0);
"""


def test_the_recovery_sweep_finds_the_documents_still_indexing_by_an_index(tmp_path: Path) -> None:
    """Every replica asks every 30 s; the plan must not scan every document of every chat."""
    engine = create_database_engine(f"sqlite:///{tmp_path / 'axiom.db'}")
    migrate(engine)
    with engine.connect() as db:
        query = select(metadata.tables["documents"]).where(metadata.tables["documents"].c.status == INDEXING)
        compiled = query.compile(engine, compile_kwargs={"literal_binds": False})
        plan = db.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}", tuple(compiled.params.values())).all()
    engine.dispose()
    assert any("USING INDEX documents_status" in row[-1] for row in plan), plan


def write_legacy_data_dir(settings: Settings) -> None:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    for path, script in (
        (settings.chats_db_path, LEGACY_CHATS), (settings.memory_db_path, LEGACY_MEMORY),
        (settings.docstore_path, LEGACY_DOCUMENTS),
    ):
        with sqlite3.connect(path) as db:
            db.executescript(script)
        db.close()


def test_a_data_dir_of_the_previous_release_keeps_its_chats_conversations_and_documents(
    database_settings: Settings,
) -> None:
    write_legacy_data_dir(database_settings)

    engine = open_database(database_settings)
    chats, memory, documents = ChatStore(engine), MemoryStore(engine), DocumentStore(engine)

    assert chats.list() == [
        ChatRecord("newer", "Newer chat", 200.0, 400.5), ChatRecord("older", "Older chat", 100.0, 300.0),
    ]
    # Messages keep their order (not their timestamps'), content and metadata; sessions keep their chat.
    history = memory.history("older")
    assert [(m.id, m.role, m.content) for m in history] == [
        ("m1", "user", "What fell?"), ("m2", "assistant", "Sales fell by 4 % [1]."),
        ("m4", "user", "And then?"),
    ]
    assert history[1].metadata == {"sources": [{"page": 3, "excerpt": "Rückgang"}]}
    assert memory.chat_of("api-1") == "newer" and memory.has_conversation("newer")
    assert memory.has_conversation("older")  # the chat's own session, never bound, counts as the chat's
    # Only ready documents are listed; the one a crash left indexing is there for recovery to roll back.
    assert [(d.document_id, d.size_bytes, d.chunk_count, d.status) for d in documents.list("older")] == [
        ("d1", 12345, 7, READY)
    ]
    assert [d.document_id for d in documents.incomplete()] == ["d2"]
    assert documents.get("older", "d2").status == INDEXING
    assert documents.chat_parents("older") == [
        Parent("d1-p0", "d1", "report.pdf", 1, "page one"),
        Parent("d1-p1", "d1", "report.pdf", 2, "page two", ocr=True),
    ]
    assert JobStore(engine).get("older", "d1").state == "ready"
    # New rows follow the imported ones.
    memory.add("older", "assistant", "It rose again.")
    assert [m.id for m in memory.history("older")][:3] == ["m1", "m2", "m4"]
    assert chats.create("third").id == chats.list()[0].id
    engine.dispose()

    # The copy is made once, when the database is created: opening it again copies nothing twice.
    again = open_database(database_settings)
    with again.connect() as db:
        assert db.execute(select(func.count()).select_from(metadata.tables["messages"])).scalar_one() == 5
        assert db.execute(select(func.count()).select_from(metadata.tables["chats"])).scalar_one() == 3
    again.dispose()
    # The old files are left as they were.
    with sqlite3.connect(database_settings.memory_db_path) as old:
        assert old.execute("SELECT COUNT(*) FROM messages").fetchone() == (4,)
    old.close()



def test_documents_from_before_ocr_are_upgraded_as_read_from_a_text_layer(database_settings: Settings) -> None:
    database_settings.data_dir.mkdir(parents=True)
    with sqlite3.connect(database_settings.docstore_path) as old:
        old.executescript(LEGACY_DOCUMENTS.replace(", ocr INTEGER NOT NULL DEFAULT 0", "").replace(
            "('d1-p1', 'd1', 1, 2, 'page two', 1), ('d1-p0', 'd1', 0, 1, 'page one', 0)",
            "('d1-p0', 'd1', 0, 1, 'stored before OCR')",
        ))
    old.close()

    engine = open_database(database_settings)
    assert DocumentStore(engine).chat_parents("older") == [Parent("d1-p0", "d1", "report.pdf", 1, "stored before OCR")]
    engine.dispose()


def test_parents_and_chunks_stored_before_page_labels_are_cited_as_pages_after_the_upgrade(
    database_settings: Settings,
) -> None:
    """A database at revision 0002 (before labels) with a ready document: the upgrade keeps its rows, which read
    back without a label (cited "Page N"), and new rows keep theirs."""
    engine = create_database_engine(database_url(database_settings))
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0002")
        tables = metadata.tables
        connection.execute(insert(tables["documents"]).values(
            document_id="d1", chat_id="c", filename="report.pdf", sha256="aa", file_type="pdf", size_bytes=1,
            page_count=2, chunk_count=1, status=READY, created_at=1.0,
        ))
        # Only the columns revision 0002 has.
        connection.execute(text(
            "INSERT INTO parents (parent_id, document_id, seq, page, text) VALUES ('d1-p0', 'd1', 0, 2, 'old')"
        ))
        connection.execute(text(
            "INSERT INTO chunks (chunk_id, document_id, seq, parent_id, page, text) "
            "VALUES ('d1-p0-c0', 'd1', 0, 'd1-p0', 2, 'old')"
        ))

    migrate(engine)
    store = DocumentStore(engine)

    (parent,) = store.chat_parents("c")
    assert parent == Parent("d1-p0", "d1", "report.pdf", 2, "old") and parent.cited_page == "Page 2"
    assert store.chunks("c") == [Chunk("d1-p0-c0", "d1-p0", "d1", "report.pdf", 2, "old")]
    deck = new_record(document_id="d2", chat_id="c", filename="deck.pptx", sha256="bb", file_type="pptx",
                      size_bytes=1, page_count=1)
    store.begin(deck)
    slide = Parent("d2-p0", "d2", "deck.pptx", 3, "new", label="Slide 3")
    store.mark_ready(deck, [slide], [Chunk("d2-p0-c0", "d2-p0", "d2", "deck.pptx", 3, "new", label="Slide 3")])
    assert store.parents(["d2-p0"])["d2-p0"].cited_page == "Slide 3"
    assert store.chunks("c")[-1].label == "Slide 3"

    with engine.begin() as connection:  # and back down: the columns go, the rows stay
        config.attributes["connection"] = connection
        command.downgrade(config, "0002")
    assert "label" not in {column["name"] for column in inspect(engine).get_columns("parents")}
    with engine.connect() as db:
        assert db.execute(text("SELECT COUNT(*) FROM chunks")).scalar_one() == 2
    engine.dispose()


def test_a_job_file_waiting_when_the_pieces_revision_runs_is_kept(database_settings: Settings) -> None:
    """Revision 0004 moves each waiting job's file from ``job_files.data`` into one piece (and 0008, adding the
    password column and dropping it again, keeps it: SQLite's batch mode must not rebuild ``job_files``, whose
    pieces cascade)."""
    database_settings.data_dir.mkdir(parents=True)
    engine = create_database_engine(database_url(database_settings))
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0002")
        connection.execute(text(
            "INSERT INTO jobs (job_id, chat_id, filename, size_bytes, state, created_at) "
            "VALUES ('j1', 'chat1', 'notes.txt', 7, 'queued', 1.0)"
        ))
        connection.execute(
            text("INSERT INTO job_files (job_id, filename, data) VALUES ('j1', 'dir/notes.txt', :data)"),
            {"data": b"waiting"},
        )
    migrate(engine)

    with engine.begin() as connection:  # and back to before the password column: the file waits on
        config.attributes["connection"] = connection
        command.downgrade(config, "0007")
        assert connection.execute(text("SELECT data FROM job_file_pieces")).scalars().all() == [b"waiting"]
    migrate(engine)

    claimed = JobStore(engine).claim("worker", 30.0)
    assert claimed is not None and (claimed.filename, claimed.data) == ("dir/notes.txt", b"waiting")
    assert claimed.password is None
    engine.dispose()
