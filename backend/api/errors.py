"""The one error contract: every failure a client sees is JSON ``{error, message, details}`` with its status.

AxiomError carries its own code and status; what FastAPI and Starlette raise themselves (invalid requests,
unknown routes, wrong methods) is translated here; anything else is logged and answered with a bare 500, so no
stack trace or internal message ever reaches a client. The OpenAPI document is made to say the same (400 for an
invalid request, not FastAPI's 422).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match

from backend.api.schemas import PATTERN_RULES
from backend.errors import AxiomError

log = logging.getLogger(__name__)

_CODES_BY_STATUS = {404: "NOT_FOUND"}


def unexpected_error() -> AxiomError:
    """What a client is told about a failure nobody anticipated (the details go to the log only)."""
    return AxiomError("Something went wrong on our side.")


def error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    return {"error": code, "message": message, "details": details}


def _readable(problem: dict[str, Any]) -> str:
    """pydantic names a broken pattern by quoting the regex; a person needs the rule it spells."""
    if problem["type"] == "string_pattern_mismatch":
        return PATTERN_RULES.get(problem.get("ctx", {}).get("pattern"), problem["msg"])
    return problem["msg"]


def _validation_error_body(error: RequestValidationError) -> dict[str, Any]:
    problems = [
        # "body"/"query"/"path" first, then the field (and any nesting): ["body", "message"] -> "message".
        {"field": ".".join(str(part) for part in problem["loc"][1:]) or str(problem["loc"][0]),
         "message": _readable(problem)}
        for problem in error.errors()
    ]
    first = problems[0] if problems else {"field": "request", "message": "Invalid request"}
    return error_body(
        "VALIDATION_ERROR", f"Invalid {first['field']}: {first['message']}.", field=first["field"], errors=problems
    )


def _allowed_methods(request: Request, routes: Iterable[BaseRoute]) -> set[str]:
    """Every method the request's path answers to. Starlette's own ``Allow`` names only the methods of the first
    route whose path matched, when the path has a route per method (GET and POST /chats are two routes)."""
    methods: set[str] = set()
    for route in routes:
        match, _ = route.matches(request.scope)
        if match is not Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    return methods


def _method_not_allowed(request: Request, error: StarletteHTTPException, routes: Iterable[BaseRoute]) -> JSONResponse:
    """A wrong method, OPTIONS included (there is no CORS: the web UI is served from the same origin)."""
    methods = _allowed_methods(request, routes)
    # A mounted app (the web UI's files) has no route methods to collect: its own Allow header stands.
    headers = {**(error.headers or {}), "Allow": ", ".join(sorted(methods))} if methods else error.headers
    allow = (headers or {}).get("Allow", "")
    return JSONResponse(
        error_body(
            "METHOD_NOT_ALLOWED", f"{request.method} is not allowed on {request.url.path}; allowed: {allow}.",
            allowed=allow.split(", ") if allow else [],
        ),
        status_code=405, headers=headers,
    )


def drop_fastapi_validation_responses(openapi: dict[str, Any]) -> dict[str, Any]:
    """FastAPI documents a 422 with its own body on every route that takes input; the handler below answers
    those requests with the contract's 400, which each route declares. (A 422 a route declares itself, an
    unreadable document, is kept: it is not FastAPI's.)"""
    fastapi_body = "#/components/schemas/HTTPValidationError"
    for operations in openapi.get("paths", {}).values():
        for operation in operations.values():
            declared = operation.get("responses", {}).get("422", {})
            if declared.get("content", {}).get("application/json", {}).get("schema", {}).get("$ref") == fastapi_body:
                del operation["responses"]["422"]
    schemas = openapi.get("components", {}).get("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    return openapi


def install_error_handlers(app: FastAPI, routers: Iterable[APIRouter]) -> None:
    """``routers`` are those included in ``app``: FastAPI lists an included router as one entry of app.routes,
    which has no methods to put in an ``Allow`` header, so their own routes are read."""
    routers = list(routers)

    def routes() -> list[BaseRoute]:
        return [*app.router.routes, *(route for router in routers for route in router.routes)]

    @app.exception_handler(AxiomError)
    async def axiom_error(_: Request, error: AxiomError) -> JSONResponse:
        return JSONResponse(error.to_body(), status_code=error.status, headers=error.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, error: RequestValidationError) -> JSONResponse:
        # The contract has one status for every bad input (query-api-tdd §3.4): 400, not FastAPI's 422.
        return JSONResponse(_validation_error_body(error), status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        if error.status_code == 405:
            return _method_not_allowed(request, error, routes())
        code = _CODES_BY_STATUS.get(error.status_code, "HTTP_ERROR")
        message = (
            f"No route {request.method} {request.url.path}." if error.status_code == 404 else str(error.detail)
        )
        return JSONResponse(error_body(code, message), status_code=error.status_code, headers=error.headers)

    @app.exception_handler(Exception)
    async def unhandled_error(_: Request, error: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return JSONResponse(unexpected_error().to_body(), status_code=500)
