"""The FastAPI application: create_app wires Services into routes and installs the error contract."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from backend.api.answers import Answerer
from backend.api.errors import install_error_handlers
from backend.api.routes import chat, documents, health, history, openai
from backend.api.settings import ApiSettings
from backend.api.uploads import DocumentUploads
from backend.config import Settings
from backend.container import Services, build_services
from backend.ingest.jobs import IngestJobs


def create_app(
    settings: Settings | None = None, *, services: Services | None = None, api_settings: ApiSettings | None = None
) -> FastAPI:
    """``services`` lets tests hand in a container built on temporary paths."""
    api_settings = api_settings or ApiSettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        built = services or build_services(settings or Settings())
        jobs = IngestJobs(built.ingestion, workers=api_settings.ingest_workers)
        app.state.services = built
        app.state.api_settings = api_settings
        app.state.jobs = jobs
        app.state.answerer = Answerer(built.pipeline, built.memory, max_chars=api_settings.message_max_chars)
        app.state.uploads = DocumentUploads(
            built.ingestion, jobs, background_bytes=api_settings.background_ingest_bytes
        )
        try:
            yield
        finally:
            jobs.close()

    app = FastAPI(
        title="Axiom",
        version="0.1.0",
        description="Chat with your own documents: cited, grounded answers, fully offline. Every error is JSON "
        "`{error, message, details}`.",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    for module in (health, chat, history, documents, openai):
        app.include_router(module.router)
    return app
