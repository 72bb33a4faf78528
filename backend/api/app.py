"""The FastAPI application: create_app wires Services into routes and maps AxiomError to the error contract."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from backend.api.routes import health
from backend.config import Settings
from backend.container import Services, build_services
from backend.errors import AxiomError

log = logging.getLogger(__name__)


def create_app(settings: Settings | None = None, *, services: Services | None = None) -> FastAPI:
    """``services`` lets tests hand in a container built on temporary paths."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.services = services or build_services(settings or Settings())
        yield

    app = FastAPI(title="Axiom", version="0.1.0", lifespan=lifespan)

    @app.exception_handler(AxiomError)
    async def axiom_error(_: Request, error: AxiomError) -> JSONResponse:
        return JSONResponse(error.to_body(), status_code=error.status)

    @app.exception_handler(Exception)
    async def unexpected_error(_: Request, error: Exception) -> JSONResponse:
        log.exception("unhandled error")
        body = {"error": "INTERNAL_ERROR", "message": "Something went wrong on our side.", "details": {}}
        return JSONResponse(body, status_code=500)

    app.include_router(health.router)
    return app
