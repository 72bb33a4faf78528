"""FastAPI dependency providers: routes ask for what they need, tests swap the container.

Everything long-lived is built once in the app's lifespan and kept on ``app.state``. The id path parameters are
declared here with the pattern and length of backend/ids.py: FastAPI enforces them (a 400 before a route body
runs, so none sees an id that could address another chat's data) and the OpenAPI document states them.

With API keys on, the chat and session ids of a path are also only the user's own (backend/api/chats.py): a
route that takes ``ChatId``, ``UsableChatId`` or ``SessionId`` never sees another user's chat, which is a 404
before it runs (and ``UsableChatId`` never a deleted chat: 410).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request

from backend.api.answers import Answerer
from backend.api.auth import Authenticator
from backend.api.chats import Chats, document_not_found
from backend.api.schemas import Id
from backend.api.settings import ApiSettings
from backend.api.uploads import DocumentUploads
from backend.container import Services
from backend.errors import NotFound
from backend.ingest.jobs import IngestJobs
from backend.stores.users import User


def get_services(request: Request) -> Services:
    return request.app.state.services


def get_api_settings(request: Request) -> ApiSettings:
    return request.app.state.api_settings


def get_answerer(request: Request) -> Answerer:
    return request.app.state.answerer


def get_jobs(request: Request) -> IngestJobs:
    return request.app.state.jobs


def get_uploads(request: Request) -> DocumentUploads:
    return request.app.state.uploads


def get_chats(request: Request) -> Chats:
    return request.app.state.chats


def current_user(request: Request) -> User | None:
    """Every route but /health depends on this (backend/api/app.py): a 401 before anything else runs."""
    authenticator: Authenticator = request.app.state.authenticator
    return authenticator.user(request.headers.get("authorization"))


ServicesDep = Annotated[Services, Depends(get_services)]
ApiSettingsDep = Annotated[ApiSettings, Depends(get_api_settings)]
AnswererDep = Annotated[Answerer, Depends(get_answerer)]
JobsDep = Annotated[IngestJobs, Depends(get_jobs)]
UploadsDep = Annotated[DocumentUploads, Depends(get_uploads)]
ChatsDep = Annotated[Chats, Depends(get_chats)]
UserDep = Annotated[User | None, Depends(current_user)]


def reachable_chat(chat_id: Annotated[Id, Path()], chats: ChatsDep, user: UserDep) -> str:
    return chats.reachable(chat_id, user)


def usable_chat(chat_id: Annotated[Id, Path()], chats: ChatsDep, user: UserDep) -> str:
    """For a route that may make the chat (an upload): refused before the body is read if the chat is another
    user's (404) or was deleted (410); the route claims it only once there is something to store in it."""
    chats.usable(chat_id, user)
    return chat_id


def reachable_document_chat(
    chat_id: Annotated[Id, Path()], request: Request, chats: ChatsDep, user: UserDep
) -> str:
    """As for a chat that does not exist, the document (or job) is what is not found in another user's chat."""
    try:
        return chats.reachable(chat_id, user)
    except NotFound:
        raise document_not_found(request.path_params["doc_id"]) from None


def reachable_session(session_id: Annotated[Id, Path()], chats: ChatsDep, user: UserDep) -> str:
    return chats.reachable_session(session_id, user)


ChatId = Annotated[str, Depends(reachable_chat)]
UsableChatId = Annotated[str, Depends(usable_chat)]
DocumentChatId = Annotated[str, Depends(reachable_document_chat)]
DocId = Annotated[Id, Path(description="A document id, or the id of the background job indexing it")]
SessionId = Annotated[str, Depends(reachable_session)]
