from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.chroma_server import ChromaServer, start_chroma_server


@pytest.fixture(scope="module")
def chroma(tmp_path_factory) -> Iterator[ChromaServer]:
    """A real `chroma run` server for the module's tests (which may stop and restart it)."""
    server = start_chroma_server(tmp_path_factory.mktemp("chroma"))
    yield server
    server.stop()
