"""Runs the real app under uvicorn on a free loopback port, in a thread of the test process.

In-process so tests can look at what the server's parts did (a scripted LLM's closed streams, the stores), while
every request still goes through a real socket, HTTP parser and event loop.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn

from backend.api.app import create_app
from backend.api.settings import ApiSettings
from backend.container import Services

_START_TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class RunningServer:
    url: str
    services: Services


@contextmanager
def serve(services: Services, api_settings: ApiSettings | None = None) -> Iterator[RunningServer]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        create_app(services=services, api_settings=api_settings or ApiSettings()),
        log_level="warning",
        # Open streams are cut after this long at shutdown, so a test that leaves one open cannot hang the run.
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + _START_TIMEOUT_SECONDS
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield RunningServer(f"http://127.0.0.1:{listener.getsockname()[1]}", services)
    finally:
        server.should_exit = True
        thread.join()
        listener.close()
