"""The one error contract: every failure a client sees is JSON ``{error, message, details}`` with its status.

AxiomError carries its own code and status; what FastAPI and Starlette raise themselves (invalid requests,
unknown routes, wrong methods) is translated here; anything else is logged and answered with a bare 500, so no
stack trace or internal message ever reaches a client.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from backend.errors import AxiomError

log = logging.getLogger(__name__)

_CODES_BY_STATUS = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}


def unexpected_error() -> AxiomError:
    """What a client is told about a failure nobody anticipated (the details go to the log only)."""
    return AxiomError("Something went wrong on our side.")


def error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    return {"error": code, "message": message, "details": details}


def _validation_error_body(error: RequestValidationError) -> dict[str, Any]:
    problems = [
        # "body"/"query"/"path" first, then the field (and any nesting): ["body", "message"] -> "message".
        {"field": ".".join(str(part) for part in problem["loc"][1:]) or str(problem["loc"][0]),
         "message": problem["msg"]}
        for problem in error.errors()
    ]
    first = problems[0] if problems else {"field": "request", "message": "Invalid request"}
    return error_body(
        "VALIDATION_ERROR", f"Invalid {first['field']}: {first['message']}.", field=first["field"], errors=problems
    )


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(AxiomError)
    async def axiom_error(_: Request, error: AxiomError) -> JSONResponse:
        return JSONResponse(error.to_body(), status_code=error.status, headers=error.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, error: RequestValidationError) -> JSONResponse:
        # The contract has one status for every bad input (query-api-tdd §3.4): 400, not FastAPI's 422.
        return JSONResponse(_validation_error_body(error), status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        code = _CODES_BY_STATUS.get(error.status_code, "HTTP_ERROR")
        message = (
            f"No route {request.method} {request.url.path}." if error.status_code == 404 else str(error.detail)
        )
        return JSONResponse(error_body(code, message), status_code=error.status_code, headers=error.headers)

    @app.exception_handler(Exception)
    async def unhandled_error(_: Request, error: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return JSONResponse(unexpected_error().to_body(), status_code=500)
