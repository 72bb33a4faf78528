"""FastAPI dependency providers: routes ask for what they need, tests swap the container.

Everything long-lived is built once in the app's lifespan and kept on ``app.state``; the id parameters are
validated here, so a route body never sees an id that could address another chat's data.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from backend.api.answers import Answerer
from backend.api.chats import Chats
from backend.api.settings import ApiSettings
from backend.api.uploads import DocumentUploads
from backend.container import Services
from backend.ids import validate_id
from backend.ingest.jobs import IngestJobs


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


def _chat_id(chat_id: str) -> str:
    return validate_id(chat_id, field="chat_id")


def _doc_id(doc_id: str) -> str:
    return validate_id(doc_id, field="doc_id")


def _session_id(session_id: str) -> str:
    return validate_id(session_id, field="session_id")


ServicesDep = Annotated[Services, Depends(get_services)]
ApiSettingsDep = Annotated[ApiSettings, Depends(get_api_settings)]
AnswererDep = Annotated[Answerer, Depends(get_answerer)]
JobsDep = Annotated[IngestJobs, Depends(get_jobs)]
UploadsDep = Annotated[DocumentUploads, Depends(get_uploads)]
ChatsDep = Annotated[Chats, Depends(get_chats)]
ChatId = Annotated[str, Depends(_chat_id)]
DocId = Annotated[str, Depends(_doc_id)]
SessionId = Annotated[str, Depends(_session_id)]
