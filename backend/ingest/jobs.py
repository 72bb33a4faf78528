"""Background ingestion: a large upload is indexed on a worker thread while the client polls its progress.

Jobs are kept in memory only. A restart forgets them, and ``IngestionService.recover()`` rolls back whatever the
restart interrupted, so a forgotten job never leaves a half-indexed document behind.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Literal

from backend.errors import AxiomError
from backend.ingest.loaders import base_filename
from backend.ingest.service import IngestedDocument, IngestionService

log = logging.getLogger(__name__)

JobState = Literal["queued", "indexing", "ready", "failed"]


@dataclass(frozen=True, slots=True)
class Job:
    """One file's way into a chat's documents; ``document`` is set once ready, ``error`` once failed."""

    job_id: str
    chat_id: str
    filename: str
    size_bytes: int
    state: JobState
    progress: float  # 0..1
    created_at: float
    document: IngestedDocument | None = None
    error: AxiomError | None = None

    @property
    def finished(self) -> bool:
        return self.state in ("ready", "failed")


class IngestJobs:
    """Runs ingestion jobs on ``workers`` threads (embedding already uses every core, so one is the default)."""

    def __init__(self, ingestion: IngestionService, *, workers: int = 1, keep_finished: int = 256) -> None:
        self._ingestion = ingestion
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="axiom-ingest")
        self._keep_finished = keep_finished
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()

    def submit(self, chat_id: str, filename: str, data: bytes) -> Job:
        job = Job(
            job_id=uuid.uuid4().hex, chat_id=chat_id, filename=base_filename(filename), size_bytes=len(data),
            state="queued", progress=0.0, created_at=time.time(),
        )
        with self._lock:
            self._jobs[job.job_id] = job
            self._forget_old_finished()
        self._executor.submit(self._run, job.job_id, filename, data)
        return job

    def get(self, chat_id: str, job_id: str) -> Job | None:
        with self._lock:
            job = self._jobs.get(job_id)
        return job if job is not None and job.chat_id == chat_id else None

    def unfinished(self, chat_id: str) -> list[Job]:
        with self._lock:
            return [job for job in self._jobs.values() if job.chat_id == chat_id and not job.finished]

    def close(self) -> None:
        """Drops queued jobs and lets a running one finish (an interrupted one would be rolled back anyway)."""
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _run(self, job_id: str, filename: str, data: bytes) -> None:
        job = self._update(job_id, state="indexing")
        try:
            document = self._ingestion.ingest(
                job.chat_id, filename, data, progress=lambda done: self._update(job_id, progress=done)
            )
        except AxiomError as error:
            self._update(job_id, state="failed", error=error)
        except Exception:  # a worker must record every failure, or the job would look queued forever
            log.exception("ingestion job %s (%s) failed unexpectedly", job_id, job.filename)
            self._update(job_id, state="failed", error=AxiomError("Indexing this file failed unexpectedly."))
        else:
            self._update(job_id, state="ready", progress=1.0, document=document)

    def _update(self, job_id: str, **changes) -> Job:
        with self._lock:
            job = self._jobs[job_id] = replace(self._jobs[job_id], **changes)
        return job

    def _forget_old_finished(self) -> None:
        finished = [job_id for job_id, job in self._jobs.items() if job.finished]
        for job_id in finished[: max(0, len(finished) - self._keep_finished)]:
            del self._jobs[job_id]
