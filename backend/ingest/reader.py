"""Reads uploaded files in worker processes that are recycled, so no file can keep memory in the server or hang it.

Parsers are the part of Axiom that handles hostile bytes. Measured in the server process: a DOCX of 11 M empty
paragraphs left ~1.35 GB behind after its request had failed (lxml trees held by python-docx's reference cycles, in C
memory the garbage collector does not count), and nothing bounded how long a crafted PDF could keep pypdf busy. In a
worker process whatever a parse leaves behind ends with the process: each worker reads ``files_per_worker`` files and
is replaced, runs under an address-space limit (a file needing more fails as too complex to read, instead of taking
the machine's memory) and is killed at a time limit. Parsing itself is light (≤ 100 MB for the 400-page PDF), so one
worker with a 1 GiB limit leaves every real document room. pebble is used because the standard library's pool
cannot kill a worker that overran its time.

Text recognition (OCR) takes seconds a page, so a file's time limit grows by ``OcrOptions.page_seconds`` for each
page it has to recognise, and the worker reports each page recognised through a pipe of the read's own (a killed
worker can break only its own pipe). Tesseract runs as a program started by the worker: it inherits the worker's
address-space limit.

An upload request reads with ``Patience``: it waits so long (queue included) and lets the read recognise so many
pages; past either the read stops with ``TooLongForRequest`` and the file becomes a background job.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import multiprocessing
import resource
import threading
import time
from concurrent.futures import CancelledError, TimeoutError
from dataclasses import dataclass
from multiprocessing.connection import Connection

from pebble import ProcessExpired, ProcessFuture, ProcessPool

from backend.errors import Cancelled, TooLongForRequest, UnreadableDocument
from backend.ingest.loaders import OcrOptions, PageProgress, base_filename, load_document
from backend.memory import release_free_memory
from backend.models import LoadedDocument

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ReaderLimits:
    workers: int = 1
    files_per_worker: int = 20
    memory_bytes: int = 1024 * 1024 * 1024
    seconds: float = 300.0  # plus OcrOptions.page_seconds for each page to recognise



@dataclass(frozen=True, slots=True)
class Patience:
    """How long an upload request waits for its file to be read, from the moment it asks (a read queued behind a
    background job's counts too), and how many pages the read may recognise (OCR: seconds a page)."""

    seconds: float
    pages_to_recognise: int = 1


# How often a read looks at its progress, its time limit and its cancel event.
_POLL_SECONDS = 0.2


class DocumentReader:
    """``read(filename, data)`` is ``load_document`` in a worker process, with the same results and typed errors."""

    def __init__(self, limits: ReaderLimits) -> None:
        self._limits = limits
        # spawn, not fork: the server has threads (and ONNX Runtime's pools) that a forked child would inherit
        # half-locked.
        self._context = multiprocessing.get_context("spawn")
        self._pool = ProcessPool(
            # Every read is followed by a task of nothing (see read), which pebble counts as well.
            max_workers=limits.workers, max_tasks=2 * limits.files_per_worker, initializer=_limit_memory,
            initargs=(limits.memory_bytes,), context=self._context,
        )

    def read(
        self, filename: str, data: bytes | bytearray, cancelled: threading.Event | None = None,
        on_page: PageProgress | None = None, *, ocr: OcrOptions | None = None, patience: Patience | None = None,
        password: str | None = None,
    ) -> LoadedDocument:
        """``cancelled`` stops the reading early: the worker is killed and Cancelled raised. ``on_page`` hears of
        each page recognised by OCR (pages done, pages to do). Past ``patience`` the read stops (its worker is
        killed if it was reading) and TooLongForRequest is raised. ``password`` opens a PDF that needs one."""
        ocr = ocr or OcrOptions()
        recognise_at_most = patience.pages_to_recognise if patience else None
        progress, progress_in_worker = self._context.Pipe(duplex=False)
        try:
            return self._await(
                self._pool.schedule(
                    _read_and_release,
                    args=(filename, data, ocr, progress_in_worker, recognise_at_most, password),
                ),
                filename, progress, ocr.page_seconds, cancelled, on_page, patience,
            )
        finally:
            progress.close()
            progress_in_worker.close()
            # pebble's scheduling thread keeps the last task it was given until the next one comes: with its
            # arguments (the file), its result, and an error's traceback (every caller's frame, holding the file
            # again; and a PDF's password). Measured: a 50 MB file stayed in the server after its job had failed. A
            # task of nothing takes its place.
            with contextlib.suppress(RuntimeError):  # the pool is being stopped: it keeps nothing any more
                self._pool.schedule(_nothing)

    def _await(
        self, future: ProcessFuture, filename: str, progress: Connection, page_seconds: float,
        cancelled: threading.Event | None, on_page: PageProgress | None, patience: Patience | None,
    ) -> LoadedDocument:
        watch = _ReadProgress(progress, on_page)
        asked_at = time.monotonic()
        while True:
            try:
                error = future.exception(timeout=_POLL_SECONDS)
            except TimeoutError:
                watch.listen()
                seconds = self._limits.seconds + watch.pages_to_recognise * page_seconds
                if watch.running_for() > seconds:
                    future.cancel()
                    raise _too_slow(filename, seconds) from None
                if cancelled is not None and cancelled.is_set():
                    future.cancel()
                    raise Cancelled from None
                if patience is not None and time.monotonic() - asked_at > patience.seconds:
                    future.cancel()
                    raise TooLongForRequest from None
                continue
            except CancelledError:
                raise Cancelled from None
            if error is None:
                return future.result()
            # The future holds the error: raised with this frame (holding the future, or the error) in its
            # traceback, it would make a cycle keeping every caller's frame, and the file in them, until the
            # garbage collector next ran.
            del future
            try:
                raise _read_error(error, filename)
            finally:
                del error

    def warm_up(self) -> None:
        """Starts a worker now, so the first upload does not wait for one to import its parsers."""
        self._pool.schedule(gc.collect)

    def close(self) -> None:
        self._pool.stop()
        self._pool.join()


class _ReadProgress:
    """What the worker reports on a read: that it started (the time limit counts from then, not from the queue),
    and the pages recognised so far out of how many."""

    def __init__(self, progress: Connection, on_page: PageProgress | None) -> None:
        self._progress = progress
        self._on_page = on_page
        self._started: float | None = None
        self.pages_to_recognise = 0

    def listen(self) -> None:
        try:
            while self._progress.poll():
                done, total = self._progress.recv()
                self._started = self._started or time.monotonic()
                self.pages_to_recognise = total
                if self._on_page is not None and total:
                    self._on_page(done, total)
        except (EOFError, OSError):  # the worker ended (or was killed) and closed its end
            pass

    def running_for(self) -> float:
        return 0.0 if self._started is None else time.monotonic() - self._started


def _read_error(error: BaseException, filename: str) -> BaseException:
    """What a read's failure in the worker is to its caller."""
    if isinstance(error, ProcessExpired):  # killed by the kernel or crashed in native code
        log.warning("the worker reading %r ended abnormally: %s", filename, error)
    if isinstance(error, MemoryError | ProcessExpired):
        too_large = _too_large(filename)
        too_large.__cause__ = error
        return too_large
    return error


def _read_and_release(
    filename: str, data: bytes | bytearray, ocr: OcrOptions, progress: Connection, recognise_at_most: int | None,
    password: str | None,
) -> LoadedDocument:
    def report(done: int, total: int) -> None:
        if recognise_at_most is not None and total > recognise_at_most:
            raise TooLongForRequest  # before the first page is recognised: the loaders announce the count first
        progress.send((done, total))

    try:
        report(0, 0)  # started
        return load_document(filename, bytes(data), ocr=ocr, on_page=report, password=password)
    finally:
        progress.close()
        # A worker reads several files: give back what this one used before the next arrives, so an idle worker
        # stays small.
        gc.collect()
        release_free_memory()


def _nothing() -> None:
    pass


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
