"""A real `chroma run` server on a free loopback port: for tests of the server mode and of Chroma down."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from backend.config import Settings
from backend.stores.chroma import ChromaStore
from tests.llm.support import free_port

SERVER_START_TIMEOUT_S = 30.0
CHROMA_CLI = Path(sys.executable).with_name("chroma")


@dataclass
class ChromaServer:
    host: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    start_seconds: float

    def settings(self, **overrides) -> Settings:
        return Settings(chroma_host=self.host, chroma_port=self.port, **overrides)

    @contextmanager
    def frozen(self) -> Iterator[None]:
        """The server stopped mid-flight (SIGSTOP), as a hung process or network peer: connections are still
        accepted but never answered. It always resumes, so a failing test leaves no frozen process behind."""
        self.process.send_signal(signal.SIGSTOP)
        try:
            yield
        finally:
            self.process.send_signal(signal.SIGCONT)

    @contextmanager
    def down(self) -> Iterator[None]:
        """The server stopped for the block, then started again on the same port with its data: a restart."""
        self.stop()
        try:
            yield
        finally:
            self.process = _launch(self.host, self.port, self.log_path.parent).process

    def going_down_once_stored(self, vectors: ChromaStore, monkeypatch: pytest.MonkeyPatch) -> threading.Event:
        """Stand-in for an outage that begins the moment the server has taken a file's vectors (it cannot be timed
        from outside): the server stops, set to the event, and the storing meets it unreachable, its vectors left
        in it. Once only; ``down()`` starts it again."""
        add = vectors.add
        stopped = threading.Event()

        def add_then_stop(chat_id, chunks, embeddings) -> None:
            add(chat_id, chunks, embeddings)
            monkeypatch.setattr(vectors, "add", add)
            self.stop()
            stopped.set()
            add(chat_id, chunks, embeddings)  # unreachable now

        monkeypatch.setattr(vectors, "add", add_then_stop)
        return stopped

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_chroma_server(data_dir: Path, host: str = "127.0.0.1") -> ChromaServer:
    """Starts a server persisting under ``data_dir`` and returns once it answers its heartbeat."""
    return _launch(host, free_port(), data_dir)


def _launch(host: str, port: int, data_dir: Path) -> ChromaServer:
    log_path = data_dir / "server.log"
    started = time.perf_counter()
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [str(CHROMA_CLI), "run", "--path", str(data_dir / "db"), "--host", host, "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = ChromaServer(host, port, process, log_path, start_seconds=0.0)
    deadline = started + SERVER_START_TIMEOUT_S
    while time.perf_counter() < deadline and process.poll() is None:
        try:
            in_url = f"[{host}]" if ":" in host else host  # an IPv6 address
            httpx.get(f"http://{in_url}:{port}/api/v2/heartbeat", timeout=1.0).raise_for_status()
            server.start_seconds = time.perf_counter() - started
            return server
        except httpx.HTTPError:
            time.sleep(0.1)
    server.stop()
    log_text = log_path.read_text()
    pytest.fail(f"Chroma server did not answer its heartbeat within {SERVER_START_TIMEOUT_S}s:\n{log_text}")
