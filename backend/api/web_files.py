"""The web UI's files (frontend/), served beside the API: revalidated by browsers, and the error contract kept.

The files are not versioned by name, so every response says ``no-cache``: a browser revalidates (a cheap 304 to
``If-None-Match`` / ``If-Modified-Since``) and sees a new release. Starlette answers a ``Range`` it cannot serve in
plain text (a malformed one 400, one starting past the file's end an empty 416); here those are the contract's
JSON, like every other failure a client sees.
"""

from __future__ import annotations

import os

from fastapi.staticfiles import StaticFiles
from starlette.datastructures import Headers
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.staticfiles import NotModifiedResponse
from starlette.types import Message, Receive, Scope, Send

from backend.errors import AxiomError, RangeNotSatisfiable, ValidationFailed

_REVALIDATE = {"Cache-Control": "no-cache"}


class WebFiles(StaticFiles):
    """A directory's files, each response with ``headers`` besides ``no-cache``."""

    def __init__(self, *, directory: str | os.PathLike[str], headers: dict[str, str] | None = None) -> None:
        super().__init__(directory=directory)
        self._headers = _REVALIDATE | (headers or {})

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(self._headers)
        return response

    def file_response(
        self, full_path: str | os.PathLike[str], stat_result: os.stat_result, scope: Scope, status_code: int = 200
    ) -> Response:
        # StaticFiles.file_response with _ContractFileResponse for its FileResponse.
        response = _ContractFileResponse(full_path, status_code=status_code, stat_result=stat_result)
        if self.is_not_modified(response.headers, Headers(scope=scope)):
            return NotModifiedResponse(response.headers)
        return response


class _ContractFileResponse(FileResponse):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal: Message | None = None  # the start of a plain-text refusal, held until its body comes (dropped)

        async def send_in_contract(message: Message) -> None:
            nonlocal refusal
            if message["type"] == "http.response.start" and message["status"] in (400, 416):
                refusal = message
            elif refusal is not None and message["type"] == "http.response.body":
                headers = Headers(raw=refusal["headers"])
                error = _range_error(refusal["status"], Headers(scope=scope).get("range", ""), headers)
                kept = {"Content-Range": headers["content-range"]} if "content-range" in headers else {}
                await JSONResponse(error.to_body(), status_code=error.status, headers=kept)(scope, receive, send)
            else:
                await send(message)

        await super().__call__(scope, receive, send_in_contract)


def _range_error(status: int, asked: str, headers: Headers) -> AxiomError:
    """What a client is told of the ``Range`` it ``asked`` for, refused with ``status`` and ``headers``."""
    if status == 416:  # its Content-Range is "bytes */<size>"
        size = headers.get("content-range", "").rpartition("/")[2]
        return RangeNotSatisfiable(
            f"The Range “{asked}” starts past the end of the file ({size} bytes).",
            size_bytes=int(size) if size.isdigit() else None,
        )
    return ValidationFailed(
        f"The Range “{asked}” is not a byte range that can be served (such as “bytes=0-1023”); leave it out to "
        "get the whole file.",
        field="range",
    )
