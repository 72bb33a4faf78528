"""Two `axiom serve` replicas sharing one PostgreSQL and one `chroma run`, driven over HTTP on loopback ports:
what one replica writes, the other serves at once, and a replica killed (-9) while it indexes a large PDF
leaves a job that the other replica takes over and finishes, with nothing half-indexed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import chromadb
import httpx
import pytest
from sqlalchemy import create_engine, select

from backend.ids import collection_name
from backend.stores.database import database_url
from backend.stores.schema import jobs
from tests.api.support import upload, upload_paths
from tests.e2e.test_serve import ENVIRONMENT
from tests.support.chroma_server import start_chroma_server
from tests.support.serve_process import serve_process
from tests.support.waiting import wait_for

REPOSITORY = Path(__file__).resolve().parents[2]
PAPER = "academic_2col_naacl06-shinyama.pdf"
LARGE = "long_us_irs_irm_2.3.59_400p.pdf"
QUESTION = "What is preemptive information extraction?"
CHAT = "team"
NOTES = (
    "axolotl.txt",
    (
        b"The axolotl is a salamander that keeps its larval gills for its whole life. Axolotls can regrow their "
        b"limbs, their hearts and even parts of their brains."
    ),
)
# A dead replica's job is taken over this long after its last heartbeat.
LEASE_SECONDS = 5
# Reading and embedding 400 pages on a busy two-core machine: a bound for a hang, not a speed expectation.
INDEX_TIMEOUT = 1800


@dataclass
class Replica:
    name: str
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def client(self, timeout: float = 600) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=timeout)


@contextmanager
def replica(name: str, data_dir: Path, environment: dict[str, str]) -> Iterator[Replica]:
    data_dir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "backend.cli", "serve", "--host", "127.0.0.1"]
    env = {**os.environ, **ENVIRONMENT, **environment, "AXIOM_DATA_DIR": str(data_dir), "PYTHONPATH": str(REPOSITORY)}
    with serve_process(f"replica {name}", command, data_dir=data_dir, environment=env,
                       log_path=data_dir / "serve.log", timeout=600) as served:
        yield Replica(name, served.url, served.process, served.log_path)


@dataclass
class Deployment:
    a: Replica
    b: Replica
    database_url: str
    chroma_port: int


@pytest.fixture(scope="module")
def deployment(postgres_server, tmp_path_factory) -> Iterator[Deployment]:
    url = postgres_server.create_database()
    chroma = start_chroma_server(tmp_path_factory.mktemp("chroma"))
    environment = {
        "AXIOM_DATABASE_URL": url, "AXIOM_CHROMA_HOST": chroma.host, "AXIOM_CHROMA_PORT": str(chroma.port),
        "AXIOM_INGEST_LEASE_SECONDS": str(LEASE_SECONDS),
    }
    try:
        with ExitStack() as replicas:
            a = replicas.enter_context(replica("A", tmp_path_factory.mktemp("replica-a"), environment))
            b = replicas.enter_context(replica("B", tmp_path_factory.mktemp("replica-b"), environment))
            yield Deployment(a, b, url, chroma.port)
    finally:
        chroma.stop()


def ask(client: httpx.Client, session_id: str, question: str = QUESTION) -> dict:
    response = client.post("/chat/", json={"message": question, "chat_id": CHAT, "session_id": session_id})
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.slow
def test_upload_through_one_replica_ask_through_the_other_delete_through_either(deployment, pdfs):
    with deployment.a.client() as a, deployment.b.client() as b:
        (document,) = upload_paths(a, CHAT, pdfs / PAPER).json()["uploaded"]
        # A second document, so the chat is not empty after the delete and questions still search it.
        assert upload(a, CHAT, NOTES).status_code == 200

        answer = ask(b, "across")
        assert answer["sources"] and {s["filename"] for s in answer["sources"]} == {PAPER}
        history = a.get("/chat/history/across").json()["messages"]
        assert [(m["role"], m["content"]) for m in history] == [("user", QUESTION), ("assistant", answer["answer"])]
        assert [d["name"] for d in a.get(f"/chat/{CHAT}/documents").json()["documents"]] == [PAPER, NOTES[0]]
        assert CHAT in {c["id"] for c in b.get("/chats").json()["chats"]}

        assert b.delete(f"/chat/{CHAT}/documents/{document['id']}").status_code == 200
        assert a.get(f"/chat/{CHAT}/documents/{document['id']}").status_code == 404
        assert PAPER not in {s["filename"] for s in ask(a, "after-delete")["sources"]}
        assert ask(a, "notes", "What can axolotls regrow?")["sources"][0]["filename"] == NOTES[0]


@pytest.mark.slow
def test_a_replica_killed_while_indexing_leaves_the_job_to_the_other(deployment, pdfs):
    with deployment.a.client() as a:
        response = upload_paths(a, CHAT, pdfs / LARGE, background="true")
    assert response.status_code == 202, response.text
    (job,) = response.json()["jobs"]
    engine = create_engine(database_url_of(deployment))
    try:
        def holder() -> str | None:
            with engine.connect() as db:
                row = db.execute(select(jobs.c.state, jobs.c.claimed_by).where(jobs.c.job_id == job["id"])).one()
            return row.claimed_by if row.state == "indexing" else None

        claimed_by = wait_for(holder, "a worker to claim the job", timeout=120)
    finally:
        engine.dispose()
    # Whichever replica claimed it is killed mid-way; the other must take over.
    pids = {deployment.a.process.pid: deployment.a, deployment.b.process.pid: deployment.b}
    doomed = pids[int(claimed_by.split(":")[1])]
    survivor = deployment.b if doomed is deployment.a else deployment.a
    with survivor.client(timeout=60) as client:
        percents: list[int] = []

        def job_state() -> dict:
            response = client.get(f"/chat/{CHAT}/documents/{job['id']}")
            assert response.status_code == 200, response.text
            percents.append(response.json()["percent"])
            return response.json()

        # Killed once it is well into the work (its progress, written by its heartbeat, seen by the other).
        wait_for(lambda: job_state()["percent"] >= 20, "the job's progress", timeout=INDEX_TIMEOUT)
        doomed.process.send_signal(signal.SIGKILL)
        doomed.process.wait()

        def finished() -> dict | None:
            state = job_state()
            return state if state["status"] not in ("queued", "indexing") else None

        state = wait_for(finished, "the survivor to finish the job", timeout=INDEX_TIMEOUT)
        assert state["status"] == "ready", state  # retried from the start by the survivor's worker
        assert percents == sorted(percents), percents  # the retry's percent shows once it passes the first's
        documents = client.get(f"/chat/{CHAT}/documents").json()["documents"]
        assert [(d["id"], d["chunk_count"]) for d in documents if d["name"] == LARGE] == [
            (job["id"], state["chunk_count"])
        ]
    vectors = chromadb.HttpClient(host="127.0.0.1", port=deployment.chroma_port).get_collection(collection_name(CHAT))
    stored = vectors.get(where={"document_id": job["id"]}, include=[])["ids"]
    assert len(stored) == len(set(stored)) == state["chunk_count"]  # nothing twice, nothing half


def database_url_of(deployment: Deployment) -> str:
    from backend.config import Settings

    return database_url(Settings(database_url=deployment.database_url)).render_as_string(hide_password=False)
