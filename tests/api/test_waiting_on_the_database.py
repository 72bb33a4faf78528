"""A question whose database work waits (SQLite's write lock held by a long write, for up to its 30 s busy timeout;
a PostgreSQL server slow to answer) must not stop the server answering everyone else meanwhile."""

from __future__ import annotations

import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from sqlalchemy import event

from backend.stores.database import SQLITE_FILE
from tests.api.server import serve
from tests.rag.scripted import ScriptedLLM
from tests.support.waiting import wait_for

OPENAI_BODY = {"model": "axiom", "messages": [{"role": "user", "content": "Hello!"}]}


@pytest.mark.parametrize(
    ("path", "body"),
    [("/chat/", {"message": "Hello!", "chat_id": "waits"}), ("/chat/waits/stream", {"message": "Hello!"}),
     ("/chat/stream", {"message": "Hello!", "collection_name": "chat_waits"}), ("/v1/chat/completions", OPENAI_BODY)],
)
def test_a_question_waiting_for_the_database_leaves_the_server_answering(build_app_services, tmp_path, path, body):
    services = build_app_services(tmp_path / "data", llm=ScriptedLLM())
    writing = threading.Event()

    def note_the_sessions_write(_connection, _cursor, statement, *_args) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO SESSIONS"):
            writing.set()

    event.listen(services.database, "before_cursor_execute", note_the_sessions_write)
    with serve(services) as running, httpx.Client(base_url=running.url, timeout=120) as client:
        holder = sqlite3.connect(tmp_path / "data" / SQLITE_FILE, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # the write lock, as a long write holds it
        try:
            with ThreadPoolExecutor(2) as pool:
                asked = pool.submit(client.post, path, json=body)
                wait_for(writing.is_set, "the question's session to wait for the write lock")
                other = pool.submit(client.get, "/v1/models")
                wait_for(other.done, "another request to be answered while the question waits")
                assert other.result().status_code == 200 and not asked.done()
                holder.rollback()
                assert asked.result().status_code == 200
        finally:
            holder.close()
