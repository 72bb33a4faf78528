from __future__ import annotations

from pathlib import Path

import pytest

from backend.config import Settings
from backend.container import Services, build_services

# Short answers from few sources, generated once (no regeneration): each real answer costs a few seconds of the
# 135M model instead of tens, which is what these tests can afford. What they check does not depend on length.
TEST_SETTINGS = {"answer_max_tokens": 48, "context_budget_tokens": 500, "max_retries": 0}


@pytest.fixture(scope="session")
def api_llm():
    """The bundled SmolLM2 with a first-token timeout no busy test machine reaches, on one thread (on a machine
    whose cores are shared with other work, llama.cpp's threads spin waiting for each other; one does not)."""
    from backend.llm.factory import build_llm

    return build_llm(Settings(llm_first_token_timeout=600, llm_threads=1))


@pytest.fixture(scope="session")
def build_app_services(embedder, api_llm):
    """Builds a real container under a directory, sharing the session's loaded models; ``llm=`` swaps the LLM.
    (tests/conftest.py's make_services does the same per test; these servers live for a whole module.)"""

    def build(data_dir: Path, llm=None, **overrides) -> Services:
        settings = Settings(data_dir=data_dir, **{**TEST_SETTINGS, **overrides})
        return build_services(settings, embedder=embedder, llm=llm or api_llm)

    return build
