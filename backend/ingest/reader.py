"""Reads uploaded files in worker processes that are recycled, so no file can keep memory in the server or hang it.

Parsers are the part of Axiom that handles hostile bytes. Measured in the server process: a DOCX of 11 M empty
paragraphs left ~1.35 GB behind after its request had failed (lxml trees held by python-docx's reference cycles, in C
memory the garbage collector does not count), and nothing bounded how long a crafted PDF could keep pypdf busy. In a
worker process whatever a parse leaves behind ends with the process: each worker reads ``files_per_worker`` files and
is replaced, runs under an address-space limit (a file needing more fails as too complex to read, instead of taking
the machine's memory) and is killed at a time limit. Parsing itself is light (≤ 100 MB for the 400-page PDF), so one
worker with a 1 GiB limit leaves every real document room. pebble is used because the standard library's pool
cannot kill a worker that overran its time.
"""

from __future__ import annotations

import gc
import logging
import multiprocessing
import resource
import threading
from concurrent.futures import CancelledError, TimeoutError
from dataclasses import dataclass

from pebble import ProcessExpired, ProcessPool

from backend.errors import AxiomError, Cancelled, UnreadableDocument
from backend.ingest.loaders import base_filename, load_document
from backend.memory import release_free_memory
from backend.models import LoadedDocument

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ReaderLimits:
    workers: int = 1
    files_per_worker: int = 20
    memory_bytes: int = 1024 * 1024 * 1024
    seconds: float = 300.0


class DocumentReader:
    """``read(filename, data)`` is ``load_document`` in a worker process, with the same results and typed errors."""

    def __init__(self, limits: ReaderLimits) -> None:
        self._limits = limits
        # spawn, not fork: the server has threads (and ONNX Runtime's pools) that a forked child would inherit
        # half-locked.
        self._pool = ProcessPool(
            max_workers=limits.workers, max_tasks=limits.files_per_worker, initializer=_limit_memory,
            initargs=(limits.memory_bytes,), context=multiprocessing.get_context("spawn"),
        )

    def read(self, filename: str, data: bytes, cancelled: threading.Event | None = None) -> LoadedDocument:
        """``cancelled`` stops the reading early: the worker is killed and Cancelled raised."""
        future = self._pool.schedule(_read_and_release, args=(filename, data), timeout=self._limits.seconds)
        while True:
            try:
                return future.result(timeout=0.2 if cancelled is not None else None)
            except TimeoutError:
                if future.done():  # pebble reports the time limit as the future's own TimeoutError
                    raise _too_slow(filename, self._limits.seconds) from None
                if cancelled is not None and cancelled.is_set():
                    future.cancel()
                    raise Cancelled from None
            except CancelledError:
                raise Cancelled from None
            except AxiomError:
                raise
            except MemoryError as error:
                raise _too_large(filename) from error
            except ProcessExpired as error:  # killed by the kernel or crashed in native code
                log.warning("the worker reading %r ended abnormally: %s", filename, error)
                raise _too_large(filename) from error

    def warm_up(self) -> None:
        """Starts a worker now, so the first upload does not wait for one to import its parsers."""
        self._pool.schedule(gc.collect)

    def close(self) -> None:
        self._pool.stop()
        self._pool.join()


def _read_and_release(filename: str, data: bytes) -> LoadedDocument:
    try:
        return load_document(filename, data)
    finally:
        # A worker reads several files: give back what this one used before the next arrives, so an idle worker
        # stays small.
        gc.collect()
        release_free_memory()


def _limit_memory(limit_bytes: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))


def _too_large(filename: str) -> UnreadableDocument:
    name = base_filename(filename)
    return UnreadableDocument(
        f"“{name}” needs more memory to read than a document may use. Split it into smaller documents and upload "
        "those.",
        reason=UnreadableDocument.TOO_COMPLEX, filename=name,
    )


def _too_slow(filename: str, seconds: float) -> UnreadableDocument:
    name = base_filename(filename)
    return UnreadableDocument(
        f"“{name}” took longer than {seconds:g} s to read and was given up. Split it into smaller documents, or save "
        "it again from the original, and upload those.",
        reason=UnreadableDocument.TOO_COMPLEX, filename=name,
    )
