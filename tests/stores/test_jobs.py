"""Ingestion job rows against real databases: a SQLite file and a PostgreSQL server (tests/conftest.py)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from backend.stores.jobs import JobRecord, JobStore

INTERRUPTED = {"error": "INTERRUPTED", "message": "Upload the file again.", "details": {}}


def job(job_id: str, state: str = "queued", chat_id: str = "chat1", created_at: float = 1.0) -> JobRecord:
    return JobRecord(job_id, chat_id, f"{job_id}.pdf", 10, state, None, None, created_at)


@pytest.fixture
def jobs(database: Engine) -> JobStore:
    return JobStore(database)


def test_a_job_is_read_back_within_its_chat_only(jobs: JobStore) -> None:
    jobs.add(job("j1"))

    assert jobs.get("chat1", "j1") == job("j1")
    assert jobs.get("chat2", "j1") is None and jobs.get("chat1", "missing") is None


def test_an_update_records_the_outcome_and_the_error_contract(jobs: JobStore) -> None:
    jobs.add(job("ok"))
    jobs.add(job("bad"))
    jobs.update("ok", "ready", document_id="d-earlier")
    unreadable = {"error": "UNREADABLE", "message": "No text.", "details": {"page": 3}}
    jobs.update("bad", "failed", error=unreadable)

    assert (jobs.get("chat1", "ok").state, jobs.get("chat1", "ok").document_id) == ("ready", "d-earlier")
    assert jobs.get("chat1", "bad").error == unreadable


def test_unfinished_jobs_fail_at_start_up_and_finished_ones_stay(jobs: JobStore) -> None:
    for job_id, state in (("q", "queued"), ("i", "indexing"), ("r", "ready"), ("c", "cancelled")):
        jobs.add(job(job_id, state))

    assert sorted(jobs.fail_unfinished(INTERRUPTED)) == ["i", "q"]
    states = {j: jobs.get("chat1", j).state for j in "qirc"}
    assert states == {"q": "failed", "i": "failed", "r": "ready", "c": "cancelled"}
    assert jobs.get("chat1", "q").error == INTERRUPTED
    assert jobs.fail_unfinished(INTERRUPTED) == []


def test_only_the_newest_finished_jobs_are_kept_and_unfinished_ones_never_dropped(database: Engine) -> None:
    jobs = JobStore(database, keep_finished=2)
    jobs.add(job("running", "indexing", created_at=0.0))
    for n in range(4):
        jobs.add(job(f"done{n}", "ready", created_at=float(n + 1)))

    assert [j for j in ("running", "done0", "done1", "done2", "done3") if jobs.get("chat1", j)] == [
        "running", "done2", "done3",
    ]


def test_deleting_a_chat_deletes_its_jobs_only(jobs: JobStore) -> None:
    jobs.add(job("mine"))
    jobs.add(job("theirs", chat_id="chat2"))
    jobs.delete_chat("chat1")

    assert jobs.get("chat1", "mine") is None and jobs.get("chat2", "theirs") is not None
