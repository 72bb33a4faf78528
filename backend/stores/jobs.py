"""Background ingestion jobs as rows (``schema.jobs``), so a job's id still answers after a restart.

The uploaded bytes are not kept (originals never are), so a job a restart interrupted cannot resume: at start-up
it is marked failed with a message saying to upload the file again, and the half-indexed document it left is
rolled back by ``IngestionService.recover()``. Progress is not written here: it changes many times a second and
only the process doing the work can report it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import Engine, Row, delete, insert, select, update

from backend.stores.schema import jobs

JobState = Literal["queued", "indexing", "ready", "failed", "cancelled"]
UNFINISHED: tuple[JobState, ...] = ("queued", "indexing")


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


class JobStore:
    def __init__(self, engine: Engine, *, keep_finished: int = 10_000) -> None:
        self._engine = engine
        self._keep_finished = keep_finished

    def add(self, job: JobRecord) -> None:
        with self._engine.begin() as db:
            db.execute(insert(jobs).values(
                job_id=job.job_id, chat_id=job.chat_id, filename=job.filename, size_bytes=job.size_bytes,
                state=job.state, document_id=job.document_id, error=_json(job.error),
                created_at=job.created_at,
            ))
            # Old finished jobs are only looked up by clients that never came back for them.
            beyond_kept = (
                select(jobs.c.job_id).where(jobs.c.state.not_in(UNFINISHED))
                .order_by(jobs.c.created_at.desc()).offset(self._keep_finished)
            )
            db.execute(delete(jobs).where(jobs.c.job_id.in_(beyond_kept)))

    def update(
        self, job_id: str, state: JobState, *, document_id: str | None = None, error: dict[str, Any] | None = None
    ) -> None:
        with self._engine.begin() as db:
            db.execute(
                update(jobs).where(jobs.c.job_id == job_id)
                .values(state=state, document_id=document_id, error=_json(error))
            )

    def get(self, chat_id: str, job_id: str) -> JobRecord | None:
        with self._engine.connect() as db:
            row = db.execute(
                select(jobs).where(jobs.c.chat_id == chat_id, jobs.c.job_id == job_id)
            ).one_or_none()
        return _record(row) if row else None

    def fail_unfinished(self, error: dict[str, Any]) -> list[str]:
        """Marks every queued or running job failed with ``error`` (at start-up: their work was lost)."""
        with self._engine.begin() as db:
            return list(db.execute(
                update(jobs).where(jobs.c.state.in_(UNFINISHED)).values(state="failed", error=_json(error))
                .returning(jobs.c.job_id)
            ).scalars())

    def delete_chat(self, chat_id: str) -> None:
        with self._engine.begin() as db:
            db.execute(delete(jobs).where(jobs.c.chat_id == chat_id))


def _json(value: dict[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value)


def _record(row: Row) -> JobRecord:
    values = dict(row._mapping)
    values["error"] = json.loads(values["error"]) if values["error"] else None
    return JobRecord(**values)
