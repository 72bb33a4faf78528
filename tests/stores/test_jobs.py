"""Ingestion job rows against real databases (a SQLite file and a PostgreSQL server, tests/conftest.py): claims
never hand one job to two workers, a lease that ran out lets another worker take the job, and a worker that lost
its job cannot write its fate."""

from __future__ import annotations

import logging
import os
import threading
import time

import pytest
from sqlalchemy import Engine, event, exc, func, select, text

from backend.stores.database import create_database_engine, migrate
from backend.stores.jobs import PIECE_BYTES, JobRecord, JobStore
from backend.stores.schema import job_file_pieces, job_files
from backend.stores.schema import jobs as jobs_table


def job(job_id: str, state: str = "queued", chat_id: str = "chat1", created_at: float = 1.0) -> JobRecord:
    return JobRecord(job_id, chat_id, f"{job_id}.pdf", 10, state, None, None, created_at)


@pytest.fixture
def jobs(database: Engine) -> JobStore:
    return JobStore(database)


def test_a_job_is_read_back_within_its_chat_only(jobs: JobStore) -> None:
    jobs.add(job("j1"), "j1.pdf", b"%PDF")

    assert jobs.get("chat1", "j1") == job("j1")
    assert jobs.get("chat2", "j1") is None and jobs.get("chat1", "missing") is None


def test_only_the_newest_finished_jobs_are_kept_and_unfinished_ones_never_dropped(database: Engine) -> None:
    jobs = JobStore(database, keep_finished=2)
    jobs.add(job("running", "indexing", created_at=0.0), "running.pdf", b"")
    for n in range(4):
        jobs.add(job(f"done{n}", "ready", created_at=float(n + 1)), f"done{n}.pdf", b"")

    assert [j for j in ("running", "done0", "done1", "done2", "done3") if jobs.get("chat1", j)] == [
        "running", "done2", "done3",
    ]


def test_deleting_a_chat_deletes_its_jobs_only(jobs: JobStore) -> None:
    jobs.add(job("mine"), "mine.pdf", b"")
    jobs.add(job("theirs", chat_id="chat2"), "theirs.pdf", b"")
    jobs.delete_chat("chat1")

    assert jobs.get("chat1", "mine") is None and jobs.get("chat2", "theirs") is not None


def queue(store: JobStore, job_id: str, created_at: float) -> None:
    store.add(JobRecord(job_id, "chat1", f"{job_id}.txt", 3, "queued", None, None, created_at), f"{job_id}.txt",
              b"abc")


def test_workers_claiming_at_once_each_get_a_different_job(database):
    store = JobStore(database)
    for n in range(6):
        queue(store, f"job{n}", created_at=1000.0 + n)
    claimed: list[str] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        while (job := store.claim(name, lease_seconds=60)) is not None:
            with lock:
                claimed.append(job.record.job_id)

    threads = [threading.Thread(target=worker, args=(f"w{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # A claim that lost a race returns None, so a worker may stop early; every job was still claimed once.
    leftover = []
    while (job := store.claim("sweeper", lease_seconds=60)) is not None:
        leftover.append(job.record.job_id)
    assert sorted(claimed + leftover) == [f"job{n}" for n in range(6)]


def test_an_expired_lease_hands_the_job_over_and_the_old_worker_loses_it(database):
    store = JobStore(database)
    queue(store, "job1", created_at=time.time())
    first = store.claim("w1", lease_seconds=60)
    assert first.data == b"abc" and not first.taken_over and first.record.attempts == 1
    assert store.claim("w2", lease_seconds=60) is None  # held
    assert store.heartbeat("job1", "w1", lease_seconds=0.0, progress=0.5) is False  # renewed to "now": expired
    assert store.get("chat1", "job1").progress == 0.5

    second = store.claim("w2", lease_seconds=60)
    assert second.taken_over and second.record.attempts == 2 and second.filename == "job1.txt"
    assert store.heartbeat("job1", "w1", lease_seconds=60, progress=0.9) is None
    assert not store.finish("job1", "w1", "failed", error={"error": "X", "message": "x", "details": {}})
    assert store.finish("job1", "w2", "ready", document_id="job1")
    record = store.get("chat1", "job1")
    assert record.state == "ready" and record.progress == 1.0 and record.error is None


def test_cancelling_ends_queued_jobs_at_once_and_flags_running_ones(database):
    store = JobStore(database)
    queue(store, "running", created_at=1.0)
    queue(store, "waiting", created_at=2.0)
    store.claim("w1", lease_seconds=60)
    store.request_cancel("chat1")
    assert store.get("chat1", "waiting").state == "cancelled"
    assert store.heartbeat("running", "w1", lease_seconds=60, progress=0.1) is True
    assert store.claim("w2", lease_seconds=60) is None
    assert store.unfinished_ids() == ["running"]


def test_a_file_larger_than_a_piece_is_read_back_whole(database: Engine, jobs: JobStore) -> None:
    data = bytearray(os.urandom(PIECE_BYTES * 2 + 12345))  # as a request received it
    jobs.add(job("big"), "big.pdf", data)

    claimed = jobs.claim("worker", 30.0)
    assert claimed is not None and claimed.data == data and isinstance(claimed.data, bytes)
    assert jobs.finish("big", "worker", "ready")
    with database.connect() as db:  # its pieces go with the job's end
        assert db.execute(select(func.count()).select_from(job_file_pieces)).scalar_one() == 0


def test_the_recorded_progress_never_goes_back(database):
    """Not when a worker ends a job with the progress it made since its last heartbeat, nor when a job whose
    worker died starts over (the new attempt's progress counts once it passes the old one's)."""
    store = JobStore(database)
    queue(store, "job1", created_at=time.time())
    store.claim("w1", lease_seconds=60)
    store.heartbeat("job1", "w1", lease_seconds=0.0, progress=0.5)
    assert store.claim("w2", lease_seconds=60).taken_over
    assert store.get("chat1", "job1").progress == 0.5
    store.heartbeat("job1", "w2", lease_seconds=60, progress=0.2)
    assert store.get("chat1", "job1").progress == 0.5
    store.heartbeat("job1", "w2", lease_seconds=60, progress=0.6)
    assert store.finish("job1", "w2", "cancelled", progress=0.7)
    assert store.get("chat1", "job1").progress == 0.7


UNREACHABLE = {"error": "RETRIEVAL_FAILED", "message": "The vector store (Chroma) is unreachable.", "details": {}}


def test_a_job_to_be_retried_waits_queued_until_its_time_with_its_file_and_progress(database):
    store = JobStore(database)
    queue(store, "job1", created_at=time.time())
    store.claim("w1", lease_seconds=60)
    assert not store.retry_later("job1", "w2", retry_at=time.time(), retrying_since=1.0, error=UNREACHABLE,
                                 progress=0.4)  # not its job
    assert store.retry_later("job1", "w1", retry_at=time.time() + 60, retrying_since=1.0, error=UNREACHABLE,
                             progress=0.4)
    waiting = store.get("chat1", "job1")
    assert (waiting.state, waiting.progress, waiting.error, waiting.attempts) == ("queued", 0.4, UNREACHABLE, 0)
    assert store.unfinished_ids() == ["job1"]
    assert store.heartbeat("job1", "w1", lease_seconds=60, progress=0.5) is None  # nobody holds it now
    assert store.claim("w2", lease_seconds=60) is None  # not before its time

    # Its time comes: claimable by any worker, with its file, its error cleared.
    with database.begin() as db:
        db.execute(jobs_table.update().values(retry_at=time.time() - 1))
    again = store.claim("w2", lease_seconds=60)
    assert again.data == b"abc" and not again.taken_over
    assert (again.record.retrying_since, again.record.attempts, again.record.error) == (1.0, 1, None)


def test_a_job_cancelled_while_its_try_failed_is_cancelled_not_retried(database):
    store = JobStore(database)
    queue(store, "job1", created_at=time.time())
    queue(store, "job2", created_at=time.time() + 1)
    store.claim("w1", lease_seconds=60)
    store.request_cancel("chat1", ["job1"])  # while its try meets the vector store unreachable
    assert store.retry_later("job1", "w1", retry_at=time.time(), retrying_since=1.0, error=UNREACHABLE,
                             progress=0.4)
    cancelled = store.get("chat1", "job1")
    assert cancelled.state == "cancelled" and cancelled.error is None
    assert store.claim("w1", lease_seconds=60).record.job_id == "job2"
    assert store.retry_later("job2", "w1", retry_at=time.time() + 60, retrying_since=1.0, error=UNREACHABLE,
                             progress=0.0)
    # Cancelled while it waits: at once, and named as one whose last try may have left something to roll back.
    assert store.request_cancel("chat1") == ["job2"]
    assert store.get("chat1", "job2").state == "cancelled" and store.unfinished_ids() == []


def test_a_claim_never_takes_a_job_put_back_to_wait_between_its_read_and_its_write(database):
    """Another worker's try of the job met the vector store unreachable and put it back to wait, in the state and
    with the attempts the claim had read it with, just before the claim's write: it waits for its retry_at."""
    store = JobStore(database)
    queue(store, "job1", created_at=time.time())
    retry_at = time.time() + 60
    written = []

    def put_back_to_wait(connection, cursor, statement, *_) -> None:
        # Stand-in for that other worker's write landing in the claim's window, which cannot be timed from outside.
        if statement.startswith("UPDATE jobs") and not written:
            written.append(statement)
            cursor.execute(f"UPDATE jobs SET retry_at = {retry_at!r} WHERE job_id = 'job1'")

    event.listen(database, "before_cursor_execute", put_back_to_wait)
    try:
        assert store.claim("w1", lease_seconds=60) is None
    finally:
        event.remove(database, "before_cursor_execute", put_back_to_wait)
    waiting = store.get("chat1", "job1")
    assert written and (waiting.state, waiting.attempts, waiting.retry_at) == ("queued", 0, retry_at)


def stored_passwords(database: Engine) -> list[str | None]:
    with database.connect() as db:
        return list(db.execute(select(job_files.c.password)).scalars())


@pytest.mark.parametrize("end", ["ready", "failed", "cancelled", "cancelled while waiting to be retried"])
def test_a_files_password_reaches_every_worker_that_claims_it_and_goes_when_the_job_ends(database, end):
    """Kept with the file only while the job exists: a worker taking over a dead one's job needs it too."""
    store = JobStore(database)
    store.add(job("job1", created_at=time.time()), "statement.pdf", b"%PDF", password="s3cret-pw")
    assert stored_passwords(database) == ["s3cret-pw"]

    first = store.claim("w1", lease_seconds=0.0)  # dies at once
    assert first.password == "s3cret-pw" and "s3cret-pw" not in repr(first)
    taken_over = store.claim("w2", lease_seconds=60)
    assert taken_over.taken_over and taken_over.password == "s3cret-pw"

    if end == "cancelled while waiting to be retried":
        store.retry_later("job1", "w2", retry_at=time.time() + 60, retrying_since=1.0, error=UNREACHABLE,
                          progress=0.0)
        assert stored_passwords(database) == ["s3cret-pw"]  # it is tried again later: kept
        store.request_cancel("chat1")
    elif end == "cancelled":
        store.request_cancel("chat1")
        assert store.finish("job1", "w2", "cancelled")
    else:
        assert store.finish("job1", "w2", end)
    assert stored_passwords(database) == []
    with database.connect() as db:
        assert "s3cret-pw" not in str(db.execute(select(jobs_table)).one())


def test_a_job_without_a_password_keeps_none(database):
    store = JobStore(database)
    store.add(job("job1"), "notes.pdf", b"%PDF")

    assert stored_passwords(database) == [None] and store.claim("w1", lease_seconds=60).password is None


def test_a_database_error_names_none_of_the_values_sent_neither_password_nor_file(tmp_path, caplog):
    """The error's text is what the API logs (backend/api/errors.py)."""
    engine = create_database_engine(f"sqlite:///{tmp_path / 'axiom.db'}")
    migrate(engine)
    with engine.begin() as db:  # a database refusing the file's row
        db.execute(text("CREATE TRIGGER refuse BEFORE INSERT ON job_files BEGIN SELECT RAISE(ABORT, 'no'); END"))

    password = os.urandom(8).hex()  # not in this file, whose lines the logged traceback quotes
    with pytest.raises(exc.IntegrityError) as refused:
        JobStore(engine).add(job("job1"), "a.pdf", b"%PDF", password=password)
    engine.dispose()

    logging.getLogger("test").exception("refused", exc_info=refused.value)
    for told in (str(refused.value), caplog.text):
        assert password not in told and "hidden" in told
