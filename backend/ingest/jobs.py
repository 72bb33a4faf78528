"""Background ingestion: a large upload is indexed by a worker while the client polls its progress.

A job is a row with its uploaded file (``JobStore``) from the moment it is accepted, and its id is the id its
document will have. Each process runs ``workers`` worker threads that claim jobs from the shared database, so a
job accepted by one replica may be indexed by another, and a job survives a restart of the replica that accepted
it. A worker holds its job by a lease it renews every couple of seconds (writing its progress with it); a job
whose lease runs out (its worker died) is taken over by the next worker to look, which first rolls back whatever
the dead one half-stored (or keeps the document, if it was stored whole) and then indexes it again, up to
``max_attempts`` times in all; after that the job fails saying it was interrupted and retried. A job can be
cancelled from any replica while it waits or while it runs: it stops at the next step (reading, each slice of
embedding) and keeps nothing, the way a crash is rolled back.

A job whose vector store (a Chroma server) is unreachable waits for it rather than failing: it goes back to
'queued' with the error of its last try and the time of its next (``retry_seconds``, then as long as the outage
has lasted, so the waits double, up to a minute), claimable by any worker from then; that worker first rolls back
what the last try half-stored. Once the vector store has been unreachable for ``retry_limit_seconds`` since the
first try met it, the job fails saying so. What the last try of a job that ends so, or is cancelled while it
waits, half-stored is rolled back at once, or, with the vector store still unreachable, marked discarded (never
listed, nor taken for a document being stored) and rolled back once it is back (``IngestionService.discard``).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from backend.errors import AxiomError, Cancelled, VectorStoreUnreachable
from backend.ids import new_document_id
from backend.ingest.loaders import base_filename
from backend.ingest.service import IngestedDocument, IngestionService
from backend.memory import release_free_memory
from backend.stores.database import outage, warn_of
from backend.stores.jobs import UNFINISHED, ClaimedJob, JobRecord, JobState, JobStore

log = logging.getLogger(__name__)

_UNEXPECTED = AxiomError("Indexing this file failed unexpectedly.").to_body()
# A cancelled job stops at its next step (reading is killed at once; embedding stops between slices of 64 chunks,
# a few seconds each on a busy laptop); only its last step, storing, is never cut and may have to be waited for.
CANCEL_WAIT_SECONDS = 30.0
# How often a cancel looks in the database for a job another replica runs (its worker sees the cancel at its next
# heartbeat, ≤ 2 s); a job of this process is waited for on its own event.
_REMOTE_CANCEL_POLL_SECONDS = 0.5
# The longest wait between two tries of a job whose vector store is unreachable: an outage that ends is noticed
# within a minute however long it lasted.
_MAX_RETRY_DELAY_SECONDS = 60.0


def _interrupted(attempts: int) -> AxiomError:
    return AxiomError(
        f"Indexing was interrupted (the server indexing it stopped) {attempts} times, so it was not retried again; "
        "nothing of it was kept. Upload the file again."
    )


def _unreachable_too_long(seconds: float, error: VectorStoreUnreachable) -> dict[str, Any]:
    return VectorStoreUnreachable(
        f"The vector store (Chroma) was unreachable for {_duration(seconds)} while this file waited to be "
        "indexed, so indexing was given up; nothing of it was kept. Upload the file again once the vector store "
        "is running.",
        unreachable_seconds=round(seconds), **error.details,
    ).to_body()


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} minutes" if seconds >= 120 else f"{seconds:.0f} seconds"


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
    error: dict[str, Any] | None = None  # also, while it waits to be tried again, why its last try did not finish
    retry_at: float | None = None  # while queued to be tried again (the vector store was unreachable): when

    @property
    def finished(self) -> bool:
        return self.state not in UNFINISHED

    @classmethod
    def of_record(cls, record: JobRecord) -> Job:
        return cls(
            job_id=record.job_id, chat_id=record.chat_id, filename=record.filename, size_bytes=record.size_bytes,
            state=record.state, progress=1.0 if record.state == "ready" else record.progress,
            created_at=record.created_at, document_id=record.document_id, error=record.error,
            retry_at=record.retry_at if record.state == "queued" else None,
        )


@dataclass(slots=True)
class _Running:
    """A job a worker of this process holds."""

    job_id: str
    progress: float = 0.0
    cancel: threading.Event = field(default_factory=threading.Event)
    ended: threading.Event = field(default_factory=threading.Event)
    store_answered: bool = False  # this try reached the vector store: an outage after it is a new one


class IngestJobs:
    """Claims and runs ingestion jobs on ``workers`` threads (embedding already uses every core, so one is the
    default). ``lease_seconds``: how long a job stays with a worker that stopped renewing it (died);
    ``retry_seconds`` / ``retry_limit_seconds``: the first wait before a job whose vector store was unreachable is
    tried again, and how long it may stay unreachable before the job fails."""

    def __init__(
        self, ingestion: IngestionService, store: JobStore, *, workers: int = 1, lease_seconds: float = 30.0,
        max_attempts: int = 3, poll_seconds: float = 1.0, retry_seconds: float = 5.0,
        retry_limit_seconds: float = 300.0,
    ) -> None:
        self._ingestion = ingestion
        self._store = store
        self._lease_seconds = lease_seconds
        self._heartbeat_seconds = min(2.0, lease_seconds / 3)
        self._max_attempts = max_attempts
        self._poll_seconds = poll_seconds
        self._retry_seconds = retry_seconds
        self._retry_limit_seconds = retry_limit_seconds
        self._worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._running: dict[str, _Running] = {}  # jobs this process's workers hold
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        if not store.shared:
            store.expire_leases()  # this process alone uses the database: an earlier run's jobs were cut short
        self._threads = [
            threading.Thread(target=self._work, name=f"axiom-ingest-{n}", daemon=True) for n in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, chat_id: str, filename: str, data: bytes | bytearray, *, password: str | None = None) -> Job:
        """``password`` opens the file (a PDF that needs one). It waits with the file, in the database, until the
        job ends: whichever replica's worker claims the job, after whatever restart, must be able to read the file,
        and it cannot be decrypted here instead (that is reading it, in a worker process, which a request hands to a
        job precisely when it takes too long). The text it opens is stored anyway; the password is never logged,
        shown, or kept past the job."""
        job = Job(
            job_id=new_document_id(), chat_id=chat_id, filename=base_filename(filename), size_bytes=len(data),
            state="queued", progress=0.0, created_at=time.time(),
        )
        self._store.add(
            JobRecord(job.job_id, chat_id, job.filename, job.size_bytes, "queued", None, None, job.created_at),
            filename, data, password=password,
        )
        self._wake.set()
        return job

    def get(self, chat_id: str, job_id: str) -> Job | None:
        record = self._store.get(chat_id, job_id)
        if record is None:
            return None
        job = Job.of_record(record)
        with self._lock:
            running = self._running.get(job_id)
        # This process's own progress is fresher than what its last heartbeat wrote (unless it is a new attempt's,
        # still behind the recorded progress of the attempt before: what a client was shown never goes back).
        if running is None or job.finished:
            return job
        return replace(job, progress=max(job.progress, running.progress))

    def unfinished(self, chat_id: str) -> list[Job]:
        return [Job.of_record(record) for record in self._store.unfinished(chat_id)]

    def cancel(self, chat_id: str, job_id: str, *, wait_seconds: float = CANCEL_WAIT_SECONDS) -> Job | None:
        """Stops a queued or running job, waiting up to ``wait_seconds`` for it to end; returns the job as it then
        stands (possibly still running: its last step, storing, is not interrupted), or None if it is not
        unfinished."""
        job = self.get(chat_id, job_id)
        if job is None or job.finished:
            return None
        (job,) = self._cancel(chat_id, [job_id], wait_seconds)
        return job

    def cancel_chat(self, chat_id: str, *, wait_seconds: float = CANCEL_WAIT_SECONDS) -> list[Job]:
        """Cancels every job of the chat; returns those still running after ``wait_seconds``."""
        job_ids = [job.job_id for job in self.unfinished(chat_id)]
        if not job_ids:
            return []
        return [job for job in self._cancel(chat_id, job_ids, wait_seconds) if not job.finished]

    def forget_chat(self, chat_id: str) -> None:
        """Forgets the chat's finished jobs (call once none is running)."""
        self._store.delete_chat(chat_id)

    def forget(self, chat_id: str, job_id: str) -> None:
        """Forgets a job that has ended (a client dismissing one that failed); one still under way stays."""
        self._store.delete_finished(chat_id, job_id)

    def close(self) -> None:
        """Stops claiming. A job running here goes on until the process ends; if that cuts it short, its lease
        runs out and another worker (or this process's next run) takes it over."""
        self._stopping.set()
        self._wake.set()

    def _cancel(self, chat_id: str, job_ids: list[str], wait_seconds: float) -> list[Job]:
        for job_id in self._store.request_cancel(chat_id, job_ids):
            self._ingestion.discard(chat_id, job_id)  # what its last try half-stored
        with self._lock:
            running_here = [self._running[job_id] for job_id in job_ids if job_id in self._running]
        for running in running_here:
            running.cancel.set()  # at once, not at its next heartbeat
        deadline = time.monotonic() + wait_seconds
        for running in running_here:  # set once its end is written
            running.ended.wait(max(0.0, deadline - time.monotonic()))
        while True:
            jobs = [self.get(chat_id, job_id) for job_id in job_ids]
            jobs = [job for job in jobs if job is not None]
            if all(job.finished for job in jobs) or time.monotonic() >= deadline:
                return jobs
            time.sleep(_REMOTE_CANCEL_POLL_SECONDS)

    def _work(self) -> None:
        while not self._stopping.is_set():
            try:
                claimed = self._store.claim(self._worker, self._lease_seconds)
            except Exception as error:  # noqa: BLE001 - the database is away (warn_of logs the rest whole): next poll
                warn_of(log, error, "claiming an ingestion job failed")
                claimed = None
            if claimed is None:
                self._wake.wait(self._poll_seconds)
                self._wake.clear()
                continue
            try:
                self._run(claimed)
            except Exception:  # its lease runs out and another attempt is made
                log.exception("ingestion job %s could not be run", claimed.record.job_id)
            finally:
                del claimed  # the file's bytes: garbage before the heap is trimmed, not after the next claim
                release_free_memory()  # the file's bytes and its chunks are garbage now

    def _run(self, claimed: ClaimedJob) -> None:
        record = claimed.record
        running = _Running(record.job_id)
        if record.cancel_requested:
            running.cancel.set()
        with self._lock:
            self._running[record.job_id] = running
        heartbeat = threading.Thread(target=self._heartbeat, args=(running,), daemon=True)
        heartbeat.start()
        try:
            document = self._index(claimed, running)
        except Cancelled:
            self._finish(record, "cancelled", progress=running.progress)
        except VectorStoreUnreachable as error:
            self._retry_later(record, error, running)
        except AxiomError as error:
            self._finish(record, "failed", error=error.to_body(), progress=running.progress)
        except Exception as error:
            if outage(error) is not None:
                # The database went away (a restart, a cut connection): an outage, as a dead worker is, not the
                # file's fault. Left unfinished, the job's lease runs out and it is tried again (what this try
                # half-stored rolled back first), up to INGEST_MAX_ATTEMPTS starts.
                log.warning("ingestion job %s: the database was unreachable; it is tried again once its lease "
                            "runs out: %s", record.job_id, error.orig)
                return
            # A worker must record every other failure, or the job would look queued forever.
            log.exception("ingestion job %s (%s) failed unexpectedly", record.job_id, record.filename)
            self._finish(record, "failed", error=_UNEXPECTED, progress=running.progress)
        else:
            self._finish(record, "ready", document=document)
        finally:
            running.ended.set()
            heartbeat.join()
            with self._lock:
                del self._running[record.job_id]

    def _index(self, claimed: ClaimedJob, running: _Running) -> IngestedDocument:
        record = claimed.record
        if claimed.taken_over or record.retrying_since is not None:
            # Its worker died, or its last try met the vector store unreachable: keep the document if it was
            # stored whole, else roll back what was half-stored.
            kept = self._ingestion.settle(record.chat_id, record.job_id)
            running.store_answered = True
            if kept is not None:
                return kept
        if claimed.taken_over:
            if record.attempts > self._max_attempts:
                log.warning("ingestion job %s was interrupted %d times; failed", record.job_id, record.attempts - 1)
                raise _interrupted(record.attempts - 1)
            log.warning("ingestion job %s was interrupted; attempt %d", record.job_id, record.attempts)
        return self._ingestion.ingest(
            record.chat_id, claimed.filename, claimed.data,
            progress=lambda done: setattr(running, "progress", done),
            document_id=record.job_id, cancelled=running.cancel, password=claimed.password,
        )

    def _retry_later(self, record: JobRecord, error: VectorStoreUnreachable, running: _Running) -> None:
        """Queues the job to be tried again once the vector store may be back, or fails it if it has been
        unreachable for too long (counted from the last try that did not reach it)."""
        now = time.time()
        progress = running.progress
        since = now if running.store_answered or record.retrying_since is None else record.retrying_since
        unreachable_for = now - since
        if unreachable_for >= self._retry_limit_seconds:
            log.warning("ingestion job %s: the vector store was unreachable for %.0f s; failed",
                        record.job_id, unreachable_for)
            if self._finish(record, "failed", error=_unreachable_too_long(unreachable_for, error), progress=progress):
                self._ingestion.discard(record.chat_id, record.job_id)  # what its last try half-stored
            return
        # Waits that double (each as long as the outage so far), the last try at the limit.
        delay = min(max(self._retry_seconds, unreachable_for), _MAX_RETRY_DELAY_SECONDS,
                    since + self._retry_limit_seconds - now)
        log.warning("ingestion job %s: the vector store is unreachable; trying again in %.1f s",
                    record.job_id, delay)
        state = self._store.retry_later(
            record.job_id, self._worker, retry_at=now + delay, retrying_since=since, error=error.to_body(),
            progress=progress,
        )
        if state is None:
            log.warning("ingestion job %s was taken over by another worker before it could wait", record.job_id)
        elif state == "cancelled":
            self._ingestion.discard(record.chat_id, record.job_id)

    def _heartbeat(self, running: _Running) -> None:
        while not running.ended.wait(self._heartbeat_seconds):
            try:
                cancel = self._store.heartbeat(running.job_id, self._worker, self._lease_seconds, running.progress)
            except Exception as error:  # noqa: BLE001 - a missed beat costs nothing while the lease lasts
                warn_of(log, error, "renewing the lease of ingestion job %s failed", running.job_id)
                continue
            if cancel is None:
                log.warning("ingestion job %s was taken over by another worker; stopping", running.job_id)
            if cancel is not False:
                running.cancel.set()

    def _finish(
        self, record: JobRecord, state: JobState, *, document: IngestedDocument | None = None,
        error: dict[str, Any] | None = None, progress: float = 0.0,
    ) -> bool:
        """Whether the job was still this worker's to end."""
        document_id = document.document_id if document else None
        if self._store.finish(
            record.job_id, self._worker, state, document_id=document_id, error=error, progress=progress
        ):
            return True
        log.warning("ingestion job %s ended as %s after another worker took it over", record.job_id, state)
        return False
