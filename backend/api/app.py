"""The FastAPI application: create_app wires Services into routes, installs the error contract and serves the
web UI."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import Scope

from backend.api.answers import Answerer
from backend.api.auth import Authenticator, declare_api_keys
from backend.api.body_limit import BodyLimit, declare_body_limit
from backend.api.chats import Chats
from backend.api.deps import current_user
from backend.api.errors import (
    declare_database_unavailable,
    drop_fastapi_validation_responses,
    install_error_handlers,
)
from backend.api.head import HeadAsGet
from backend.api.routes import chat, chats, documents, health, history, openai
from backend.api.running_answers import RunningAnswers
from backend.api.schemas import MESSAGE_MAX_CHARS
from backend.api.settings import ApiSettings
from backend.api.upload_budget import UploadBudget
from backend.api.uploads import DocumentUploads
from backend.api.web_files import WebFiles
from backend.config import Settings
from backend.container import Services, build_services
from backend.conversations import Conversations
from backend.ingest.jobs import IngestJobs
from backend.ingest.reader import Patience
from backend.ingest.recovery import RecoverySweep

log = logging.getLogger(__name__)

# The page shows text from models and documents. frontend/assets/js/markdown.js keeps markup out of it; should any
# get through, the browser still runs no inline script or handler and loads nothing from another origin.
_WEB_UI_POLICY = {
    "Content-Security-Policy": "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'",
}


def create_app(
    settings: Settings | None = None, *, services: Services | None = None, api_settings: ApiSettings | None = None
) -> FastAPI:
    """``services`` lets tests hand in a container built on temporary paths."""
    api_settings = api_settings or ApiSettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        built = services or build_services(settings or Settings())
        built.reader.warm_up()  # first: it may fail (a process not started), before any thread is started
        jobs = IngestJobs(
            built.ingestion, built.jobs, workers=api_settings.ingest_workers,
            lease_seconds=api_settings.ingest_lease_seconds, max_attempts=api_settings.ingest_max_attempts,
            retry_seconds=api_settings.ingest_retry_seconds,
            retry_limit_seconds=api_settings.ingest_retry_limit_seconds,
        )
        # An upload another replica was storing when it died is rolled back here (a job, by its next worker), and
        # a document discarded while the vector store was unreachable once it is back.
        sweep = RecoverySweep(built.ingestion, built.jobs, every_seconds=api_settings.ingest_lease_seconds)
        app.state.services = built
        app.state.api_settings = api_settings
        app.state.jobs = jobs
        running = RunningAnswers()
        app.state.chats = Chats(
            built.chats, built.documents, built.ingestion, built.memory, jobs, stop_answers=running.stop_chat
        )
        app.state.authenticator = Authenticator(built.users if built.settings.auth == "api-key" else None)
        app.state.answerer = Answerer(
            built.pipeline, built.memory, Conversations(built.memory, built.chats, built.documents),
            app.state.chats, built.llm.scheduler,
            max_chars=MESSAGE_MAX_CHARS, max_in_flight=api_settings.max_questions_in_flight,
            default_chat_id=api_settings.default_chat_id, running=running,
        )
        app.state.uploads = DocumentUploads(
            built.ingestion, jobs, app.state.chats, UploadBudget(api_settings.upload_budget_bytes),
            background_chars=api_settings.background_ingest_chars,
            patience=Patience(api_settings.inline_read_seconds),
        )
        try:
            yield
        finally:
            jobs.close()
            sweep.close()
            if services is None:  # built here, so closed here (tests share theirs between apps)
                built.close()

    app = FastAPI(
        title="Axiom",
        version="0.1.0",
        description="Chat with your own documents: cited, grounded answers, fully offline. Every error is JSON "
        "`{error, message, details}`.",
        lifespan=lifespan,
        # A path with a stray trailing slash is a 404 that names the route, not an empty redirect.
        redirect_slashes=False,
    )
    routers = [module.router for module in (health, chat, history, documents, chats, openai)]
    install_error_handlers(app, routers)
    for router in routers:
        # With API keys off, current_user asks for nothing.
        app.include_router(router, dependencies=[] if router in _OPEN_ROUTERS else [Depends(current_user)])
    app.add_middleware(
        BodyLimit, max_bytes=api_settings.max_json_body_bytes,
        exempt=_routes_to(documents.router, documents.upload_documents),
    )
    app.add_middleware(HeadAsGet)
    _serve_web_ui(app, api_settings.frontend_dir)
    _document_the_contract(app, api_settings)
    return app


def _routes_to(router: APIRouter, endpoint: Callable[..., Any]) -> Callable[[Scope], bool]:
    """Whether a request goes to ``endpoint`` of ``router`` (included without a prefix of its own: the app lists
    an included router as one entry, so its routes are read from it)."""
    routes = [route for route in router.routes if getattr(route, "endpoint", None) is endpoint]
    return lambda scope: any(route.matches(scope)[0] is Match.FULL for route in routes)


# Routes that need no API key: health stays open either way (load balancers' healthchecks).
_OPEN_ROUTERS = (health.router,)
# The operations that never touch the database, while API keys are off (checking a key reads the database).
_WITHOUT_DATABASE = frozenset({("/v1/models", "get")})


def _document_the_contract(app: FastAPI, api_settings: ApiSettings) -> None:
    """The OpenAPI document with what FastAPI cannot know: the contract's 400 for invalid input, the 503 of the
    database server away, and the upload limits and the body limit, which are settings (read when the document is
    first asked for, once the services are built)."""
    generate = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is None:
            schema = drop_fastapi_validation_responses(generate())
            documents.declare_upload_limits(
                schema, max_files=api_settings.max_files_per_upload,
                max_file_bytes=app.state.services.settings.max_upload_bytes,
            )
            declare_body_limit(schema, max_bytes=api_settings.max_json_body_bytes)
            keys = app.state.authenticator.enabled
            declare_database_unavailable(schema, without=frozenset() if keys else _WITHOUT_DATABASE)
            if keys:
                declare_api_keys(schema, frozenset(route.path for r in _OPEN_ROUTERS for route in r.routes))
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _serve_web_ui(app: FastAPI, frontend_dir: Path) -> None:
    """``/`` and ``/assets/…`` only: a catch-all mount at ``/`` would answer unknown API routes with files
    instead of the JSON 404 of the error contract."""
    index, assets = frontend_dir / "index.html", frontend_dir / "assets"
    if not index.is_file() or not assets.is_dir():
        log.warning("no web UI at %s (index.html and assets/ expected); serving the API only", frontend_dir)
        return

    page = WebFiles(directory=frontend_dir, headers=_WEB_UI_POLICY)

    @app.get("/", include_in_schema=False)
    async def web_ui(request: Request) -> Response:
        # Through the same files as the assets: conditional (a 304 to a browser revalidating), Range errors JSON.
        return await page.get_response(index.name, request.scope)

    app.mount("/assets", WebFiles(directory=assets), name="assets")
