"""The list of chats the web UI shows, and renaming or deleting a chat as a whole.

A chat needs no record to exist: uploading or asking in it is enough (ADR-007). So the list holds the named chats
and also every chat that has documents but no record, titled with its id until someone renames it. The UI keeps a
chat's conversation in the history session of the same id; every session asked in a chat belongs to it
(backend/conversations.py), so deleting a chat clears them all. A chat exists while it has any of these — a name,
documents, files being indexed, a conversation — and once deleted it has none, so its routes answer 404 until
something is uploaded or asked in it again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from backend.errors import Conflict, NotFound, ValidationFailed
from backend.ingest.jobs import IngestJobs, Job
from backend.ingest.service import IngestionService
from backend.stores.chats import ChatRecord, ChatStore
from backend.stores.documents import ChatDocuments, DocumentRecord, DocumentStore
from backend.stores.memory import MemoryStore

DEFAULT_TITLE = "New chat"

MAX_TITLE_CHARS = 100


@dataclass(frozen=True, slots=True)
class Chat:
    id: str
    title: str
    document_count: int
    created_at: float
    updated_at: float


@dataclass(frozen=True, slots=True)
class ChatContents:
    documents: list[DocumentRecord]  # ready, oldest first
    jobs: list[Job]  # background jobs still queued or indexing


@dataclass(frozen=True, slots=True)
class DeletedChat:
    id: str
    documents_deleted: int
    messages_deleted: int


class Chats:
    def __init__(
        self,
        store: ChatStore,
        documents: DocumentStore,
        ingestion: IngestionService,
        memory: MemoryStore,
        jobs: IngestJobs,
    ) -> None:
        self._store = store
        self._documents = documents
        self._ingestion = ingestion
        self._memory = memory
        self._jobs = jobs

    def list(self) -> list[Chat]:
        """Most recently updated first: a chat is updated when it is named or renamed and when a message is added
        to its conversation; a chat known only by its documents counts as updated at its first one."""
        records = self._store.list()
        documents = self._documents.chats()
        named = {record.id for record in records}
        chats = [_named(record, documents[record.id].count if record.id in documents else 0) for record in records]
        chats += [_unnamed(chat_id, summary) for chat_id, summary in documents.items() if chat_id not in named]
        last_messages = self._memory.last_written_at(chat.id for chat in chats)
        chats = [
            replace(chat, updated_at=last_messages[chat.id])
            if last_messages.get(chat.id, 0.0) > chat.updated_at else chat
            for chat in chats
        ]
        return sorted(chats, key=lambda chat: chat.updated_at, reverse=True)

    def create(self, title: str | None) -> Chat:
        return _named(self._store.create(_valid_title(DEFAULT_TITLE if title is None else title)), 0)

    def contents(self, chat_id: str) -> ChatContents:
        """Raises NotFound for a chat that does not exist: one never used, or deleted since."""
        contents = ChatContents(self._documents.list(chat_id), self._jobs.unfinished(chat_id))
        exists = (
            contents.documents or contents.jobs or self._store.get(chat_id) or self._memory.has_conversation(chat_id)
        )
        if not exists:
            raise _not_found(chat_id)
        return contents

    def rename(self, chat_id: str, title: str) -> Chat:
        title = _valid_title(title)
        documents = self.contents(chat_id).documents
        # A chat named for the first time began with its first document, not now.
        began = documents[0].created_at if documents else None
        return _named(self._store.rename(chat_id, title, created_at=began), len(documents))

    def delete(self, chat_id: str) -> DeletedChat:
        """Its background jobs (cancelled), documents, vector collection, keyword index, conversation and record.
        Refused (409) only if a job is still storing its document after the wait: that last step is not cut."""
        self.contents(chat_id)
        still_running = self._jobs.cancel_chat(chat_id)
        if still_running:
            record = self._store.get(chat_id)
            title = record.title if record else chat_id
            raise Conflict(
                f"“{title}” is still storing {_file_names(still_running)}; try deleting it again in a moment.",
                chat_id=chat_id, jobs=[job.job_id for job in still_running],
            )
        documents_deleted = self._ingestion.delete_chat(chat_id)
        self._jobs.forget_chat(chat_id)
        messages_deleted = self._memory.clear_chat(chat_id)
        # The record goes last: if anything above fails, the chat is still listed and its deletion can be retried.
        self._store.remove(chat_id)
        return DeletedChat(chat_id, documents_deleted, messages_deleted)


def _named(record: ChatRecord, document_count: int) -> Chat:
    return Chat(record.id, record.title, document_count, record.created_at, record.updated_at)


def _unnamed(chat_id: str, documents: ChatDocuments) -> Chat:
    return Chat(chat_id, chat_id, documents.count, documents.first_created_at, documents.first_created_at)


def _valid_title(title: str) -> str:
    stripped = title.strip()
    if not 1 <= len(stripped) <= MAX_TITLE_CHARS:
        raise ValidationFailed(
            f"title must be non-blank and at most {MAX_TITLE_CHARS} characters.",
            field="title", max_chars=MAX_TITLE_CHARS,
        )
    return stripped


def _file_names(jobs: list[Job]) -> str:
    others = len(jobs) - 1
    if not others:
        return jobs[0].filename
    return f"{jobs[0].filename} and {others} other file{'s' if others > 1 else ''}"


def _not_found(chat_id: str) -> NotFound:
    return NotFound(f"Chat {chat_id} was not found.", chat_id=chat_id)
