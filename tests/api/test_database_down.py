"""The database server going away under a running service: a real PostgreSQL (its own, so no other test sees it
down) is shut down after a file was uploaded, and requests go over HTTP. Every route that needs the database
answers 503 DATABASE_UNAVAILABLE with Retry-After, not a bare 500; once the server is back, the same service
answers again without a restart, with nothing lost. Any other database failure (a statement timeout, a
deadlock) is a bug or a fault to fix, not an outage: a 500, logged whole."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import psycopg
import pytest

from tests.api.server import serve
from tests.api.support import assert_error, stream_events, upload
from tests.support.postgres import PostgresServer, find_binaries

CHAT = "notes"
NOTES = (
    "axolotl.txt",
    b"The axolotl is a salamander that keeps its larval gills for its whole life. Axolotls can regrow their limbs.",
)
QUESTION = "What can axolotls regrow?"


@dataclass(frozen=True)
class Service:
    url: str
    database: PostgresServer
    database_url: str


@pytest.fixture(scope="module")
def service(postgres_server, build_app_services, tmp_path_factory) -> Iterator[Service]:
    # postgres_server: skipped or failed the way every PostgreSQL test is when the binaries are missing.
    database = PostgresServer.start(find_binaries())
    try:
        database_url = database.create_database()
        services = build_app_services(tmp_path_factory.mktemp("axiom"), database_url=database_url)
        with serve(services) as running:
            with httpx.Client(base_url=running.url, timeout=300) as client:
                assert upload(client, CHAT, NOTES).status_code == 200
            yield Service(running.url, database, database_url)
    finally:
        database.stop()


def assert_database_unavailable(response: httpx.Response) -> None:
    assert_error(response, 503, "DATABASE_UNAVAILABLE")
    assert response.headers["retry-after"].isdigit()
    assert "database is not reachable" in response.json()["message"]


def test_with_the_database_down_requests_fail_with_503_and_work_again_once_it_is_back(service):
    ask = {"message": QUESTION, "chat_id": CHAT, "session_id": "during-outage"}
    with httpx.Client(base_url=service.url, timeout=600) as client:
        paths = client.get("/openapi.json").json()["paths"]
        for path, method in [("/health", "get"), ("/chats", "get"), ("/chat/{chat_id}/documents", "get"),
                             ("/chat/history/{session_id}", "get"), ("/chat/", "post"),
                             ("/chat/{chat_id}/stream", "post"), ("/chat/{chat_id}/documents", "post")]:
            declared = paths[path][method]["responses"]["503"]  # as the document says, for each request below
            assert "DATABASE_UNAVAILABLE" in declared["description"] and "Retry-After" in declared["headers"]
        with service.database.down():
            assert_database_unavailable(client.get("/health"))  # a load balancer's check sees it too
            assert_database_unavailable(client.get("/chats"))
            assert_database_unavailable(client.get(f"/chat/{CHAT}/documents"))
            assert_database_unavailable(client.get("/chat/history/during-outage"))
            assert_database_unavailable(client.post("/chat/", json=ask))
            assert_database_unavailable(client.post(f"/chat/{CHAT}/stream", json={"message": QUESTION}))
            assert_database_unavailable(upload(client, CHAT, ("other.txt", b"Newts are salamanders too.")))

        # The same service, not restarted: its pool's dead connections are replaced.
        assert [d["name"] for d in client.get(f"/chat/{CHAT}/documents").json()["documents"]] == [NOTES[0]]
        response = client.post("/chat/", json=ask)
        assert response.status_code == 200, response.text
        assert {source["filename"] for source in response.json()["sources"]} == {NOTES[0]}
        events = stream_events(client, f"/chat/{CHAT}/stream", {"message": QUESTION, "session_id": "after"})
        assert events[-1][0] == "done"


def test_a_statement_timeout_is_an_internal_error_not_the_database_unavailable(service):
    """psycopg's QueryCanceled is an OperationalError, as a refused connection is; the server answered, though:
    a 500 INTERNAL_ERROR, not "not reachable, try again"."""
    with psycopg.connect(service.database_url, autocommit=True) as admin:
        name = admin.execute("SELECT current_database()").fetchone()[0]
        # The service's pooled connections are closed each time, so the ones it opens next take the setting.
        close_others = ("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        admin.execute(f'ALTER DATABASE "{name}" SET statement_timeout = 500')
        admin.execute(close_others)
        try:
            with psycopg.connect(service.database_url) as holder, holder.transaction():
                holder.execute("LOCK TABLE chats IN ACCESS EXCLUSIVE MODE")  # the listing waits, then times out
                with httpx.Client(base_url=service.url, timeout=60) as client:
                    assert_error(client.get("/chats"), 500, "INTERNAL_ERROR")
        finally:
            admin.execute(f'ALTER DATABASE "{name}" RESET statement_timeout')
            admin.execute(close_others)
