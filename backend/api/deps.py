"""FastAPI dependency providers: routes ask for what they need, tests swap the container.

Everything long-lived is built once in the app's lifespan and kept on ``app.state``. The id path parameters are
declared here with the pattern and length of backend/ids.py: FastAPI enforces them (a 400 before a route body
runs, so none sees an id that could address another chat's data) and the OpenAPI document states them.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request

from backend.api.answers import Answerer
from backend.api.chats import Chats
from backend.api.schemas import Id
from backend.api.settings import ApiSettings
from backend.api.uploads import DocumentUploads
from backend.container import Services
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


ServicesDep = Annotated[Services, Depends(get_services)]
ApiSettingsDep = Annotated[ApiSettings, Depends(get_api_settings)]
AnswererDep = Annotated[Answerer, Depends(get_answerer)]
JobsDep = Annotated[IngestJobs, Depends(get_jobs)]
UploadsDep = Annotated[DocumentUploads, Depends(get_uploads)]
ChatsDep = Annotated[Chats, Depends(get_chats)]
ChatId = Annotated[Id, Path()]
DocId = Annotated[Id, Path(description="A document id, or the id of the background job indexing it")]
SessionId = Annotated[Id, Path()]
