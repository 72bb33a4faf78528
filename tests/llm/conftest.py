from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest


@pytest.fixture
def silent_server_url() -> Iterator[str]:
    """A server that accepts connections and never answers: the kernel completes the handshake for a listening
    socket and buffers the request, and nothing ever reads or replies."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
