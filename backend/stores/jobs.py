"""Background ingestion jobs as rows (``schema.jobs``) with their uploaded file (``schema.job_files``), so a job
survives a restart of the replica that accepted it and any replica's worker can take it.

Claiming: a worker takes the oldest queued job, or one whose lease ran out (its worker died), in one transaction
(PostgreSQL: ``FOR UPDATE SKIP LOCKED``, so workers of different replicas never wait for each other's row; SQLite,
one process: its single writer) and holds it by renewing ``lease_until`` while it works (the heartbeat, which
also writes its progress, so every replica shows it, and reads ``cancel_requested``, so any replica can cancel).
Every later write of a claimed job names its worker, so a worker that lost its lease cannot overwrite the job's
fate. The file is deleted when the job ends, and with it the password its uploader gave to open it (a PDF's): the
worker that claims the job, on any replica and after any restart, needs it to read the file, and nothing needs it
once the job has ended. It never leaves ``job_files`` for a job's row, log line or error.

A job whose storing met the vector store unreachable goes back to 'queued' (``retry_later``) with the time it may
be claimed again (``retry_at``) and the error of its last try, until then claimed by nobody.

The file is stored in pieces of ``PIECE_BYTES``: SQLite's cached INSERT statement keeps the last value bound to
it, so every pooled connection that had stored a 50 MB file as one value held a 50 MB copy of it (+100 MiB a job
measured, docs/benchmarks.md); a piece is also written from the request's buffer without copying it, and read
back into one buffer.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from sqlalchemy import (
    ColumnElement,
    Double,
    Engine,
    Row,
    and_,
    case,
    delete,
    insert,
    literal,
    or_,
    select,
    update,
)

from backend.stores.schema import job_file_pieces, job_files, jobs

JobState = Literal["queued", "indexing", "ready", "failed", "cancelled"]
UNFINISHED: tuple[JobState, ...] = ("queued", "indexing")
PIECE_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class JobRecord:
    job_id: str
    chat_id: str
    filename: str
    size_bytes: int
    state: JobState
    document_id: str | None  # the document it made (its own id, or an earlier upload's when a duplicate)
    error: dict[str, Any] | None  # the error contract's body, when failed
    created_at: float
    progress: float = 0.0  # 0..1, as its worker last wrote it
    attempts: int = 0  # how many times a worker took it (since its last retry_later)
    cancel_requested: bool = False
    retry_at: float | None = None  # queued to be tried again, not before this time (the vector store was away)
    retrying_since: float | None = None  # when its first try met the vector store unreachable


_RECORD_FIELDS = tuple(field.name for field in fields(JobRecord))


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    record: JobRecord
    filename: str  # as uploaded
    data: bytes
    taken_over: bool  # an earlier worker died holding it: what it stored must be rolled back or kept
    password: str | None = field(default=None, repr=False)  # opens the file (a PDF); never shown


class JobStore:
    def __init__(self, engine: Engine, *, keep_finished: int = 10_000) -> None:
        self._engine = engine
        self._keep_finished = keep_finished

    @property
    def shared(self) -> bool:
        """Whether other processes may use the same jobs (PostgreSQL); SQLite serves one process."""
        return self._engine.dialect.name != "sqlite"

    def add(self, job: JobRecord, filename: str, data: bytes | bytearray, *, password: str | None = None) -> None:
        with self._engine.begin() as db:
            db.execute(insert(jobs).values(
                job_id=job.job_id, chat_id=job.chat_id, filename=job.filename, size_bytes=job.size_bytes,
                state=job.state, document_id=job.document_id, error=_json(job.error),
                created_at=job.created_at,
            ))
            db.execute(insert(job_files).values(job_id=job.job_id, filename=filename, password=password))
            if data:
                view = memoryview(data)
                db.execute(insert(job_file_pieces), [
                    {"job_id": job.job_id, "piece": n, "data": view[start : start + PIECE_BYTES]}
                    for n, start in enumerate(range(0, len(data), PIECE_BYTES))
                ])
            # Old finished jobs are only looked up by clients that never came back for them.
            beyond_kept = (
                select(jobs.c.job_id).where(jobs.c.state.not_in(UNFINISHED))
                .order_by(jobs.c.created_at.desc()).offset(self._keep_finished)
            )
            db.execute(delete(jobs).where(jobs.c.job_id.in_(beyond_kept)))

    def claim(self, worker: str, lease_seconds: float) -> ClaimedJob | None:
        """Takes the oldest claimable job for ``worker`` until now + ``lease_seconds``; None if there is none."""
        now = time.time()
        claimable = or_(
            and_(jobs.c.state == "queued", or_(jobs.c.retry_at.is_(None), jobs.c.retry_at <= now)),
            and_(jobs.c.state == "indexing", jobs.c.lease_until < now),
        )
        with self._engine.begin() as db:
            row = db.execute(
                select(jobs.c.job_id, jobs.c.state, jobs.c.attempts).where(claimable)
                .order_by(jobs.c.created_at).limit(1).with_for_update(skip_locked=True)
            ).one_or_none()
            if row is None:
                return None
            # Still claimable, in the state and attempts it was read with: a claim that raced another (SQLite reads
            # unlocked) is void, even when that other's try has put the job back to wait for a later retry_at.
            taken = db.execute(
                update(jobs).where(jobs.c.job_id == row.job_id, jobs.c.state == row.state,
                                   jobs.c.attempts == row.attempts, claimable)
                .values(state="indexing", claimed_by=worker, lease_until=now + lease_seconds,
                        attempts=row.attempts + 1, retry_at=None, error=None)
            ).rowcount
            if not taken:
                return None
            record = db.execute(select(jobs).where(jobs.c.job_id == row.job_id)).one()
            file = db.execute(
                select(job_files.c.filename, job_files.c.password).where(job_files.c.job_id == row.job_id)
            ).one()
            data = _joined(db.execute(
                select(job_file_pieces.c.data).where(job_file_pieces.c.job_id == row.job_id)
                .order_by(job_file_pieces.c.piece).execution_options(yield_per=16)
            ).scalars())
        return ClaimedJob(
            _record(record), file.filename, data, taken_over=row.state == "indexing", password=file.password
        )

    def heartbeat(self, job_id: str, worker: str, lease_seconds: float, progress: float) -> bool | None:
        """Renews the worker's lease and records its progress (never lower than recorded: see ``_at_least``);
        returns whether a cancel was requested, or None when the worker no longer holds the job (its lease ran out
        and another took it, or it was deleted)."""
        with self._engine.begin() as db:
            return db.execute(
                update(jobs).where(jobs.c.job_id == job_id, jobs.c.claimed_by == worker, jobs.c.state == "indexing")
                .values(lease_until=time.time() + lease_seconds, progress=_at_least(progress))
                .returning(jobs.c.cancel_requested)
            ).scalar_one_or_none()

    def finish(
        self, job_id: str, worker: str, state: JobState, *, document_id: str | None = None,
        error: dict[str, Any] | None = None, progress: float = 0.0,
    ) -> bool:
        """Ends a job ``worker`` holds, with the progress it had made (newer than its last heartbeat's); False
        (and nothing written) if it no longer does."""
        with self._engine.begin() as db:
            ended = db.execute(
                update(jobs).where(jobs.c.job_id == job_id, jobs.c.claimed_by == worker, jobs.c.state == "indexing")
                .values(state=state, document_id=document_id, error=_json(error), lease_until=None,
                        progress=1.0 if state == "ready" else _at_least(progress))
            ).rowcount
            if ended:
                db.execute(delete(job_files).where(job_files.c.job_id == job_id))
        return bool(ended)

    def retry_later(
        self, job_id: str, worker: str, *, retry_at: float, retrying_since: float, error: dict[str, Any],
        progress: float,
    ) -> JobState | None:
        """Puts a job ``worker`` holds back to 'queued', claimable again from ``retry_at`` (its file kept), or ends
        it as 'cancelled' if a cancel was asked for meanwhile; returns which, or None (and nothing written) if it
        no longer holds it. Its attempts start again from none: they count interruptions in a row."""
        cancelled = jobs.c.cancel_requested.is_(True)
        with self._engine.begin() as db:
            state = db.execute(
                update(jobs).where(jobs.c.job_id == job_id, jobs.c.claimed_by == worker, jobs.c.state == "indexing")
                .values(state=case((cancelled, "cancelled"), else_="queued"), claimed_by=None, lease_until=None,
                        attempts=0, retry_at=retry_at, retrying_since=retrying_since,
                        error=case((cancelled, None), else_=_json(error)), progress=_at_least(progress))
                .returning(jobs.c.state)
            ).scalar_one_or_none()
            if state == "cancelled":
                db.execute(delete(job_files).where(job_files.c.job_id == job_id))
        return state

    def request_cancel(self, chat_id: str, job_ids: list[str] | None = None) -> list[str]:
        """Cancels the chat's queued jobs (all, or those of ``job_ids``) at once and asks the workers of running
        ones to stop at their next step. Returns the cancelled jobs that were waiting to be tried again: what
        their last try half-stored is for the caller to roll back."""
        where = [jobs.c.chat_id == chat_id] + ([jobs.c.job_id.in_(job_ids)] if job_ids is not None else [])
        with self._engine.begin() as db:
            cancelled = db.execute(
                update(jobs).where(*where, jobs.c.state == "queued").values(state="cancelled")
                .returning(jobs.c.job_id, jobs.c.retrying_since)
            ).all()
            db.execute(delete(job_files).where(job_files.c.job_id.in_([row.job_id for row in cancelled])))
            db.execute(update(jobs).where(*where, jobs.c.state == "indexing").values(cancel_requested=True))
        return [row.job_id for row in cancelled if row.retrying_since is not None]

    def expire_leases(self) -> None:
        """Makes every running job claimable now: for a process that alone uses the database (SQLite), whose
        earlier run can no longer be working on them."""
        with self._engine.begin() as db:
            db.execute(update(jobs).where(jobs.c.state == "indexing").values(lease_until=0.0))

    def get(self, chat_id: str, job_id: str) -> JobRecord | None:
        with self._engine.connect() as db:
            row = db.execute(
                select(jobs).where(jobs.c.chat_id == chat_id, jobs.c.job_id == job_id)
            ).one_or_none()
        return _record(row) if row else None

    def unfinished(self, chat_id: str) -> list[JobRecord]:
        with self._engine.connect() as db:
            rows = db.execute(
                select(jobs).where(jobs.c.chat_id == chat_id, jobs.c.state.in_(UNFINISHED))
                .order_by(jobs.c.created_at)
            ).all()
        return [_record(row) for row in rows]

    def unfinished_ids(self) -> list[str]:
        with self._engine.connect() as db:
            return list(db.execute(select(jobs.c.job_id).where(jobs.c.state.in_(UNFINISHED))).scalars())

    def delete_chat(self, chat_id: str) -> None:
        with self._engine.begin() as db:
            db.execute(delete(jobs).where(jobs.c.chat_id == chat_id))

    def delete_finished(self, chat_id: str, job_id: str) -> None:
        with self._engine.begin() as db:
            db.execute(delete(jobs).where(
                jobs.c.chat_id == chat_id, jobs.c.job_id == job_id, jobs.c.state.not_in(UNFINISHED)
            ))


def _joined(pieces: Iterable[bytes]) -> bytes:
    """The pieces as one bytes object, without a second whole copy: BytesIO hands over the buffer it wrote into."""
    buffer = io.BytesIO()
    for piece in pieces:
        buffer.write(piece)
    return buffer.getvalue()


def _at_least(progress: float) -> ColumnElement[float]:
    """The recorded progress, or ``progress`` if that is further: what a client was shown never goes back, when a
    job ends (its last heartbeat is older than its end) or starts over after its worker died (the new attempt's
    progress shows once it passes the old one's)."""
    return case((jobs.c.progress > progress, jobs.c.progress), else_=literal(progress, Double))


def _json(value: dict[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value)


def _record(row: Row) -> JobRecord:
    values = {name: value for name, value in row._mapping.items() if name in _RECORD_FIELDS}
    values["error"] = json.loads(values["error"]) if values["error"] else None
    return JobRecord(**values)
