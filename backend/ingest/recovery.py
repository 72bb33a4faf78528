"""Rolling back, while the other replicas run, what a dead one left half-stored (a shared database), and on every
database the documents discarded while the vector store was unreachable, once it is back.

A background job's document is taken over by the worker that next claims the job (jobs.py). An upload indexed
within its request has no job: the process storing it says so by holding its document's advisory lock
(``DocumentStore.storing``), which PostgreSQL releases the moment that process's connection closes. So every
replica sweeps every ``every_seconds`` (the jobs' lease: a dead replica's upload is recovered about as soon as
its jobs are) and rolls back the documents still 'indexing' that nobody holds (``IngestionService.recover``).
On SQLite one process uses the database and its start-up recovery is enough for the rest.

The sweep also drops this replica's keyword (BM25) caches of chats deleted through another replica: nothing else
would, since a deleted chat is never searched again. And on every database it frees vectors whose document has
no row (``IngestionService.free_orphans``: a storer interrupted by two database outages can leave them), looking
in ``ORPHAN_CHATS_PER_SWEEP`` chats' collections each time, in turn.
"""

from __future__ import annotations

import logging
import threading

from backend.ingest.service import IngestionService
from backend.stores.database import warn_of
from backend.stores.jobs import JobStore

log = logging.getLogger(__name__)

# With a sweep every 30 s (the default lease), a thousand chats are each looked at every 5 minutes.
ORPHAN_CHATS_PER_SWEEP = 100


class RecoverySweep:
    def __init__(self, ingestion: IngestionService, jobs: JobStore, *, every_seconds: float) -> None:
        self._ingestion = ingestion
        self._jobs = jobs
        self._every_seconds = every_seconds
        self._next_orphan_chats = 0  # where the next sweep's share of the vector collections starts
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="axiom-recovery", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=self._every_seconds)

    def _run(self) -> None:
        while not self._stopping.wait(self._every_seconds):
            try:
                if self._jobs.shared:
                    self._ingestion.recover(keep=set(self._jobs.unfinished_ids()))
                    self._ingestion.forget_gone_chats()
                else:  # what is still 'indexing' is this process's own upload
                    self._ingestion.purge_discarded()
                self._next_orphan_chats = self._ingestion.free_orphans_from(
                    self._next_orphan_chats, ORPHAN_CHATS_PER_SWEEP
                )
            except Exception as error:  # noqa: BLE001 - a store is down: the next sweep tries again
                warn_of(log, error, "the recovery sweep failed; next in %.0f s", self._every_seconds)
