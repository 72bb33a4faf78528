"""Background ingestion: a large upload is indexed on a worker thread while the client polls its progress.

A job is a row (``JobStore``) from the moment it is accepted, and its id is the id its document will have, so the
id answers after a restart: with the document when it finished, or with "failed: interrupted" when a restart cut
it short (the bytes are not kept, so it cannot resume; ``IngestionService.recover()`` rolls back what it left).
A job can be cancelled while it waits or while it runs: it stops at the next step (reading, each slice of
embedding) and keeps nothing, the way a crash is rolled back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from backend.errors import AxiomError, Cancelled
from backend.ids import new_document_id
from backend.ingest.loaders import base_filename
from backend.ingest.service import IngestedDocument, IngestionService
from backend.memory import release_free_memory
from backend.stores.jobs import UNFINISHED, JobRecord, JobState, JobStore

log = logging.getLogger(__name__)

_INTERRUPTED = AxiomError(
    "Indexing was interrupted by a restart of the server before it finished, and nothing of it was kept. Upload "
    "the file again."
).to_body()
_UNEXPECTED = AxiomError("Indexing this file failed unexpectedly.").to_body()
# A cancelled job stops at its next step (reading is killed at once; embedding stops between slices of 64 chunks,
# a few seconds each on a busy laptop); only its last step, storing, is never cut and may have to be waited for.
CANCEL_WAIT_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class Job:
    """One file's way into a chat's documents; ``document_id`` is set once ready, ``error`` (the error contract's
    body) once failed."""

    job_id: str
    chat_id: str
    filename: str
    size_bytes: int
    state: JobState
    progress: float  # 0..1
    created_at: float
    document_id: str | None = None  # its own id, or an earlier upload's when the file was a duplicate
    error: dict[str, Any] | None = None

    @property
    def finished(self) -> bool:
        return self.state not in UNFINISHED

    @classmethod
    def of_record(cls, record: JobRecord) -> Job:
        return cls(
            job_id=record.job_id, chat_id=record.chat_id, filename=record.filename, size_bytes=record.size_bytes,
            state=record.state, progress=1.0 if record.state == "ready" else 0.0, created_at=record.created_at,
            document_id=record.document_id, error=record.error,
        )


@dataclass(slots=True)
class _Running:
    job: Job
    cancel: threading.Event = field(default_factory=threading.Event)
    ended: threading.Event = field(default_factory=threading.Event)


class IngestJobs:
    """Runs ingestion jobs on ``workers`` threads (embedding already uses every core, so one is the default)."""

    def __init__(self, ingestion: IngestionService, store: JobStore, *, workers: int = 1) -> None:
        self._ingestion = ingestion
        self._store = store
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="axiom-ingest")
        self._running: dict[str, _Running] = {}  # jobs of this process not yet ended
        self._lock = threading.RLock()  # _stop ends a queued job while holding it
        for job_id in store.fail_unfinished(_INTERRUPTED):
            log.warning("ingestion job %s was interrupted by a restart; marked failed", job_id)

    def submit(
        self, chat_id: str, filename: str, data: bytes, *, on_end: Callable[[], None] | None = None
    ) -> Job:
        """``on_end`` runs once the job has ended, however it ended (the upload's memory budget is released)."""
        job = Job(
            job_id=new_document_id(), chat_id=chat_id, filename=base_filename(filename), size_bytes=len(data),
            state="queued", progress=0.0, created_at=time.time(),
        )
        self._store.add(JobRecord(
            job.job_id, chat_id, job.filename, job.size_bytes, "queued", None, None, job.created_at
        ))
        with self._lock:
            self._running[job.job_id] = _Running(job)
        self._executor.submit(self._run, job.job_id, filename, data, on_end)
        return job

    def get(self, chat_id: str, job_id: str) -> Job | None:
        with self._lock:
            running = self._running.get(job_id)
        if running is not None:
            return running.job if running.job.chat_id == chat_id else None
        record = self._store.get(chat_id, job_id)
        return Job.of_record(record) if record is not None else None

    def unfinished(self, chat_id: str) -> list[Job]:
        with self._lock:
            return [r.job for r in self._running.values() if r.job.chat_id == chat_id and not r.job.finished]

    def cancel(self, chat_id: str, job_id: str, *, wait_seconds: float = CANCEL_WAIT_SECONDS) -> Job | None:
        """Stops a queued or running job, waiting up to ``wait_seconds`` for it to end; returns the job as it then
        stands (possibly still running: its last step, storing, is not interrupted), or None if it is not running."""
        with self._lock:
            running = self._running.get(job_id)
            if running is None or running.job.chat_id != chat_id:
                return None
            self._stop(running)
        running.ended.wait(wait_seconds)
        return running.job

    def cancel_chat(self, chat_id: str, *, wait_seconds: float = CANCEL_WAIT_SECONDS) -> list[Job]:
        """Cancels every job of the chat; returns those still running after ``wait_seconds``."""
        with self._lock:
            jobs = [r for r in self._running.values() if r.job.chat_id == chat_id]
            for running in jobs:
                self._stop(running)
        deadline = time.monotonic() + wait_seconds
        for running in jobs:
            running.ended.wait(max(0.0, deadline - time.monotonic()))
        return [running.job for running in jobs if not running.ended.is_set()]

    def forget_chat(self, chat_id: str) -> None:
        """Forgets the chat's finished jobs (call once none is running)."""
        self._store.delete_chat(chat_id)

    def close(self) -> None:
        """Drops queued jobs and lets a running one finish (an interrupted one would be rolled back anyway)."""
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _stop(self, running: _Running) -> None:
        """Call with the lock held. A queued job ends here and then; a running one at its next step."""
        running.cancel.set()
        if running.job.state == "queued":
            self._end(running, "cancelled")  # _run, finding it gone, will not start it

    def _run(self, job_id: str, filename: str, data: bytes, on_end: Callable[[], None] | None) -> None:
        with self._lock:
            running = self._running.get(job_id)
            started = running is not None
            if started:
                running.job = replace(running.job, state="indexing")
        if not started:  # cancelled while it waited
            if on_end is not None:
                on_end()
            return
        try:
            self._store.update(job_id, "indexing")
            document = self._ingestion.ingest(
                running.job.chat_id, filename, data, progress=lambda done: self._progress(running, done),
                document_id=job_id, cancelled=running.cancel,
            )
        except Cancelled:
            self._end(running, "cancelled")
        except AxiomError as error:
            self._end(running, "failed", error=error.to_body())
        except Exception:  # a worker must record every failure, or the job would look queued forever
            log.exception("ingestion job %s (%s) failed unexpectedly", job_id, running.job.filename)
            self._end(running, "failed", error=_UNEXPECTED)
        else:
            self._end(running, "ready", document=document)
        finally:
            if on_end is not None:
                on_end()
            release_free_memory()  # the file's bytes and its chunks are garbage now

    @staticmethod
    def _progress(running: _Running, done: float) -> None:
        running.job = replace(running.job, progress=done)

    def _end(
        self, running: _Running, state: JobState, *, document: IngestedDocument | None = None,
        error: dict[str, Any] | None = None,
    ) -> None:
        document_id = document.document_id if document else None
        self._store.update(running.job.job_id, state, document_id=document_id, error=error)
        running.job = replace(
            running.job, state=state, progress=1.0 if state == "ready" else running.job.progress,
            document_id=document_id, error=error,
        )
        with self._lock:
            del self._running[running.job.job_id]
        running.ended.set()
