"""The registry of each chat's documents, their parent texts and child chunks (``schema.documents``,
``schema.parents``, ``schema.chunks``) and each chat's version (``schema.chat_versions``).

A document row is written with status 'indexing' before any chunk reaches Chroma and becomes 'ready' only when
Chroma holds all of it; its parents and chunks are written in that same transaction, and the chat's version
changes with it (and with every removal). So a row still 'indexing' after a crash marks exactly the documents to
roll back, parents (what retrieval returns) and chunks (what BM25 indexes) exist only for complete documents, and
a replica that sees an unchanged version knows its BM25 cache is current. A row whose roll-back could not reach
Chroma (a background job ended while Chroma was unreachable) becomes 'discarded' until it can be removed.

A chat can be deleted while a document is being stored in it (by another request, or on another replica). Its
deletion is noted before its documents are removed (backend/stores/chats.py), and both writes of a document check
for that note holding the chat's turn: one that comes after it is refused with ChatWasDeleted, so the storer rolls
it back, and one that comes before it is removed with the chat. Nothing of it is left in the gone chat, nor in a
new chat made later under the same id (its row, removed by the deletion, is not there to be made ready). Left open:
a file whose row is not written yet (it is being embedded) while another replica deletes its chat and makes it
again under the same id lands in the new chat (one replica's deletion waits for the chat's ingestion, see
IngestionService); the upload would have to carry which chat it was sent to, which nothing records.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, Row, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from backend.errors import Conflict
from backend.models import Chunk, Parent
from backend.stores.chats import chat_deleted_while, noted_deletion
from backend.stores.dialect import LockSpace, holding, holding_if_free, take_turn, upsert_insert
from backend.stores.schema import chat_versions, documents
from backend.stores.schema import chunks as chunk_table
from backend.stores.schema import parents as parent_table

INDEXING = "indexing"
READY = "ready"
# Given up (its background job was cancelled or failed) while the vector store was unreachable, so its vectors could
# not be removed yet: no longer taken for a document being stored, removed with its vectors once the store is back.
DISCARDED = "discarded"

# What a Parent is made of: its own columns and its document's filename.
_PARENT = (
    parent_table.c.parent_id, parent_table.c.document_id, documents.c.filename, parent_table.c.page,
    parent_table.c.text, parent_table.c.ocr, parent_table.c.label,
)
_PARENTS_WITH_DOCUMENTS = parent_table.join(documents)
_CHUNK = (
    chunk_table.c.chunk_id, chunk_table.c.parent_id, chunk_table.c.document_id, documents.c.filename,
    chunk_table.c.page, chunk_table.c.text, chunk_table.c.ocr, chunk_table.c.label,
)


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    document_id: str
    chat_id: str
    filename: str
    sha256: str
    file_type: str
    size_bytes: int
    page_count: int
    chunk_count: int
    status: str
    created_at: float


@dataclass(frozen=True, slots=True)
class ChatDocuments:
    """What a chat's ready documents add up to."""

    count: int
    first_created_at: float


@dataclass(frozen=True, slots=True)
class Totals:
    documents: int
    chunks: int


class DocumentStore:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def begin(self, record: DocumentRecord) -> DocumentRecord | None:
        """Registers the document as 'indexing'. When the chat already holds a document with the same content (another
        replica stored the same file after this one's duplicate check), nothing is written and that document is
        returned instead. Raises ChatWasDeleted, writing nothing, if the chat was deleted."""
        try:
            with self._engine.begin() as db:
                take_turn(db, LockSpace.CHAT, record.chat_id)
                db.execute(insert(documents).values(
                    document_id=record.document_id, chat_id=record.chat_id, filename=record.filename,
                    sha256=record.sha256, file_type=record.file_type, size_bytes=record.size_bytes,
                    page_count=record.page_count, chunk_count=record.chunk_count, status=INDEXING,
                    created_at=record.created_at,
                ))
                _refuse_storing_in_deleted_chat(db, record, removed=False)
        except IntegrityError:
            same_content = self.find_by_sha256(record.chat_id, record.sha256)
            if same_content is None:
                raise
            return same_content
        return None

    def storing(self, document_ids: Iterable[str]) -> AbstractContextManager[None]:
        """Says, while the block runs, that this process is storing the documents (see ``left_behind``)."""
        return holding(self._engine, LockSpace.DOCUMENT, document_ids)

    @contextmanager
    def left_behind(self, record: DocumentRecord, status: str = INDEXING) -> Iterator[bool]:
        """Whether the document is still 'indexing' (or ``status``) with no live process storing it, so a crash
        left it (or it was given up); while the block runs, no process begins storing it. On SQLite (one process
        per database) every document still 'indexing' counts: ask only when this process stores none."""
        with holding_if_free(self._engine, LockSpace.DOCUMENT, record.document_id) as free:
            current = self.get(record.chat_id, record.document_id) if free else None
            yield current is not None and current.status == status

    @contextmanager
    def unregistered(self, document_id: str) -> Iterator[bool]:
        """Whether the document has no row (in any chat, in any state) and no live process is storing it; if so,
        no process begins storing it while the block runs. On SQLite nothing is held: ask holding the chat's
        in-process lock, which every storer of the one process using it holds (``IngestionService``)."""
        with holding_if_free(self._engine, LockSpace.DOCUMENT, document_id) as free:
            if not free:
                yield False
                return
            with self._engine.connect() as db:
                yield _chat_of(db, document_id) is None

    @contextmanager
    def holding_chat_if_empty(self, chat_id: str) -> Iterator[bool]:
        """Whether the chat has no documents, not even one being stored; if so, no document is begun in it while the
        block runs (``begin`` waits for the chat's turn), so vectors the block finds in the chat's collection are
        no document's on its way. On SQLite nothing is held: one process uses it, so its callers hold the chat's
        in-process lock, which that process's storers take too (``IngestionService._chat_locks``), or, when they
        cannot take it at once, leave the collection to the storer holding it."""
        with self._engine.begin() as db:
            take_turn(db, LockSpace.CHAT, chat_id)
            anyone = db.execute(select(documents.c.document_id).where(documents.c.chat_id == chat_id).limit(1))
            yield anyone.first() is None

    def mark_ready(
        self, record: DocumentRecord, parents: Sequence[Parent], chunks: Sequence[Chunk], *,
        chat_deletions: int | None = None,
    ) -> None:
        """The document ``begin`` registered becomes 'ready', with its parents and chunks. Raises ChatWasDeleted,
        writing nothing, if its chat was deleted since: noted as deleted, or its row removed by the chat's deletion
        (the chat made again since); Conflict if the row was discarded or removed by another replica's recovery
        (a database restart dropped this storer's lock). ``chat_deletions``: the chat's ``deletions`` read before
        ``begin``, which tells the two removals apart (without it a removed row is taken for the chat's)."""
        document_id = record.document_id
        with self._engine.begin() as db:
            take_turn(db, LockSpace.CHAT, record.chat_id)
            marked = db.execute(
                update(documents).where(documents.c.document_id == document_id, documents.c.status == INDEXING)
                .values(status=READY, chunk_count=len(chunks))
            ).rowcount
            removed = not marked and _chat_of(db, document_id) is None
            # The same chat, never deleted since: the row went with a roll-back (a sweep's), not with the chat.
            rolled_back = removed and chat_deletions == _deletions(db, record.chat_id)
            _refuse_storing_in_deleted_chat(db, record, removed=removed and not rolled_back)
            if not marked:
                # Another replica's recovery sweep took it for left behind: a database restart dropped the lock
                # ``storing`` held, and the sweep discards the document, then removes it with its vectors.
                raise Conflict(
                    f"Storing “{record.filename}” was interrupted by a database restart and rolled back; upload it "
                    "again.", filename=record.filename,
                )
            if chunks:
                db.execute(insert(chunk_table), [
                    {"chunk_id": c.chunk_id, "document_id": document_id, "seq": seq, "parent_id": c.parent_id,
                     "page": c.page, "text": c.text, "ocr": c.ocr, "label": c.label}
                    for seq, c in enumerate(chunks)
                ])
            if parents:
                db.execute(insert(parent_table), [
                    {"parent_id": p.parent_id, "document_id": document_id, "seq": seq, "page": p.page,
                     "text": p.text, "ocr": p.ocr, "label": p.label}
                    for seq, p in enumerate(parents)
                ])
            _bump_version(db, record.chat_id)

    def discard(self, document_id: str) -> bool:
        """Marks the document, still 'indexing', as given up (``DISCARDED``); False if it is not 'indexing'."""
        with self._engine.begin() as db:
            return db.execute(
                update(documents).where(documents.c.document_id == document_id, documents.c.status == INDEXING)
                .values(status=DISCARDED)
            ).rowcount > 0

    def remove(self, document_id: str) -> None:
        """Holding its chat's turn, as saving an answer that cites it does (``MemoryStore.add_exchange``)."""
        with self._engine.begin() as db:
            chat_id = _chat_of(db, document_id)
            if chat_id is not None:
                take_turn(db, LockSpace.CHAT, chat_id)
                db.execute(delete(documents).where(documents.c.document_id == document_id))
                _bump_version(db, chat_id)

    def remove_chat(self, chat_id: str) -> int:
        """Removes every document of the chat, whatever its status, counting the chat's ``deletions``; returns
        how many were ready."""
        with self._engine.begin() as db:
            statuses = db.execute(
                delete(documents).where(documents.c.chat_id == chat_id).returning(documents.c.status)
            ).scalars().all()
            _bump_version(db, chat_id, deleted=True)
            return sum(status == READY for status in statuses)

    def chat_deletions(self, chat_id: str) -> int:
        """How many times the chat was deleted (``remove_chat``); a storer hands it to ``mark_ready``."""
        with self._engine.connect() as db:
            return _deletions(db, chat_id)

    def import_chunks(self, chunks: Sequence[Chunk]) -> int:
        """Stores the chunks of ready documents that have none yet (those of a release that kept chunk texts only
        in its BM25 files); returns how many were stored."""
        by_document: dict[str, list[Chunk]] = {}
        for chunk in chunks:
            by_document.setdefault(chunk.document_id, []).append(chunk)
        stored = 0
        with self._engine.begin() as db:
            for document_id, its_chunks in by_document.items():
                ready = db.execute(
                    select(documents.c.chat_id).where(documents.c.document_id == document_id,
                                                      documents.c.status == READY)
                ).scalar_one_or_none()
                has_chunks = db.execute(
                    select(chunk_table.c.chunk_id).where(chunk_table.c.document_id == document_id).limit(1)
                ).first()
                if ready is None or has_chunks is not None:
                    continue
                db.execute(insert(chunk_table), [
                    {"chunk_id": c.chunk_id, "document_id": document_id, "seq": seq, "parent_id": c.parent_id,
                     "page": c.page, "text": c.text, "ocr": c.ocr, "label": c.label}
                    for seq, c in enumerate(its_chunks)
                ])
                _bump_version(db, ready)
                stored += len(its_chunks)
        return stored

    def version(self, chat_id: str) -> str | None:
        """A token that changes whenever the chat's ready documents do; None before its first document."""
        with self._engine.connect() as db:
            return db.execute(
                select(chat_versions.c.version).where(chat_versions.c.chat_id == chat_id)
            ).scalar_one_or_none()

    def chunks(self, chat_id: str) -> list[Chunk]:
        """Every chunk of the chat's ready documents, in upload then reading order."""
        with self._engine.connect() as db:
            rows = db.execute(
                select(*_CHUNK).select_from(chunk_table.join(documents))
                .where(documents.c.chat_id == chat_id, documents.c.status == READY)
                .order_by(documents.c.created_at, chunk_table.c.document_id, chunk_table.c.seq)
            ).all()
        return [Chunk(*row) for row in rows]

    def versioned_chats(self, chat_ids: Iterable[str]) -> set[str]:
        """Which of ``chat_ids`` this database has versioned (``chat_versions``): every chat a document was ever
        ready in or removed from, deleted ones included."""
        with self._engine.connect() as db:
            return set(db.execute(
                select(chat_versions.c.chat_id).where(chat_versions.c.chat_id.in_(list(chat_ids)))
            ).scalars())

    def document_ids(self, chat_id: str) -> set[str]:
        """The ids of the chat's documents, in any state."""
        with self._engine.connect() as db:
            return set(db.execute(select(documents.c.document_id).where(documents.c.chat_id == chat_id)).scalars())

    def get(self, chat_id: str, document_id: str) -> DocumentRecord | None:
        return self._one(documents.c.chat_id == chat_id, documents.c.document_id == document_id)

    def find_by_sha256(self, chat_id: str, sha256: str) -> DocumentRecord | None:
        return self._one(documents.c.chat_id == chat_id, documents.c.sha256 == sha256)

    def list(self, chat_id: str) -> list[DocumentRecord]:
        with self._engine.connect() as db:
            rows = db.execute(
                select(documents).where(documents.c.chat_id == chat_id, documents.c.status == READY)
                .order_by(documents.c.created_at)
            ).all()
        return [_record(row) for row in rows]

    def chats(self) -> dict[str, ChatDocuments]:
        """Every chat that has a ready document, with how many it has and when the first was added."""
        with self._engine.connect() as db:
            rows = db.execute(
                select(documents.c.chat_id, func.count(), func.min(documents.c.created_at))
                .where(documents.c.status == READY).group_by(documents.c.chat_id)
            ).all()
        return {chat_id: ChatDocuments(count, first_created_at) for chat_id, count, first_created_at in rows}

    def totals(self) -> Totals:
        with self._engine.connect() as db:
            count, chunks = db.execute(
                select(func.count(), func.coalesce(func.sum(documents.c.chunk_count), 0))
                .where(documents.c.status == READY)
            ).one()
        return Totals(documents=count, chunks=int(chunks))

    def incomplete(self) -> list[DocumentRecord]:
        return self._with_status(INDEXING)

    def discarded(self) -> list[DocumentRecord]:
        return self._with_status(DISCARDED)

    def _with_status(self, status: str) -> list[DocumentRecord]:
        with self._engine.connect() as db:
            rows = db.execute(select(documents).where(documents.c.status == status)).all()
        return [_record(row) for row in rows]

    def parents(self, parent_ids: Iterable[str]) -> dict[str, Parent]:
        """Parents by id; only those of ready documents exist, so nothing half-indexed is returned."""
        ids = list(dict.fromkeys(parent_ids))
        found: dict[str, Parent] = {}
        with self._engine.connect() as db:
            for start in range(0, len(ids), 500):  # a bounded statement, whatever the number asked for
                rows = db.execute(
                    select(*_PARENT).select_from(_PARENTS_WITH_DOCUMENTS)
                    .where(parent_table.c.parent_id.in_(ids[start : start + 500]))
                ).all()
                found.update({row.parent_id: Parent(*row) for row in rows})
        return found

    def chat_parents(self, chat_id: str) -> list[Parent]:
        """Every parent of a chat's ready documents, in upload then page order (for summaries)."""
        with self._engine.connect() as db:
            rows = db.execute(
                select(*_PARENT).select_from(_PARENTS_WITH_DOCUMENTS)
                .where(documents.c.chat_id == chat_id, documents.c.status == READY)
                .order_by(documents.c.created_at, parent_table.c.seq)
            ).all()
        return [Parent(*row) for row in rows]

    def _one(self, *where) -> DocumentRecord | None:
        with self._engine.connect() as db:
            row = db.execute(select(documents).where(*where)).one_or_none()
        return _record(row) if row else None


def _refuse_storing_in_deleted_chat(db: Connection, record: DocumentRecord, *, removed: bool) -> None:
    """Raises ChatWasDeleted if the document's chat was deleted (``removed``: its row is gone, as the chat's
    deletion removes it). Called after the transaction's first write, holding the chat's turn (``noted_deletion``)."""
    deleted = noted_deletion(db, record.chat_id)
    if deleted is not None or removed:
        raise chat_deleted_while(
            record.chat_id, deleted.title if deleted else None, doing=f"“{record.filename}” was being stored",
            lost="nothing of it was kept",
        )


def ready_documents(db: Connection, document_ids: set[str]) -> set[str]:
    """Which of ``document_ids`` are ready, as ``db``'s transaction sees them. To refuse an answer citing a
    document removed meanwhile, read them holding the documents' chat's turn (``LockSpace.CHAT``), which
    ``DocumentStore.remove`` holds, after the transaction's first write (SQLite's write lock)."""
    if not document_ids:
        return set()
    return set(db.execute(
        select(documents.c.document_id)
        .where(documents.c.document_id.in_(document_ids), documents.c.status == READY)
    ).scalars())


def _chat_of(db: Connection, document_id: str) -> str | None:
    return db.execute(select(documents.c.chat_id).where(documents.c.document_id == document_id)).scalar_one_or_none()


def _deletions(db: Connection, chat_id: str) -> int:
    return db.execute(
        select(chat_versions.c.deletions).where(chat_versions.c.chat_id == chat_id)
    ).scalar_one_or_none() or 0


def _bump_version(db: Connection, chat_id: str | None, *, deleted: bool = False) -> None:
    """A new version token; ``deleted``: the chat's documents were all removed by its deletion (one more of its
    ``deletions``)."""
    if chat_id is None:
        return
    token = uuid.uuid4().hex
    statement = upsert_insert(db, chat_versions).values(chat_id=chat_id, version=token, deletions=int(deleted))
    changes = {"version": token}
    if deleted:
        changes["deletions"] = chat_versions.c.deletions + 1
    db.execute(statement.on_conflict_do_update(index_elements=["chat_id"], set_=changes))


def _record(row: Row) -> DocumentRecord:
    return DocumentRecord(**row._mapping)


def new_record(
    *, document_id: str, chat_id: str, filename: str, sha256: str, file_type: str, size_bytes: int, page_count: int
) -> DocumentRecord:
    return DocumentRecord(
        document_id=document_id, chat_id=chat_id, filename=filename, sha256=sha256, file_type=file_type,
        size_bytes=size_bytes, page_count=page_count, chunk_count=0, status=INDEXING, created_at=time.time(),
    )
