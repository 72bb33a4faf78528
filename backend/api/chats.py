"""The list of chats the web UI shows, and renaming or deleting a chat as a whole.

A chat needs no record to exist: uploading or asking in it is enough (ADR-007). So the list holds the named chats
and also every chat that has documents but no record, titled with its id until someone renames it. The UI keeps a
chat's conversation in the history session of the same id; every session asked in a chat belongs to it
(backend/conversations.py), so deleting a chat clears them all; they stay its, for no other chat to take up, and an
answer still being written in it is not saved (ChatWasDeleted, backend/stores/memory.py), nor a file still being
stored in it (backend/stores/documents.py). A chat exists while it
has any of these — a name, documents, files being indexed, a conversation — and once deleted it has none, so its
routes answer 404. It is not made again by an upload or a question sent to its id (from a browser tab still showing
it, say): those answer 410 CHAT_DELETED, so the new file or message does not become a chat of its own that the user
thought was the old one. A deleted chat is told from an id never used by the note its deletion leaves (backend/stores/chats.py). Only
a question that names no chat, which goes to the default chat, makes a deleted default chat again.

With API keys on (backend/api/auth.py) a chat belongs to the user who made it, or who first uploaded or asked in
it (its record says so). For anyone else it does not exist: every route naming it, its documents, jobs or
sessions answers 404 as for a chat never made, so ids cannot be probed; the list shows a user their own chats
only. Chats made while keys were off have no owner, so nobody reaches them with keys on. A deleted chat stays its
owner's: for anyone else an upload or a question to its id is the 404 of another user's chat.
A request that fails makes no chat: the chat is claimed only once what the request would store has passed every
check (the question's session, the upload's files), and an upload that then stores nothing (the vector store down,
say) undoes its claim, leaving the id free rather than deleted — unless another request of the user's claimed
the chat meanwhile, which then keeps it (so what that request stores is never left in a chat without an owner).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from backend.errors import ChatWasDeleted, Conflict, NotFound, ServerBusy, ValidationFailed
from backend.ingest.jobs import IngestJobs, Job
from backend.ingest.service import IngestionService
from backend.stores.chats import (
    ChatRecord,
    ChatStore,
    DeletedChatRecord,
    answer_refused_in_deleted_chat,
    deleted_chat_name,
)
from backend.stores.documents import ChatDocuments, DocumentRecord, DocumentStore
from backend.stores.memory import MemoryStore
from backend.stores.users import User

DEFAULT_TITLE = "New chat"

MAX_TITLE_CHARS = 100
# When to ask again after an answer stopped by a chat's deletion that then failed: at once, the chat is there.
DELETION_FAILED_RETRY_AFTER_SECONDS = 1


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
        *,
        stop_answers: Callable[[str], None],
    ) -> None:
        """``stop_answers``: stops the answers being written in a chat (``RunningAnswers.stop_chat``), called when
        the chat is deleted."""
        self._store = store
        self._stop_answers = stop_answers
        self._documents = documents
        self._ingestion = ingestion
        self._memory = memory
        self._jobs = jobs

    def list(self, user: User | None = None) -> list[Chat]:
        """Most recently updated first: a chat is updated when it is named or renamed and when a message is added
        to its conversation; a chat known only by its documents counts as updated at its first one. With a
        ``user``, theirs only (each has a record)."""
        records = self._store.list(owner=user.user_id if user else None)
        documents = self._documents.chats()
        named = {record.id for record in records}
        chats = [_named(record, documents[record.id].count if record.id in documents else 0) for record in records]
        if user is None:
            chats += [_unnamed(chat_id, summary) for chat_id, summary in documents.items() if chat_id not in named]
        last_messages = self._memory.last_written_at(chat.id for chat in chats)
        chats = [
            replace(chat, updated_at=last_messages[chat.id])
            if last_messages.get(chat.id, 0.0) > chat.updated_at else chat
            for chat in chats
        ]
        return sorted(chats, key=lambda chat: chat.updated_at, reverse=True)

    def create(self, title: str | None, user: User | None = None, *, chat_id: str | None = None) -> Chat:
        """A new chat, under a new id or ``chat_id``: then also a deleted chat's (the way to use its id again).
        Raises Conflict while a chat of that id exists or the id is a session of another chat (the web UI asks in
        the session of its chat's id), NotFound when it is (or was, deleted) another user's."""
        title = _valid_title(DEFAULT_TITLE if title is None else title)
        owner = user.user_id if user else None
        if chat_id is None:
            return _named(self._store.create(title, owner=owner), 0)
        if user is not None:
            exists = self._record_reachable(chat_id, user) is not None
        else:
            exists = self._exists(chat_id)
        deleted = self._deletion(chat_id, user)
        session_chat = self._memory.chat_of(chat_id)
        if session_chat not in (None, chat_id):
            raise self._session_of_another_chat(chat_id, session_chat, user)
        record = None if exists else self._store.create(title, owner=owner, chat_id=chat_id)
        if record is None:
            raise Conflict(
                f"A chat with the id {chat_id} exists already: delete it first, or choose another id.",
                chat_id=chat_id,
            )
        if deleted is not None:
            self._store.forget_deletion(chat_id)
        return _named(record, 0)

    def reachable(self, chat_id: str, user: User | None) -> str:
        """``chat_id`` when ``user`` may use it: theirs, or one that does not exist (the route then answers 404
        or makes it). Raises NotFound for another user's chat, or one without an owner, as for one that does not
        exist."""
        if user is not None:
            self._record_reachable(chat_id, user)
        return chat_id

    def usable(self, chat_id: str, user: User | None, *, default: bool = False) -> bool:
        """Checks that ``user`` may store something in the chat (an upload, a question): reachable, and not
        deleted — ChatWasDeleted (410) otherwise, or for another user's deleted chat NotFound — and, for a chat not
        made yet, not the id of another chat's session (Conflict, 409). Checks only: the
        chat is made by ``claim`` once what is to be stored in it has passed its own checks. ``default``: the
        chat a question naming none goes to, made again even after it was deleted. Returns whether the chat was
        deleted and is made again (``claim`` then forgets its deletion)."""
        record = self._record_reachable(chat_id, user) if user is not None else None
        made_again = record is None and self._deleted_but_made_again(chat_id, user, default=default)
        if record is None and not default:
            self._refuse_another_chats_session(chat_id, user)
        return made_again

    def _refuse_another_chats_session(self, chat_id: str, user: User | None) -> None:
        """Raises Conflict when a chat not made yet would take the id of another chat's session: the web UI asks
        in the session of its chat's id, so the chat would be listed with the other chat's conversation as its
        own, and asking there would be a 404. (``create`` refuses the same id.)"""
        session_chat = self._memory.chat_of(chat_id)
        if session_chat in (None, chat_id) or self._exists(chat_id):
            return
        raise self._session_of_another_chat(chat_id, session_chat, user)

    def _session_of_another_chat(self, chat_id: str, session_chat: str, user: User | None) -> Conflict | NotFound:
        """The refusal of ``chat_id`` as a new chat's id, being a session of ``session_chat``: NotFound when that
        is another user's chat, as for every other way to learn of it; Conflict otherwise, naming a deleted
        chat as such (its sessions stay its own: none is carried into another chat)."""
        record = self._store.get(session_chat)
        deleted = None if record is not None else self._store.deleted(session_chat)
        owner = record.owner if record is not None else deleted.owner if deleted is not None else None
        if user is not None and owner != user.user_id:
            return _not_found(chat_id)
        where = "a deleted chat" if deleted is not None else "another chat"
        return Conflict(f"{chat_id} is the id of a conversation in {where}: choose another id.", chat_id=chat_id)

    def reachable_session(self, session_id: str, user: User | None) -> str:
        """``session_id`` when ``user`` may read or clear it: its chat (the chat it is bound to, or the chat of its
        name, whose own conversation it is) is reachable. Raises the NotFound of a session without messages
        otherwise (naming the chat would tell which chat the session is of)."""
        if user is not None:
            try:
                self.reachable(self._memory.chat_of(session_id) or session_id, user)
            except NotFound:
                raise session_not_found(session_id) from None
        return session_id

    def claim(
        self, chat_id: str, user: User | None, *, default: bool = False, made_again: bool | None = None
    ) -> bool:
        """Makes a chat that does not exist yet ``user``'s, just before something is stored in it (an upload, a
        question); raises as ``usable`` does (checked again: the chat may have been deleted or claimed since).
        Whether it made the chat's record: the caller then undoes it with ``unclaim`` if it stores nothing.
        ``made_again``: with keys off, what ``usable`` returned just before, for a question, whose answer is
        refused when saved if the chat was deleted since (``MemoryStore.add_exchange``): whether it was deleted is
        then not read again."""
        if user is None:
            if made_again is None:
                made_again = self._deleted_but_made_again(chat_id, None, default=default)
            if made_again:
                self._store.forget_deletion(chat_id)
            return False
        # One read for a chat in use; more only for a chat that has no record yet, or one just made by a claim
        # that may yet be undone (``unclaim``): this request's use keeps it, unless the undo came first.
        record = self._record_reachable(chat_id, user)
        if record is not None and (
            record.updated_at != record.created_at or self._store.keep_claim(chat_id, user.user_id)
        ):
            return False
        if self._deleted_but_made_again(chat_id, user, default=default):
            self._store.forget_deletion(chat_id)
        record, made = self._store.claim(chat_id, user.user_id, title=chat_id)
        if record.owner != user.user_id:
            raise _not_found(chat_id)  # another user claimed the same new id a moment earlier
        return made

    def unclaim(self, chat_id: str, user: User) -> None:
        """Undoes a ``claim`` that made the chat's record, for a request that then stored nothing (a request that
        fails makes no chat). The id stays free, not deleted: the same request sent again makes the chat. Not if
        another request of the user's claimed the chat since (it may be storing in it): the record stays, so the
        chat does not lose its owner."""
        if not self._holds_anything(chat_id):
            self._store.drop_claim(chat_id, user.user_id)

    def _record_reachable(self, chat_id: str, user: User) -> ChatRecord | None:
        """The chat's record when it is ``user``'s, None when the chat does not exist; raises NotFound for
        another user's chat, or one without an owner, as for one that does not exist."""
        record = self._store.get(chat_id)
        mine_or_free = record.owner == user.user_id if record is not None else not self._holds_anything(chat_id)
        if not mine_or_free:
            raise _not_found(chat_id)
        return record

    def _deletion(self, chat_id: str, user: User | None) -> DeletedChatRecord | None:
        """The note of the chat's deletion, if any; NotFound when it was another user's chat."""
        deleted = self._store.deleted(chat_id)
        if user is not None and deleted is not None and deleted.owner != user.user_id:
            raise _not_found(chat_id)
        return deleted

    def _deleted_but_made_again(self, chat_id: str, user: User | None, *, default: bool) -> bool:
        """For a chat without a record: whether it was deleted and is made again — the default chat (on purpose),
        one the command line filled, or one whose deletion failed part-way (still listed) — so that its claim
        forgets the deletion (only the claim: a check alone, before the request has passed its other checks,
        changes nothing). Raises ChatWasDeleted if it was deleted and is still empty (NotFound when it was
        another user's)."""
        deleted = self._deletion(chat_id, user)
        if deleted is None:
            return False
        if default or self._holds_anything(chat_id):
            return True
        raise ChatWasDeleted(
            f"{deleted_chat_name(chat_id, deleted.title)} was deleted, perhaps in another window: nothing more can be added to it. Reload the list of "
            "chats and start a new chat.",
            chat_id=chat_id,
        )

    def deleted_while_answering(self, chat_id: str) -> ChatWasDeleted | ServerBusy:
        """The error of an answer stopped because its chat was deleted (``RunningAnswers.stop_chat``), as the
        one of an answer refused when saved; ServerBusy (503, to ask again) if that deletion failed since
        and the chat is still there."""
        deleted = self._store.deleted(chat_id)
        if deleted is None:
            return ServerBusy(
                "The chat's deletion failed, so this answer was stopped; ask again.",
                retry_after_seconds=DELETION_FAILED_RETRY_AFTER_SECONDS, chat_id=chat_id,
            )
        return answer_refused_in_deleted_chat(chat_id, deleted.title)

    def contents(self, chat_id: str) -> ChatContents:
        """Raises NotFound for a chat that does not exist: one never used, or deleted since."""
        contents = ChatContents(self._documents.list(chat_id), self._jobs.unfinished(chat_id))
        if not (self._holds_anything(chat_id, contents) or self._store.get(chat_id)):
            raise _not_found(chat_id)
        return contents

    def _exists(self, chat_id: str) -> bool:
        return self._store.get(chat_id) is not None or self._holds_anything(chat_id)

    def _holds_anything(self, chat_id: str, contents: ChatContents | None = None) -> bool:
        """Documents, files being indexed (``contents``, when already read) or a conversation: a chat without a
        record that exists all the same."""
        contents = contents or ChatContents(self._documents.list(chat_id), self._jobs.unfinished(chat_id))
        return bool(contents.documents or contents.jobs or self._memory.has_conversation(chat_id))

    def rename(self, chat_id: str, title: str) -> Chat:
        title = _valid_title(title)
        documents = self.contents(chat_id).documents
        # A chat named for the first time began with its first document, not now.
        began = documents[0].created_at if documents else None
        return _named(self._store.rename(chat_id, title, created_at=began), len(documents))

    def delete(self, chat_id: str) -> DeletedChat:
        """Its background jobs (cancelled), documents, vector collection, keyword index, conversation and
        record; the answers being written in it are stopped (``stop_answers``). Refused (409) only if a job
        is still storing its document after the wait: that last step is not cut."""
        self.contents(chat_id)
        still_running = self._jobs.cancel_chat(chat_id)
        if still_running:
            record = self._store.get(chat_id)
            title = record.title if record else chat_id
            raise Conflict(
                f"“{title}” is still storing {_file_names(still_running)}; try deleting it again in a moment.",
                chat_id=chat_id, jobs=[job.job_id for job in still_running],
            )
        # Notes the deletion with the conversation's removal, first: from then on an answer still being written
        # or a file still being stored in the chat is refused, not left behind after the rest is gone.
        messages_deleted = self._memory.clear_chat(chat_id)
        self._stop_answers(chat_id)  # none could be saved now: the model is not kept busy writing them
        try:
            documents_deleted = self._ingestion.delete_chat(chat_id)
            self._jobs.forget_chat(chat_id)
            # The record goes last: if anything above fails, the chat is still listed and its deletion can be
            # retried.
            self._store.remove(chat_id)
        except BaseException:
            # Still listed, so still usable until deleted again: a note left behind would refuse every upload
            # and answer in it as "deleted".
            self._store.forget_deletion(chat_id)
            raise
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


def document_not_found(doc_id: str) -> NotFound:
    return NotFound(f"Document {doc_id} was not found in this chat.", doc_id=doc_id)


def session_not_found(session_id: str) -> NotFound:
    return NotFound(f"Session {session_id} has no messages.", session_id=session_id)


def _not_found(chat_id: str) -> NotFound:
    return NotFound(f"Chat {chat_id} was not found.", chat_id=chat_id)
