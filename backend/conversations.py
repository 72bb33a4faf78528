"""Which chat a conversation belongs to: a session is created in one chat and only ever answers for that one.

The history of a session feeds its chat's query rewrite and prompts, so a session used from another chat would
carry one chat's conversation into another's answers. A session is bound to the chat it is first used in (the
binding is kept with the messages, backend/stores/memory.py), and asking with it from any other chat is refused
before anything runs or is stored.

The session named after a chat is that chat's own conversation (the web UI asks with session_id = chat_id), so
it is never bound to another chat, even before its chat first asks with it: another chat that tries is refused
while a chat of that id exists (has a name or documents).
"""

from __future__ import annotations

import uuid

from backend.errors import NotFound
from backend.ids import validate_id
from backend.stores.chats import ChatStore
from backend.stores.documents import DocumentStore
from backend.stores.memory import MemoryStore


class SessionOfAnotherChat(NotFound):
    """From any chat but its own a session does not exist, as a document under another chat's id does not."""

    def __init__(self, session_id: str, chat_id: str) -> None:
        super().__init__(
            f"Session {session_id} is not a conversation of chat {chat_id}: a session belongs to the chat it "
            "was started in. Ask without a session_id to start a new conversation in this chat.",
            session_id=session_id, chat_id=chat_id,
        )


class Conversations:
    def __init__(self, memory: MemoryStore, chats: ChatStore, documents: DocumentStore) -> None:
        self._memory = memory
        self._chats = chats
        self._documents = documents

    def session_for(self, chat_id: str, session_id: str | None) -> str:
        """The session to ask in: ``session_id`` bound to ``chat_id`` (if it was not yet), or a new one. Raises
        ValidationFailed (400) for a malformed id, SessionOfAnotherChat (404) for a session of another chat."""
        validate_id(chat_id, field="chat_id")
        if session_id is None:
            session_id = uuid.uuid4().hex
        owner = self._memory.chat_of(session_id)
        if owner is None:
            if session_id != chat_id and self._names_a_chat(session_id):
                raise SessionOfAnotherChat(session_id, chat_id)
            owner = self._memory.bind(session_id, chat_id)
        if owner != chat_id:
            raise SessionOfAnotherChat(session_id, chat_id)
        return session_id

    def _names_a_chat(self, chat_id: str) -> bool:
        return self._chats.get(chat_id) is not None or bool(self._documents.list(chat_id))
