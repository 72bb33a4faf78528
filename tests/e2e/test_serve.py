"""`axiom serve` as a user runs it: a separate process built from environment settings, driven over HTTP."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.api.support import stream_events, upload_paths, wait_for

PAPER = "academic_2col_naacl06-shinyama.pdf"
QUESTION = "What is preemptive information extraction?"
# Short answers and one generation per question keep the bundled model's part to seconds; a generous first-token
# timeout and one thread keep it working on a machine busy with other work.
ENVIRONMENT = {
    "AXIOM_ANSWER_MAX_TOKENS": "48", "AXIOM_CONTEXT_BUDGET_TOKENS": "500", "AXIOM_MAX_RETRIES": "0",
    "AXIOM_LLM_STALL_TIMEOUT": "600", "AXIOM_LLM_THREADS": "1",
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def axiom_serve(data_dir: Path, log_path: Path) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [str(Path(sys.executable).with_name("axiom")), "serve", "--port", str(port)]
    environment = {**os.environ, **ENVIRONMENT, "AXIOM_DATA_DIR": str(data_dir)}
    # Run from the data directory, so no .env of the repository is read.
    with log_path.open("ab") as log:
        process = subprocess.Popen(command, cwd=data_dir, env=environment, stdout=log, stderr=subprocess.STDOUT)

    def healthy() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"axiom serve exited with {process.returncode}:\n{log_path.read_text()}")
        try:
            return httpx.get(f"{url}/health").status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for(healthy, "axiom serve to start")
        yield url
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.mark.slow
def test_documents_and_conversations_survive_a_restart(tmp_path, pdfs):
    log_path = tmp_path / "serve.log"
    with axiom_serve(tmp_path, log_path) as url, httpx.Client(base_url=url, timeout=600) as client:
        (document,) = upload_paths(client, "e2e", pdfs / PAPER).json()["uploaded"]
        events = stream_events(client, "/chat/e2e/stream", {"message": QUESTION, "session_id": "e2e-session"})
        assert events[-1][0] == "done"
        answer = events[-1][1]["answer"]
        assert "text/html" in client.get("/docs").headers["content-type"]

    with axiom_serve(tmp_path, log_path) as url, httpx.Client(base_url=url, timeout=60) as client:
        health = client.get("/health").json()
        assert health["documents"] == 1 and health["chunks"] == document["chunk_count"]
        assert [d["id"] for d in client.get("/chat/e2e/documents").json()["documents"]] == [document["id"]]
        messages = client.get("/chat/history/e2e-session").json()["messages"]
        assert [(m["role"], m["content"]) for m in messages] == [("user", QUESTION), ("assistant", answer)]

    assert "Traceback" not in log_path.read_text()
