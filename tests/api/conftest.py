"""The HTTP client the API test modules share; each module starts its own ``server`` (tests/api/server.py)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest


@pytest.fixture
def client(server) -> Iterator[httpx.Client]:
    """A client of the module's server. The timeout only bounds a hang: answers from the real model on a busy
    machine may take minutes."""
    with httpx.Client(base_url=server.url, timeout=600) as client:
        yield client
