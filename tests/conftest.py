from __future__ import annotations

import os
from pathlib import Path

import pytest


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

    return build_llm(Settings(llm_first_token_timeout=60))


@pytest.fixture
def make_services(embedder, bundled_llm):
    """Builds the real container (Chroma, BM25, SQLite, memory, graph) under a directory, sharing the loaded
    models; ``llm=`` swaps the language model."""
    from backend.config import Settings
    from backend.container import build_services

    def make(data_dir: Path, llm=None, **overrides):
        return build_services(Settings(data_dir=data_dir, **overrides), embedder=embedder, llm=llm or bundled_llm)

    return make


@pytest.fixture
def services(tmp_path, make_services):
    return make_services(tmp_path / "data")
