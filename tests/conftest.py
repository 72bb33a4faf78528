from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import Engine

from backend.config import Settings
from backend.container import Services, build_services
from backend.stores.database import create_database_engine, database_url, migrate
from tests.support.postgres import DATABASES, PostgresServer, find_binaries

# PostgreSQL cases fail when its binaries are missing (make test installs them), unless this says to skip.
SKIP_POSTGRESQL = "AXIOM_TEST_SKIP_POSTGRESQL"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The public test data folder: $AXIOM_SHARED_DATA, else shared/data beside the repository."""
    default = Path(__file__).resolve().parents[2] / "shared" / "data"
    path = Path(os.environ.get("AXIOM_SHARED_DATA", default))
    if not path.is_dir():
        pytest.skip(
            f"public test data not found at {path}; set AXIOM_SHARED_DATA to the folder holding pdfs/"
        )
    return path


@pytest.fixture(scope="session")
def pdfs(shared_data: Path) -> Path:
    return shared_data / "pdfs"


@pytest.fixture(scope="session")
def postgres_server():
    """One real PostgreSQL server for the whole run, started when a test first needs it."""
    if os.environ.get(SKIP_POSTGRESQL):
        pytest.skip(f"{SKIP_POSTGRESQL} is set")
    binaries = find_binaries()
    if binaries is None:
        pytest.fail(
            "PostgreSQL's binaries were not found: `make test` installs Debian's postgresql "
            "(scripts/install-postgresql.sh); or set AXIOM_POSTGRESQL_BIN, "
            f"or {SKIP_POSTGRESQL}=1 to skip these tests"
        )
    server = PostgresServer.start(binaries)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def new_database_url(request):
    """``new_database_url(engine)``: the AXIOM_DATABASE_URL of a new, empty database on that engine ("sqlite":
    None, the SQLite file under the data directory)."""

    def new(engine: str) -> str | None:
        if engine == "sqlite":
            return None
        return request.getfixturevalue("postgres_server").create_database()

    return new


@pytest.fixture(params=DATABASES)
def database_settings(request, tmp_path, new_database_url) -> Settings:
    """Settings naming a new database on each engine in turn."""
    return Settings(data_dir=tmp_path / "data", database_url=new_database_url(request.param))


@pytest.fixture
def open_engine(database_settings):
    """``open_engine()``: a new engine (as a restarted process has) on the test's database, migrated."""
    engines = []

    def open_() -> Engine:
        engine = create_database_engine(database_url(database_settings))
        engines.append(engine)
        migrate(engine)
        return engine

    yield open_
    for engine in engines:
        engine.dispose()


@pytest.fixture
def database(open_engine) -> Engine:
    """The test's database on each engine in turn (SQLite, PostgreSQL), migrated and empty."""
    return open_engine()


@pytest.fixture(scope="session")
def embedder(tmp_path_factory):
    """The bundled MiniLM, loaded once for the whole run, with its own embedding cache."""
    from backend.config import Settings
    from backend.embeddings import build_embedder

    return build_embedder(Settings(data_dir=tmp_path_factory.mktemp("embedder")))


@pytest.fixture(scope="session")
def bundled_llm():
    """The bundled SmolLM2-135M on llama.cpp, loaded once for the whole run. Its first-token timeout is generous
    because a test machine may be busy; the timeout itself has its own tests in tests/llm/."""
    from backend.config import Settings
    from backend.llm.factory import build_llm

    return build_llm(Settings(llm_stall_timeout=60))


@pytest.fixture(scope="session")
def document_reader():
    """The worker process that reads uploaded files, started once for the whole run (each container would
    otherwise start its own)."""
    from backend.ingest.reader import DocumentReader, ReaderLimits

    reader = DocumentReader(ReaderLimits())
    yield reader
    reader.close()


@pytest.fixture
def make_services(embedder, bundled_llm, document_reader):
    """Builds the real container (Chroma, BM25, SQLite, memory, graph) under a directory, sharing the loaded
    models; ``llm=`` swaps the language model."""
    from backend.config import Settings
    from backend.container import build_services

    def make(data_dir: Path, llm=None, **overrides):
        return build_services(
            Settings(data_dir=data_dir, **overrides), embedder=embedder, llm=llm or bundled_llm,
            reader=document_reader,
        )

    return make


@pytest.fixture
def services(tmp_path, make_services):
    return make_services(tmp_path / "data")


# Short answers from few sources, generated once (no regeneration): each real answer costs a few seconds of the
# 135M model instead of tens, which is what these tests can afford. What they check does not depend on length.
TEST_SETTINGS = {"answer_max_tokens": 48, "context_budget_tokens": 500, "max_retries": 0}


@pytest.fixture(scope="session")
def api_llm():
    """The bundled SmolLM2 with a first-token timeout no busy test machine reaches, on one thread (on a machine
    whose cores are shared with other work, llama.cpp's threads spin waiting for each other; one does not)."""
    from backend.llm.factory import build_llm

    return build_llm(Settings(llm_stall_timeout=600, llm_threads=1))


@pytest.fixture(scope="session")
def build_app_services(embedder, api_llm, document_reader):
    """Builds a real container under a directory, sharing the session's loaded models; ``llm=`` swaps the LLM.
    (make_services above does the same per test; the HTTP and browser tests' servers live for a whole module.)"""

    def build(data_dir: Path, llm=None, **overrides) -> Services:
        settings = Settings(data_dir=data_dir, **{**TEST_SETTINGS, **overrides})
        return build_services(settings, embedder=embedder, llm=llm or api_llm, reader=document_reader)

    return build
