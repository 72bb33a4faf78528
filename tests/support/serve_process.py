"""`axiom serve` as a separate process on a free loopback port, for the end-to-end tests: started from its data
directory (so no .env of the repository is read), waited for until /health answers, stopped with SIGINT."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.llm.support import free_port
from tests.support.waiting import BACKGROUND_WAIT_SECONDS, wait_for


@dataclass
class ServeProcess:
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path


@contextmanager
def serve_process(
    name: str, command: Sequence[str], *, data_dir: Path, environment: Mapping[str, str], log_path: Path,
    timeout: float = BACKGROUND_WAIT_SECONDS,
) -> Iterator[ServeProcess]:
    """Runs ``command`` (an `axiom serve` without its port) with ``--port`` added and ``environment`` as its whole
    environment; ``name`` says which server failed when it exits before answering."""
    port = free_port()
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [*command, "--port", str(port)], cwd=data_dir, env=dict(environment), stdout=log,
            stderr=subprocess.STDOUT,
        )
    running = ServeProcess(f"http://127.0.0.1:{port}", process, log_path)

    def healthy() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"{name} exited with {process.returncode}:\n{log_path.read_text()}")
        try:
            return httpx.get(f"{running.url}/health").status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for(healthy, f"{name} to start", timeout=timeout)
        yield running
    finally:
        stop_serving(process)


def stop_serving(process: subprocess.Popen) -> None:
    """Stops a server as Ctrl+C does, then kills it if it is still there after a minute."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
