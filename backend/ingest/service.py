"""Ingestion: load → chunk → embed → store in Chroma and the database, atomically per document.

Order of writes: the registry row ('indexing') first, then Chroma, then parents, chunks, 'ready' and the chat's
new version in one transaction. Any failure rolls the batch back from both (but a database outage: the sweep
settles it); a kill mid-way leaves an 'indexing' row that ``recover()`` rolls back at the next start, or, on a
shared database, any replica's next sweep (``recovery.py``; for a background job, the worker that retries the job).
Retrieval only returns parents of ready documents and BM25 indexes only their chunks (its per-replica cache
follows the chat's version), so a document is never visible half-stored.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Container, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from backend.embeddings import Embedder
from backend.errors import (
    AxiomError,
    Cancelled,
    Conflict,
    NotFound,
    TooLongForRequest,
    UnreadableDocument,
    VectorStoreUnreachable,
)
from backend.ids import new_document_id, validate_id
from backend.ingest.chunker import ParentChildChunker
from backend.ingest.loaders import PageProgress, load_document
from backend.ingest.reader import Patience
from backend.models import Chunk, LoadedDocument, Parent
from backend.stores.bm25 import BM25Store
from backend.stores.chroma import ChromaStore
from backend.stores.database import outage, warn_of
from backend.stores.documents import DISCARDED, INDEXING, READY, DocumentRecord, DocumentStore, new_record

log = logging.getLogger(__name__)

Progress = Callable[[float], None]


class Loader(Protocol):
    """Reads a file's text (``DocumentReader.read``: in a worker process); stops with Cancelled once ``cancelled``
    is set, and with TooLongForRequest past ``patience``; ``on_page`` hears of each page recognised by OCR (pages
    done, pages to do); ``password`` opens a PDF that needs one."""

    def __call__(
        self, filename: str, data: bytes | bytearray, cancelled: threading.Event | None = None,
        on_page: PageProgress | None = None, *, patience: Patience | None = None, password: str | None = None,
    ) -> LoadedDocument: ...


def load_here(
    filename: str, data: bytes | bytearray, cancelled: threading.Event | None = None,
    on_page: PageProgress | None = None, *, patience: Patience | None = None, password: str | None = None,
) -> LoadedDocument:
    """Reads in this process, without limits: for tools and tests that read only trusted files."""
    return load_document(filename, bytes(data), on_page=on_page, password=password)

# Embedding dominates ingestion time, so progress is reported per slice of this many chunks.
_PROGRESS_SLICE = 64
# How many times a file is stored (embedded again after the first) while other processes (replicas) storing the same
# content after its duplicate check fail: one more round is rare, and each is bounded by the stores' timeouts.
_STORING_ROUNDS = 3
# Unless pages are recognised (OCR): about 2 s a page against 0.2 s to embed a page's chunks, so reading then takes
# this share of a job's progress.
_RECOGNITION_SHARE = 0.8
# Looking for vectors without a document row (``free_orphans``): chunks read per look, and the most document ids
# a look may exclude (Chroma spells each as an SQL variable, and SQLite takes at most 32766 in a statement).
_ORPHAN_CHUNKS_PER_LOOK = 100
_MOST_DOCUMENTS_EXCLUDED = 30_000


@dataclass(frozen=True, slots=True)
class IngestedDocument:
    document_id: str
    filename: str
    page_count: int
    chunk_count: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class ReadFile:
    """A file already read (``IngestionService.read``), stored without reading it again."""

    filename: str
    data: bytes | bytearray
    document: LoadedDocument


@dataclass(frozen=True, slots=True)
class _Prepared:
    record: DocumentRecord
    parents: list[Parent]
    chunks: list[Chunk]


class IngestionService:
    def __init__(
        self,
        *,
        chunker: ParentChildChunker,
        embedder: Embedder,
        vectors: ChromaStore,
        keywords: BM25Store,
        documents: DocumentStore,
        load: Loader = load_here,
    ) -> None:
        self._chunker = chunker
        self._embedder = embedder
        self._vectors = vectors
        self._keywords = keywords
        self._documents = documents
        self._load = load
        # Serialises ingestion within a chat, so two uploads of one file cannot both pass the duplicate check.
        self._chat_locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)

    def ingest(
        self, chat_id: str, filename: str, data: bytes, progress: Progress | None = None, *,
        document_id: str | None = None, cancelled: threading.Event | None = None, password: str | None = None,
    ) -> IngestedDocument:
        """``document_id``: the id the new document gets (a background job's own id, so the job's id keeps finding
        its document). ``cancelled`` stops the work with Cancelled at the next step, with nothing stored.
        ``password`` opens a PDF that needs one."""
        (result,) = self._ingest(chat_id, [(filename, data, document_id, None)], progress, cancelled, password)
        if isinstance(result, AxiomError):
            try:
                raise result
            finally:
                del result  # the error's traceback holds this frame: a cycle keeping the file until gc ran
        return result

    def ingest_many(
        self, chat_id: str, files: Sequence[tuple[str, bytes] | ReadFile], progress: Progress | None = None
    ) -> list[IngestedDocument | AxiomError]:
        """One result per file, in order: the stored document, or the typed error that kept it out. A file is
        (name, bytes) to read, or a ReadFile.

        A file that cannot be read fails alone; a storage failure rolls back every new document of the batch.
        """
        return self._ingest(chat_id, [
            (file.filename, file.data, None, file.document) if isinstance(file, ReadFile) else (*file, None, None)
            for file in files
        ], progress, None)

    def read(
        self, filename: str, data: bytes | bytearray, patience: Patience, *, password: str | None = None
    ) -> LoadedDocument:
        """Reads a file the way ingesting it would, for a caller that then stores it (``ingest_many`` with a
        ReadFile) or leaves it to a background job; TooLongForRequest past ``patience``."""
        return self._read(filename, data, None, None, patience, password)

    def _ingest(
        self, chat_id: str, files: Sequence[tuple[str, bytes | bytearray, str | None, LoadedDocument | None]],
        progress: Progress | None, cancelled: threading.Event | None, password: str | None = None,
    ) -> list[IngestedDocument | AxiomError]:
        validate_id(chat_id, field="chat_id")
        phases = _Phases(progress)
        with self._chat_locks[chat_id]:
            results: list[IngestedDocument | AxiomError | _Prepared] = []
            seen: dict[str, IngestedDocument | _Prepared] = {}
            for filename, data, document_id, document in files:
                try:
                    results.append(self._prepare_unless_known(
                        chat_id, filename, data, document, seen, document_id, cancelled, phases.reading, password
                    ))
                except AxiomError as error:
                    # Kept as a result: without the traceback that holds this frame (and so the results).
                    results.append(error.with_traceback(None))
            _stop_if(cancelled)
            stored_meanwhile = self._store_unless_stored_meanwhile(
                [r for r in results if isinstance(r, _Prepared)], chat_id, phases.storing if progress else None,
                cancelled,
            )
            return [_as_stored(r, stored_meanwhile) if isinstance(r, _Prepared) else r for r in results]

    def _prepare_unless_known(
        self, chat_id: str, filename: str, data: bytes | bytearray, document: LoadedDocument | None,
        seen: dict[str, IngestedDocument | _Prepared], document_id: str | None, cancelled: threading.Event | None,
        on_page: PageProgress, password: str | None,
    ) -> IngestedDocument | _Prepared:
        # The file is read before the duplicate check: a file of a type Axiom does not read is refused as such even
        # when the same bytes were uploaded before (and a locked PDF without its password, as it was then).
        document = document or self._read(filename, data, cancelled, on_page, password=password)
        sha256 = hashlib.sha256(data).hexdigest()
        earlier = seen.get(sha256) or self._same_content(chat_id, sha256)
        if earlier is not None:
            return _as_duplicate(earlier)
        prepared = self._prepare(chat_id, document, data, sha256, document_id or new_document_id())
        seen[sha256] = prepared
        return prepared

    def _same_content(self, chat_id: str, sha256: str) -> DocumentRecord | None:
        """The chat's ready document with this content. One still 'indexing' is being stored by a live process
        (another replica) or left over (an upload that failed while the vector store was down, so its roll-back
        failed too; a dead replica's): its outcome is waited for (``_settled``), so a file is never answered as a
        duplicate of a document that then fails to be stored."""
        earlier = self._documents.find_by_sha256(chat_id, sha256)
        if earlier is None or earlier.status == READY:
            return earlier
        return self._settled(chat_id, earlier.document_id)

    def _settled(self, chat_id: str, document_id: str) -> DocumentRecord | None:
        """The document once no process is storing it any more (waiting for the one that is: its storing is
        bounded by the stores' own timeouts): the record if it was stored whole, else None once whatever was
        half-stored is rolled back. Call with the chat's lock held: no other storing of this process is under
        way (on SQLite, which has one process, nothing is waited for)."""
        with self._documents.storing([document_id]):
            record = self._documents.get(chat_id, document_id)
            # Discarded first, as the sweep does (``recover``): a database restart may have dropped the lock of a
            # storer still at work, whose 'ready' is then refused, not committed before its row is removed here.
            if record is not None and record.status == INDEXING and not self._documents.discard(document_id):
                record = self._documents.get(chat_id, document_id)  # its storer marked it ready meanwhile
            if record is not None and record.status == READY:
                return record
            self.roll_back(chat_id, document_id)
            return None

    def _read(
        self, filename: str, data: bytes | bytearray, cancelled: threading.Event | None,
        on_page: PageProgress | None, patience: Patience | None = None, password: str | None = None,
    ) -> LoadedDocument:
        try:
            return self._load(filename, data, cancelled, on_page, patience=patience, password=password)
        except (AxiomError, Cancelled, TooLongForRequest):
            raise
        except Exception as exc:  # a loader bug must still give the user an answer, not a stack trace
            log.exception("loading %r failed unexpectedly", filename)
            raise UnreadableDocument(
                f"'{filename}' could not be read; the file may be damaged.", reason=UnreadableDocument.CORRUPT
            ) from exc

    def _prepare(
        self, chat_id: str, document: LoadedDocument, data: bytes | bytearray, sha256: str, document_id: str
    ) -> _Prepared:
        parents, chunks = self._chunker.chunk(document, document_id)
        if not chunks:
            raise UnreadableDocument(
                f"'{document.filename}' contains no text that could be indexed.", reason=UnreadableDocument.NO_TEXT
            )
        record = new_record(
            document_id=document_id, chat_id=chat_id, filename=document.filename, sha256=sha256,
            file_type=document.file_type, size_bytes=len(data), page_count=document.page_count,
        )
        return _Prepared(record=record, parents=parents, chunks=chunks)

    def _store(
        self, batch: list[_Prepared], chat_id: str, progress: Progress | None, cancelled: threading.Event | None
    ) -> dict[str, DocumentRecord]:
        """Stores the batch; returns, by document id, the documents found already stored with the same content (by
        another replica, after the duplicate check), which are then not stored again."""
        if not batch:
            if progress:
                progress(1.0)
            return {}
        chunks = [chunk for prepared in batch for chunk in prepared.chunks]
        embeddings = self._embed(chunks, progress, cancelled)
        _stop_if(cancelled)  # the last moment a cancel is taken: from here on, the document is stored whole
        begun: list[_Prepared] = []
        stored_meanwhile: dict[str, DocumentRecord] = {}
        # Read before the rows are begun: a row found gone at 'ready' was then removed by the chat's deletion if
        # the count grew, else by another replica's roll-back (``mark_ready``).
        chat_deletions = self._documents.chat_deletions(chat_id)
        # Held from before the rows say 'indexing' until they are 'ready' or gone: recovery leaves them be.
        with self._documents.storing(prepared.record.document_id for prepared in batch):
            try:
                for prepared in batch:
                    same_content = self._documents.begin(prepared.record)
                    if same_content is None:
                        begun.append(prepared)
                    else:
                        stored_meanwhile[prepared.record.document_id] = same_content
                kept = [i for i, chunk in enumerate(chunks) if chunk.document_id not in stored_meanwhile]
                if begun:
                    self._vectors.add(chat_id, [chunks[i] for i in kept], embeddings[kept])
                for prepared in begun:
                    self._documents.mark_ready(
                        prepared.record, prepared.parents, prepared.chunks, chat_deletions=chat_deletions
                    )
            except BaseException as error:
                # With the database gone mid-way, a 'ready' may have committed unacknowledged: rolling back would
                # take its vectors, then fail to remove its row. The sweep (``recover``), or the job's next worker
                # (``settle``), tells a ready document from a half-stored one once the database is back.
                if outage(error) is None:
                    for prepared in begun:
                        self.roll_back(chat_id, prepared.record.document_id)
                raise
        self._warm_keywords(chat_id)
        if progress:
            progress(1.0)
        return stored_meanwhile

    def _store_unless_stored_meanwhile(
        self, batch: list[_Prepared], chat_id: str, progress: Progress | None, cancelled: threading.Event | None
    ) -> dict[str, DocumentRecord | Conflict]:
        """``_store``, where a document another replica began storing with the same content after the duplicate
        check is waited for: if it was stored, it is returned by the id of the one not stored; if not, the batch's
        own is stored after all (embedded again from the same prepared chunks), in up to ``_STORING_ROUNDS``
        rounds, after which a document still not stored is returned as a Conflict to try again later."""
        stored_meanwhile: dict[str, DocumentRecord | Conflict] = {}
        for _ in range(_STORING_ROUNDS):
            if not batch:
                return stored_meanwhile
            failed_meanwhile = set()
            for document_id, same_content in self._store(batch, chat_id, progress, cancelled).items():
                settled = self._settled(chat_id, same_content.document_id)
                if settled is None:
                    failed_meanwhile.add(document_id)
                else:
                    stored_meanwhile[document_id] = settled
            # Each round stores the rest unless yet another replica began the same content meanwhile.
            batch = [prepared for prepared in batch if prepared.record.document_id in failed_meanwhile]
            progress = None  # the bar reached its end with the first round
        for prepared in batch:
            log.warning("%s was begun and failed by other processes %d times", prepared.record.filename,
                        _STORING_ROUNDS)
            stored_meanwhile[prepared.record.document_id] = Conflict(
                f"“{prepared.record.filename}” could not be stored: other uploads of the same file kept beginning "
                "to store it and failing. Upload it again in a moment.", filename=prepared.record.filename,
            )
        return stored_meanwhile

    def _embed(
        self, chunks: Sequence[Chunk], progress: Progress | None, cancelled: threading.Event | None
    ) -> np.ndarray:
        parts = []
        for start in range(0, len(chunks), _PROGRESS_SLICE):
            _stop_if(cancelled)
            parts.append(self._embedder.embed_documents([c.text for c in chunks[start : start + _PROGRESS_SLICE]]))
            if progress:
                # Storing the vectors takes the last few percent.
                progress(0.95 * min(1.0, (start + _PROGRESS_SLICE) / len(chunks)))
        return np.vstack(parts)

    def _warm_keywords(self, chat_id: str) -> None:
        """The chat's BM25 cache is rebuilt now rather than at its first question; if that fails, the question
        rebuilds it (the document is stored either way)."""
        try:
            self._keywords.refresh(chat_id)
        except AxiomError:
            log.warning("the keyword index of %s could not be refreshed after an upload", chat_id, exc_info=True)

    def roll_back(self, chat_id: str, document_id: str) -> None:
        """Removes whatever of the document was stored (nothing, if it was never begun), and the chat's vector
        collection if no document is left in it: the chat's first file rolled back (a dead replica's, a job
        cancelled), or one refused as its chat was deleted, whose vectors made the collection again after the
        deletion (by another replica, which does not wait for this one's storing) removed it. For callers holding
        the chat's lock (``_roll_back_beside_storers`` for the others)."""
        self._remove_document(chat_id, document_id)
        self._remove_collection_if_empty(chat_id)

    def _roll_back_beside_storers(self, chat_id: str, document_id: str) -> None:
        """``roll_back`` for callers that do not hold the chat's lock (a cancelled job, the sweeps). The document
        goes at once; the emptied collection only when no upload of the chat runs in this process, since on SQLite
        nothing else keeps a chat's first upload from storing vectors between the check that the chat is empty and
        the collection's removal. That lock is never waited for: the sweep holds the document's own lock here,
        which an upload holding the chat's lock may be waiting for (a re-upload settling it: a deadlock), and a
        cancel must not wait behind a long upload. A chat whose upload runs keeps its collection, which that upload
        fills or its own roll-back removes."""
        self._remove_document(chat_id, document_id)
        with self._chat_turn_if_free(chat_id) as free:
            if free:
                self._remove_collection_if_empty(chat_id)

    @contextmanager
    def _chat_turn_if_free(self, chat_id: str) -> Iterator[bool]:
        """Whether the chat's in-process lock was free; if so, it is held while the block runs (never waited for)."""
        lock = self._chat_locks[chat_id]
        free = lock.acquire(blocking=False)
        try:
            yield free
        finally:
            if free:
                lock.release()

    def _remove_document(self, chat_id: str, document_id: str) -> None:
        self._vectors.delete_document(chat_id, document_id)
        self._documents.remove(document_id)

    def _remove_collection_if_empty(self, chat_id: str) -> None:
        """Holding the chat's turn with none of its documents begun: a chat made again meanwhile under the same id,
        in which another replica stores a file, keeps that file's vectors (Chroma cannot delete "if empty" in one
        step)."""
        try:
            with self._documents.holding_chat_if_empty(chat_id) as empty:
                if empty:
                    self._vectors.delete_chat_if_empty(chat_id)
        except Exception as error:  # noqa: BLE001 - the document is gone: an empty collection left is harmless
            warn_of(log, error, "the empty vector collection of %s could not be removed", chat_id)

    def discard(self, chat_id: str, document_id: str) -> None:
        """Rolls back a document nobody will store any more (its background job was cancelled or failed). With the
        vector store unreachable, its row is marked 'discarded' instead: no longer taken for a document being
        stored, and rolled back once the vector store is back (``purge_discarded``)."""
        try:
            self._roll_back_beside_storers(chat_id, document_id)
        except VectorStoreUnreachable:
            if self._documents.discard(document_id):
                log.warning("document %s is discarded; rolled back once the vector store is back", document_id)

    def purge_discarded(self) -> list[str]:
        """Rolls back the documents ``discard`` left to the vector store's return; returns their ids. Only their
        own vectors go: a chat's other documents are kept.

        Each only if it is still discarded, asked holding the chat's in-process lock and the document's advisory
        lock, both taken only if free (never waited for, see ``_roll_back_beside_storers``; the next sweep tries
        again): a job's retry settles its document, discarding it before it rolls it back (``_settled``), then
        stores the file again under the same id, which a roll-back of the list read meanwhile would take."""
        purged = []
        for record in self._documents.discarded():
            with self._chat_turn_if_free(record.chat_id) as free:
                if not free:
                    continue  # an upload of the chat runs in this process (maybe that retry)
                with self._documents.left_behind(record, DISCARDED) as still_discarded:
                    if still_discarded:
                        self.roll_back(record.chat_id, record.document_id)
                        purged.append(record.document_id)
        return purged

    def free_orphans(self, chat_id: str) -> list[str]:
        """Frees the vectors in the chat's collection of documents that have no row (orphans); returns their ids.

        A storer whose row another replica's sweep rolled back (a database restart dropped the storer's lock) may
        still write vectors after it, and a second outage then keeps the storer from rolling them back itself:
        retrieval never returns them (only ready documents' parents), but nothing else would ever free them.

        Safe beside storers without waiting for anything: every storer writes its 'indexing' row before its first
        vector (``_store``), holding the chat's in-process lock (this process's storers: on SQLite the only ones)
        and the document's advisory lock (any replica's) from before the row until it is ready or rolled back.
        So vectors of an id found with no row while neither lock is held (``DocumentStore.unregistered``) are
        nobody's being stored; the only storer that could still add to them has lost its row, and fails at
        'ready'. A row in any state (one being stored, a discarded one) keeps its vectors. Rechecking under the
        locks rather than waiting for an id to be seen orphaned on two sweeps: as correct, without remembering
        ids between sweeps, and a job's retry that reuses its document id is never raced. The collection's other
        vectors are not read (``ChromaStore.documents_other_than``); a chat with more documents than one look can
        exclude is left alone."""
        with self._chat_turn_if_free(chat_id) as free:
            if not free:
                return []  # an upload of the chat runs in this process: the next sweep looks
            freed = []
            excluded = self._documents.document_ids(chat_id)
            while len(excluded) < _MOST_DOCUMENTS_EXCLUDED and (
                found := self._vectors.documents_other_than(chat_id, excluded, _ORPHAN_CHUNKS_PER_LOOK)
            ):
                excluded |= found  # each id is looked at once: the loop ends even if one cannot be freed now
                for document_id in found:
                    with self._documents.unregistered(document_id) as orphaned:
                        if orphaned:
                            self._vectors.delete_document(chat_id, document_id)
                            log.info("freed the vectors of document %s in chat %s: it has no row (its storing was "
                                     "interrupted)", document_id, chat_id)
                            freed.append(document_id)
            if freed:
                self._remove_collection_if_empty(chat_id)
            return freed

    def free_orphans_from(self, offset: int, count: int) -> int:
        """``free_orphans`` in the chats of up to ``count`` vector collections from the ``offset``-th on (a sweep's
        share: its cost stays bounded however many chats there are); returns where the next share starts.

        Only in chats this database has versioned: a document's roll-back or its chat's deletion, which leave the
        orphans, version the chat. A collection of a chat the database never knew is not this deployment's (a
        Chroma server shared with another one, on its own database), and all of it would look orphaned."""
        chats, next_offset = self._vectors.chats_page(offset, count)
        emptied = 0  # collections removed, which the next share's offset no longer counts
        for chat_id in sorted(self._documents.versioned_chats(chats)):
            if self.free_orphans(chat_id) and not self._vectors.has_collection(chat_id):
                emptied += 1
        return next_offset - emptied if next_offset else 0

    def forget_gone_chats(self) -> None:
        """Drops this replica's keyword caches of the chats that hold no document any more (deleted or emptied
        through another replica)."""
        self._keywords.forget_chats_except(self._documents.chats())

    def delete(self, chat_id: str, document_id: str) -> None:
        validate_id(chat_id, field="chat_id")
        validate_id(document_id, field="doc_id")
        with self._chat_locks[chat_id]:
            record = self._documents.get(chat_id, document_id)
            # A discarded one is a failed or cancelled job's, rolled back by the sweep once the vector store is back.
            if record is None or record.status == DISCARDED:
                raise NotFound(f"Document {document_id} was not found in this chat.", doc_id=document_id)
            self.roll_back(chat_id, document_id)

    def delete_chat(self, chat_id: str) -> int:
        """Every document of the chat, with the chat's vector collection and keyword index themselves (an empty
        collection would otherwise stay behind); returns how many ready documents were deleted."""
        validate_id(chat_id, field="chat_id")
        with self._chat_locks[chat_id]:
            # The registry goes last: if a store fails first, the documents stay listed and deleting can be retried.
            self._vectors.delete_chat(chat_id)
            self._keywords.delete_chat(chat_id)
            return self._documents.remove_chat(chat_id)

    def settle(self, chat_id: str, document_id: str) -> IngestedDocument | None:
        """After a worker died storing ``document_id``: the document if it was stored whole (it is kept), else
        None once whatever it half-stored is rolled back. A worker that only lost its lease (the database away
        for longer) may still be storing it: that is waited for, never rolled back under it."""
        with self._chat_locks[chat_id]:
            record = self._settled(chat_id, document_id)
        return None if record is None else IngestedDocument(
            document_id, record.filename, record.page_count, record.chunk_count
        )

    def recover(self, *, keep: Container[str] = ()) -> list[str]:
        """Roll back documents a crash left half-indexed, and the discarded ones; returns their ids. Not those in
        ``keep`` (the documents of background jobs: the worker that takes a job over rolls back what it left), nor
        those a live process is storing right now (``DocumentStore.left_behind``: another replica's upload, on
        PostgreSQL)."""
        rolled_back = []
        for record in self._documents.incomplete():
            if record.document_id in keep:
                continue
            with self._documents.left_behind(record) as left:
                # Marked 'discarded' first, and skipped unless it was still 'indexing': a database restart drops
                # a live storer's lock too, and its 'ready' may have committed since (it is kept); a storer yet
                # to mark it ready is refused instead of having its document removed under it.
                if left and self._documents.discard(record.document_id):
                    log.warning("rolling back %s (%s), left incomplete by a process that ended",
                                record.document_id, record.filename)
                    self._roll_back_beside_storers(record.chat_id, record.document_id)
                    rolled_back.append(record.document_id)
        return rolled_back + self.purge_discarded()


class _Phases:
    """One progress bar over reading and storing: reading counts only when it recognises pages (OCR), which is
    slow enough to be worth showing; storing (mostly embedding) fills what is left."""

    def __init__(self, progress: Progress | None) -> None:
        self._progress = progress
        self._reading_share = 0.0

    def reading(self, done: int, total: int) -> None:
        if self._progress is not None and total:
            self._reading_share = _RECOGNITION_SHARE
            self._progress(_RECOGNITION_SHARE * done / total)

    def storing(self, done: float) -> None:
        if self._progress is not None:
            self._progress(self._reading_share + (1.0 - self._reading_share) * done)


def _stop_if(cancelled: threading.Event | None) -> None:
    if cancelled is not None and cancelled.is_set():
        raise Cancelled


def _as_stored(
    prepared: _Prepared, stored_meanwhile: dict[str, DocumentRecord | Conflict]
) -> IngestedDocument | Conflict:
    same_content = stored_meanwhile.get(prepared.record.document_id)
    if same_content is None:
        return _as_ingested(prepared)
    return same_content if isinstance(same_content, Conflict) else _as_duplicate(same_content)


def _as_ingested(prepared: _Prepared) -> IngestedDocument:
    record = prepared.record
    return IngestedDocument(record.document_id, record.filename, record.page_count, len(prepared.chunks))


def _as_duplicate(earlier: DocumentRecord | _Prepared) -> IngestedDocument:
    if isinstance(earlier, _Prepared):
        return IngestedDocument(
            earlier.record.document_id, earlier.record.filename, earlier.record.page_count,
            len(earlier.chunks), duplicate=True,
        )
    return IngestedDocument(earlier.document_id, earlier.filename, earlier.page_count, earlier.chunk_count, True)
