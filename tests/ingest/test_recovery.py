"""Replicas on one PostgreSQL database: an upload a dead replica was storing within its request is rolled back by
the others (backend/ingest/recovery.py) as soon as it is known dead, and one a live replica is storing never is."""

from __future__ import annotations

import concurrent.futures

import pytest

from backend.ingest.recovery import RecoverySweep
from backend.retrieval.tokenize import Tokenizer
from backend.stores.bm25 import BM25Store
from backend.stores.documents import INDEXING
from tests.support.replicas import replica_with
from tests.support.storing_process import left_behind_now, process_storing
from tests.support.waiting import wait_for


@pytest.fixture
def replica(tmp_path, make_services, new_database_url):
    """This test's replica on a new PostgreSQL database."""
    services = make_services(tmp_path / "data", database_url=new_database_url("postgresql"))
    yield services
    services.database.dispose()


def test_a_live_replicas_sweep_rolls_back_what_a_dead_replica_was_storing(replica):
    url = replica.database.url.render_as_string(hide_password=False)
    sweep = RecoverySweep(replica.ingestion, replica.jobs, every_seconds=0.1)
    try:
        with process_storing(url, "chat1", "upload") as other:
            assert replica.ingestion.recover() == []  # the other replica lives: its upload is its own
            assert replica.documents.get("chat1", "upload").status == INDEXING
            other.kill()
            other.wait()
            wait_for(lambda: replica.documents.get("chat1", "upload") is None, "the sweep to roll the upload back")
    finally:
        sweep.close()
    assert replica.documents.incomplete() == []


def test_a_replicas_sweep_drops_its_keyword_cache_of_a_chat_deleted_through_another(replica, tmp_path):
    other = replica_with(replica, keywords=BM25Store(tmp_path / "other", Tokenizer(), replica.documents))
    replica.ingestion.ingest("gone", "notes.txt", b"Axolotls regrow their limbs completely.")
    assert replica.keywords.cached_chats() == ["gone"]
    sweep = RecoverySweep(replica.ingestion, replica.jobs, every_seconds=0.1)
    try:
        other.delete_chat("gone")
        wait_for(lambda: replica.keywords.cached_chats() == [], "the sweep to drop the cache")
    finally:
        sweep.close()


def test_a_starting_replica_rolls_back_at_once_what_a_dead_one_was_storing(replica, tmp_path, make_services):
    """Not 15 minutes later, as when a recent 'indexing' row might have been a live replica's."""
    url = replica.database.url.render_as_string(hide_password=False)
    with process_storing(url, "chat1", "upload") as other:
        started_meanwhile = make_services(tmp_path / "started", database_url=url)  # runs start-up recovery
        being_stored = started_meanwhile.documents.get("chat1", "upload")
        assert being_stored.status == INDEXING
        started_meanwhile.database.dispose()
        other.kill()
        other.wait()
        wait_for(lambda: left_behind_now(replica.documents, being_stored), "the server to see the replica gone")

    restarted = make_services(tmp_path / "restarted", database_url=url)
    assert restarted.documents.get("chat1", "upload") is None
    restarted.database.dispose()


def test_a_job_taken_over_from_a_worker_still_storing_it_is_settled_only_once_that_worker_ends(replica):
    """A worker that lost its job's lease (the database away for longer than it) can still be storing the job's
    document when another worker takes the job over: settling waits for it instead of rolling back under it."""
    url = replica.database.url.render_as_string(hide_password=False)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        with process_storing(url, "chat1", "job") as other:
            settled = pool.submit(replica.ingestion.settle, "chat1", "job")
            with pytest.raises(concurrent.futures.TimeoutError):
                settled.result(timeout=2)  # still waiting: it would have rolled back at once
            assert replica.documents.get("chat1", "job").status == INDEXING
            other.kill()  # it never finished after all
            other.wait()
        assert settled.result(timeout=120) is None
    assert replica.documents.get("chat1", "job") is None
