"""Where each uploaded file goes: indexed within the request, or handed to a background job, or refused.

The request reads each file first (in the reader's workers, as always), waiting at most ``Patience`` for all its
files together. What was read decides: documents of at most ``background_chars`` characters together are stored
before the response (embedding them takes a few seconds at most), from what was read; a file past that, a read that
outlasts the request's wait (or a file not read before it ran out), a scan with more than one page to recognise
(OCR takes seconds a page), or any file when the client asks for ``background=true``, becomes a job the client
polls, which reads the file again. The size in bytes decides nothing: a 2 MB sheet can hold half a
million cells, and a 2 MB scan minutes of OCR. Originals are not kept: a background job's file waits in the
database only until its job ends.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from backend.api.chats import Chats
from backend.api.multipart import ReceivedFile
from backend.api.schemas import DocumentState, ErrorBody, FailedUpload, UploadedDocument, UploadResponse
from backend.api.upload_budget import Reservation, UploadBudget
from backend.errors import AxiomError, Conflict, NotFound, TooLongForRequest
from backend.ingest.jobs import IngestJobs
from backend.ingest.loaders import file_type_named
from backend.ingest.reader import Patience
from backend.ingest.service import IngestionService, ReadFile
from backend.memory import release_free_memory
from backend.models import LoadedDocument
from backend.stores.users import User


@dataclass(frozen=True, slots=True)
class UploadOutcome:
    body: UploadResponse
    status: int


class DocumentUploads:
    def __init__(
        self, ingestion: IngestionService, jobs: IngestJobs, chats: Chats, budget: UploadBudget, *,
        background_chars: int, patience: Patience,
    ) -> None:
        self._ingestion = ingestion
        self._jobs = jobs
        self._chats = chats
        self._budget = budget
        self._background_chars = background_chars
        self._patience = patience

    @contextmanager
    def reservation(self) -> Iterator[Reservation]:
        """One request's share of the upload budget, released when the request ends (a background job's file
        waits in the database, not in memory)."""
        reservation = Reservation(self._budget)
        try:
            yield reservation
        finally:
            reservation.close()
            release_free_memory()  # the request's bytes and the parse results it held are garbage now

    def accept(
        self, chat_id: str, files: list[ReceivedFile], *, background: bool, user: User | None = None,
        password: str | None = None,
    ) -> UploadOutcome:
        """Blocking (it reads, and may index). A single file that fails raises its error, so the response carries
        that error's status; with several files each failure is listed and the others still go in. The chat is
        claimed for ``user`` (backend/api/chats.py) only when a file goes in: a refused upload makes no chat.
        ``password`` opens the PDFs that need one (and goes with a PDF's job, which reads it again)."""
        failures: list[tuple[str, AxiomError]] = []
        queued: list[ReceivedFile] = []
        inline: list[ReadFile] = []
        # One wait and one amount of text for the whole request: ten large files must not keep it ten times over.
        deadline = time.monotonic() + self._patience.seconds
        inline_characters = 0
        for received in files:
            if received.error is not None:
                failures.append((received.name, received.error))
                continue
            wait = deadline - time.monotonic()
            if background or wait <= 0:
                queued.append(received)
                continue
            try:
                document = self._ingestion.read(
                    received.name, received.data, replace(self._patience, seconds=wait), password=password
                )
            except TooLongForRequest:
                queued.append(received)
            except AxiomError as error:
                # Kept without its traceback, which holds this frame and so the files: a cycle until gc ran.
                failures.append((received.name, error.with_traceback(None)))
            else:
                characters = _characters(document)
                if inline_characters + characters > self._background_chars:
                    queued.append(received)  # its job reads it again rather than this request keeping the text
                else:
                    inline_characters += characters
                    inline.append(ReadFile(received.name, received.data, document))
        made = bool(inline or queued) and self._chats.claim(chat_id, user)
        try:
            results = self._ingestion.ingest_many(chat_id, inline)
        except BaseException:
            if made:
                self._chats.unclaim(chat_id, user)
            raise
        failures += [(f.filename, result) for f, result in zip(inline, results) if isinstance(result, AxiomError)]
        if made and not queued and len(failures) == len(files):
            self._chats.unclaim(chat_id, user)  # nothing was stored: a refused upload makes no chat
        if len(files) == 1 and failures:
            results.clear()  # raised from no list of this frame's, so its traceback holds nothing holding it
            raise failures.pop()[1]
        # A job's file is in the database from here on, so it leaves the budget with the request.
        jobs = [
            DocumentState.of_job(self._jobs.submit(chat_id, f.name, f.data, password=_opening(f.name, password)))
            for f in queued
        ]
        body = UploadResponse(
            uploaded=[UploadedDocument.of(r) for r in results if not isinstance(r, AxiomError)],
            failed=[FailedUpload(name=name, error=ErrorBody.of(error)) for name, error in failures],
            jobs=jobs,
        )
        return UploadOutcome(body, 202 if jobs else 200)

    def remove(self, chat_id: str, doc_id: str) -> None:
        """Deletes a document. By the id of a job still under way: cancels the job instead (it keeps nothing), or,
        if the job got as far as storing its document, waits for that and deletes the document. By the id of a
        job that had ended: deletes the document it made, or dismisses a job that failed or was cancelled (nothing
        of it is kept, so only the job's own record goes)."""
        job = self._jobs.cancel(chat_id, doc_id)
        if job is None:
            self._remove_finished(chat_id, doc_id)
            return
        if not job.finished:
            raise Conflict(
                f"“{job.filename}” is being stored right now; delete it again in a moment.", doc_id=doc_id
            )
        if job.state == "ready" and job.document_id == doc_id:
            self._ingestion.delete(chat_id, doc_id)
        # Otherwise cancelled with nothing stored, or a duplicate of a document it did not make.

    def _remove_finished(self, chat_id: str, doc_id: str) -> None:
        """A document, or a job that had ended before this delete (GET shows both). A job whose document is there
        has it deleted (the job then reads ``cancelled``); any other is forgotten: GET then answers 404 for it as
        for a document deleted."""
        job = self._jobs.get(chat_id, doc_id)
        if job is None or (job.state == "ready" and job.document_id == doc_id):
            try:
                self._ingestion.delete(chat_id, doc_id)
                return
            except NotFound:
                if job is None:
                    raise
                # Its document was deleted already: it reads cancelled, and is forgotten as one.
        self._jobs.forget(chat_id, doc_id)


def _opening(filename: str, password: str | None) -> str | None:
    """The password a job keeps for its file: a PDF's only (no other file is opened by one)."""
    return password if file_type_named(filename) == "pdf" else None


def _characters(document: LoadedDocument) -> int:
    return sum(len(page.text) for page in document.pages)
