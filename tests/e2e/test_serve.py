"""`axiom serve` as a user runs it: a separate process built from environment settings, driven over HTTP."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.api.support import stream_events, upload_paths
from tests.support.serve_process import serve_process

PAPER = "academic_2col_naacl06-shinyama.pdf"
QUESTION = "What is preemptive information extraction?"
# Short answers and one generation per question keep the bundled model's part to seconds; a generous first-token
# timeout and one thread keep it working on a machine busy with other work.
ENVIRONMENT = {
    "AXIOM_ANSWER_MAX_TOKENS": "48", "AXIOM_CONTEXT_BUDGET_TOKENS": "500", "AXIOM_MAX_RETRIES": "0",
    "AXIOM_LLM_STALL_TIMEOUT": "600", "AXIOM_LLM_THREADS": "1",
}


@contextmanager
def axiom_serve(data_dir: Path, log_path: Path) -> Iterator[str]:
    command = [str(Path(sys.executable).with_name("axiom")), "serve"]
    environment = {**os.environ, **ENVIRONMENT, "AXIOM_DATA_DIR": str(data_dir)}
    with serve_process("axiom serve", command, data_dir=data_dir, environment=environment, log_path=log_path) as served:
        yield served.url


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
