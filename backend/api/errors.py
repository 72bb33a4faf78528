"""The one error contract: every failure a client sees is JSON ``{error, message, details}`` with its status.

AxiomError carries its own code and status; what FastAPI and Starlette raise themselves (invalid requests,
unknown routes, wrong methods) is translated here; anything else is logged and answered with a bare 500, so no
stack trace or internal message ever reaches a client; only the database server going away is told as such (503
DATABASE_UNAVAILABLE), since the next request reconnects. The OpenAPI document is made to say the same (400 for an
invalid request, not FastAPI's 422; that 503 on every operation that touches the database).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match, Route

from backend.api.answers import NO_SURROGATE_RULE
from backend.api.schemas import PATTERN_RULES, RETRY_AFTER
from backend.errors import AxiomError
from backend.stores.database import outage

log = logging.getLogger(__name__)


def unexpected_error() -> AxiomError:
    """What a client is told about a failure nobody anticipated (the details go to the log only)."""
    return AxiomError("Something went wrong on our side.")


def client_error(error: Exception) -> AxiomError:
    """What a client is told about ``error``: an AxiomError as it is; the database server gone away (a restart, a
    network cut; ``outage`` decides) as 503 DATABASE_UNAVAILABLE, logged as a warning; anything else, a
    deadlock or a statement timeout too, logged whole and told as 500."""
    if isinstance(error, AxiomError):
        return error
    if (database_down := outage(error)) is not None:
        log.warning("the database is unavailable: %s", error.orig)
        return database_down
    log.error("unexpected error", exc_info=error)
    return unexpected_error()


def error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    return {"error": code, "message": message, "details": details}


_JSON_OBJECT = "should be a JSON object, sent with Content-Type: application/json"
# What pydantic and FastAPI say of a body that is not a JSON object at all, in words a person can act on.
_BODY_PROBLEMS = {"missing": f"is missing: it {_JSON_OBJECT}", "model_attributes_type": _JSON_OBJECT}


def _readable(problem: dict[str, Any]) -> str:
    """pydantic names a broken pattern by quoting the regex, FastAPI a JSON syntax error by its offset alone; a
    person needs the rule that was broken."""
    if problem["type"] == "string_pattern_mismatch":
        return PATTERN_RULES.get(problem.get("ctx", {}).get("pattern"), problem["msg"])
    if problem["type"] == "string_too_short" and problem["ctx"]["min_length"] == 1:
        return "should not be empty"
    if problem["type"] == "extra_forbidden":
        return "is not a field of this request (the OpenAPI document at /openapi.json lists them)"
    if problem["type"] == "string_unicode":  # a lone surrogate, which the pattern engine cannot read
        return NO_SURROGATE_RULE
    if problem["type"] == "json_invalid":  # its "loc" is ("body", the character offset where decoding failed)
        return f"is not valid JSON: {problem['ctx']['error']} at character {problem['loc'][1]}"
    if tuple(problem["loc"]) == ("body",):
        return _BODY_PROBLEMS.get(problem["type"], problem["msg"])
    return problem["msg"]


def _field(problem: dict[str, Any]) -> str:
    """"body"/"query"/"path" first, then the field (and any nesting): ["body", "message"] -> "message"; the
    offset of a JSON syntax error is not a field."""
    if problem["type"] == "json_invalid":
        return "body"
    return ".".join(str(part) for part in problem["loc"][1:]) or str(problem["loc"][0])


def _validation_error_body(error: RequestValidationError) -> dict[str, Any]:
    problems = [{"field": _field(problem), "message": _readable(problem)} for problem in error.errors()]
    first = problems[0] if problems else {"field": "request", "message": "is not valid"}
    return _invalid_body(first["field"], first["message"], problems)


def _invalid_body(field: str, problem: str, problems: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """The 400 VALIDATION_ERROR body: "Invalid <field>: <problem>." (a whole body: "The request body <problem>.")."""
    message = f"The request body {problem}." if field == "body" else f"Invalid {field}: {problem}."
    return error_body(
        "VALIDATION_ERROR", message, field=field, errors=problems or [{"field": field, "message": problem}]
    )


def _unreadable_body(error: StarletteHTTPException) -> dict[str, Any]:
    """FastAPI answers a body it cannot decode at all (bytes that are not UTF-8 text) with a bare 400."""
    if isinstance(error.__cause__, UnicodeDecodeError):
        return _invalid_body("body", "is not valid JSON: it is not UTF-8 text")
    return _invalid_body("body", f"could not be read: {error.detail}")


def _not_found(request: Request, routes: Iterable[BaseRoute]) -> JSONResponse:
    """An unknown route; when the path names a route but for its trailing slash, the message says which."""
    path = request.url.path
    other = path.rstrip("/") if path.endswith("/") else f"{path}/"
    scope = {**request.scope, "path": other}
    # Routes only: a mount (the web UI's files) matches any path below it.
    hint = f" (the route is {other})" if other and any(
        isinstance(route, Route) and route.matches(scope)[0] is not Match.NONE for route in routes
    ) else ""
    return JSONResponse(error_body("NOT_FOUND", f"No route {request.method} {path}{hint}."), status_code=404)


def _allowed_methods(request: Request, routes: Iterable[BaseRoute]) -> set[str]:
    """Every method the request's path answers to. Starlette's own ``Allow`` names only the methods of the first
    route whose path matched, when the path has a route per method (GET and POST /chats are two routes)."""
    methods: set[str] = set()
    for route in routes:
        match, _ = route.matches(request.scope)
        if match is not Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    # A path with a GET answers HEAD too (backend/api/head.py).
    return methods | {"HEAD"} if "GET" in methods else methods


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


def declare_database_unavailable(openapi: dict[str, Any], *, without: frozenset[tuple[str, str]]) -> None:
    """The 503 DATABASE_UNAVAILABLE, with its Retry-After, on every operation but those of ``without`` ((path,
    method) pairs that never touch the database): any store call fails so while the database server is away. An
    operation with a 503 of its own (SERVER_BUSY, …), of the same body, has its description say this one too."""
    unavailable = {
        "description": "DATABASE_UNAVAILABLE: the database server is not reachable right now (a restart, a network "
        "cut); nothing stored is lost, ask again after Retry-After",
        "headers": RETRY_AFTER,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }
    for path, operations in openapi.get("paths", {}).items():
        for method, operation in operations.items():
            if (path, method) in without:
                continue
            responses = operation.setdefault("responses", {})
            declared = responses.get("503")
            responses["503"] = unavailable if declared is None else {
                **declared, "description": f"{declared['description']}; or {unavailable['description']}",
                "headers": {**RETRY_AFTER, **declared.get("headers", {})},
            }


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
        # What Starlette and FastAPI raise themselves: an unknown path, a wrong method, a body they cannot decode.
        if error.status_code == 404:
            return _not_found(request, routes())
        if error.status_code == 405:
            return _method_not_allowed(request, error, routes())
        if error.status_code == 400:
            return JSONResponse(_unreadable_body(error), status_code=400)
        # Nothing else is expected (the static files' 401 is a file the server itself cannot read): the contract's
        # 500, with the details in the log.
        log.error("unexpected HTTP %s on %s %s: %s", error.status_code, request.method, request.url.path, error.detail)
        return JSONResponse(unexpected_error().to_body(), status_code=500)

    @app.exception_handler(DBAPIError)
    async def database_error(_: Request, error: DBAPIError) -> JSONResponse:
        # Its own handler: Starlette re-raises what the catch-all below answers, and uvicorn then closes the
        # connection, which a client keeping it alive would find reset at its next request.
        told = client_error(error)
        return JSONResponse(told.to_body(), status_code=told.status, headers=told.headers)

    @app.exception_handler(Exception)
    async def unhandled_error(_: Request, error: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return JSONResponse(unexpected_error().to_body(), status_code=500)
