"""Background ingestion jobs as rows (SQLite), so a job's id still answers after a restart.

The uploaded bytes are not kept (originals never are), so a job a restart interrupted cannot resume: at start-up
it is marked failed with a message saying to upload the file again, and the half-indexed document it left is
rolled back by ``IngestionService.recover()``. Progress is not written here: it changes many times a second and
only the process doing the work can report it.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from backend.stores.sqlite import ThreadLocalSQLite

JobState = Literal["queued", "indexing", "ready", "failed", "cancelled"]
UNFINISHED: tuple[JobState, ...] = ("queued", "indexing")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id      TEXT PRIMARY KEY,
    chat_id     TEXT NOT NULL,
    filename    TEXT NOT NULL,
    size_bytes  INTEGER NOT NULL,
    state       TEXT NOT NULL,
    document_id TEXT,
    error       TEXT,
    created_at  REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_chat ON jobs(chat_id, state);
"""


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
    def __init__(self, path: Path, *, keep_finished: int = 10_000) -> None:
        self._db = ThreadLocalSQLite(path, _SCHEMA, row_factory=sqlite3.Row)
        self._keep_finished = keep_finished

    def add(self, job: JobRecord) -> None:
        with self._db.transaction() as db:
            db.execute(
                "INSERT INTO jobs VALUES (?,?,?,?,?,?,?,?)",
                (job.job_id, job.chat_id, job.filename, job.size_bytes, job.state, job.document_id,
                 _json(job.error), job.created_at),
            )
            # Old finished jobs are only looked up by clients that never came back for them.
            db.execute(
                "DELETE FROM jobs WHERE job_id IN (SELECT job_id FROM jobs WHERE state NOT IN (?, ?) "
                "ORDER BY created_at DESC LIMIT -1 OFFSET ?)",
                (*UNFINISHED, self._keep_finished),
            )

    def update(
        self, job_id: str, state: JobState, *, document_id: str | None = None, error: dict[str, Any] | None = None
    ) -> None:
        with self._db.transaction() as db:
            db.execute(
                "UPDATE jobs SET state=?, document_id=?, error=? WHERE job_id=?",
                (state, document_id, _json(error), job_id),
            )

    def get(self, chat_id: str, job_id: str) -> JobRecord | None:
        row = self._db.connection().execute(
            "SELECT * FROM jobs WHERE chat_id=? AND job_id=?", (chat_id, job_id)
        ).fetchone()
        return _record(row) if row else None

    def fail_unfinished(self, error: dict[str, Any]) -> list[str]:
        """Marks every queued or running job failed with ``error`` (at start-up: their work was lost)."""
        with self._db.transaction() as db:
            ids = [row[0] for row in db.execute("SELECT job_id FROM jobs WHERE state IN (?, ?)", UNFINISHED)]
            db.execute("UPDATE jobs SET state='failed', error=? WHERE state IN (?, ?)", (_json(error), *UNFINISHED))
        return ids

    def delete_chat(self, chat_id: str) -> None:
        with self._db.transaction() as db:
            db.execute("DELETE FROM jobs WHERE chat_id=?", (chat_id,))


def _json(value: dict[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value)


def _record(row: sqlite3.Row) -> JobRecord:
    values = dict(row)
    values["error"] = json.loads(values["error"]) if values["error"] else None
    return JobRecord(**values)

