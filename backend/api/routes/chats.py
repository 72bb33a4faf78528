"""The chats the web UI lists: list, create, rename, and delete one with its documents and conversation."""

from __future__ import annotations

from fastapi import APIRouter, status

from backend.api.deps import ChatId, ChatsDep, UserDep
from backend.api.schemas import ChatDeleted, ChatList, ChatOut, ChatRename, NewChat, error_responses

router = APIRouter(tags=["chats"])


@router.get("/chats", response_model=ChatList)
def list_chats(chats: ChatsDep, user: UserDep) -> ChatList:
    """Named chats and every chat that has documents, most recently updated first (with API keys on, the
    user's own chats)."""
    return ChatList(chats=[ChatOut.of(chat) for chat in chats.list(user)])


@router.post(
    "/chats", response_model=ChatOut, status_code=status.HTTP_201_CREATED, responses=error_responses(400, 404, 409)
)
def create_chat(chats: ChatsDep, user: UserDep, body: NewChat | None = None) -> ChatOut:
    """With a new random id, or the one given: how the id of a deleted chat is used again."""
    return ChatOut.of(chats.create(body.title if body else None, user, chat_id=body.id if body else None))


@router.patch("/chats/{chat_id}", response_model=ChatOut, responses=error_responses(400, 404))
def rename_chat(chat_id: ChatId, body: ChatRename, chats: ChatsDep) -> ChatOut:
    """Also names a chat that so far exists only through its documents."""
    return ChatOut.of(chats.rename(chat_id, body.title))


@router.delete("/chats/{chat_id}", response_model=ChatDeleted, responses=error_responses(400, 404, 409))
def delete_chat(chat_id: ChatId, chats: ChatsDep) -> ChatDeleted:
    """Removes the chat's documents (from every index), its conversation and its name, and stops the answers
    being written in it. 409 while a background job is still indexing into it; nothing is removed then."""
    return ChatDeleted.of(chats.delete(chat_id))
