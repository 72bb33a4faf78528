"""A size limit on request bodies, so no request can make the server hold more than a question's worth of JSON.

Every body but an upload's is JSON that FastAPI reads whole into memory before a route runs, so the limit is
enforced underneath, as the bytes arrive: a declared ``Content-Length`` over it is refused before anything is
read, and a chunked body as soon as the bytes received pass it. Either way the answer is the contract's 413
PAYLOAD_TOO_LARGE, whatever the route would have said. The upload route parses its multipart body as it streams,
with limits of its own (backend/api/multipart.py), and is left alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.api.multipart import readable_size
from backend.errors import PayloadTooLarge


class _Overflow(Exception):
    """Raised into the app by ``receive`` once the body has passed the limit; the app's own answer is dropped."""


class BodyLimit:
    """Pure ASGI middleware: ``exempt(scope)`` names the requests it does not apply to."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, exempt: Callable[[Scope], bool]) -> None:
        self._app = app
        self._max_bytes = max_bytes
        self._exempt = exempt

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._exempt(scope):
            await self._app(scope, receive, send)
            return
        if _declared_length(scope) > self._max_bytes:
            await self._refuse(scope, receive, send)
            return

        received = 0
        overflowed = started = False

        async def counting_receive() -> Message:
            nonlocal received, overflowed
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self._max_bytes:
                    overflowed = True
                    raise _Overflow
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if overflowed and not started:
                return  # whatever the app made of the interrupted body; the 413 below replaces it
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._app(scope, counting_receive, guarded_send)
        except Exception:
            if not overflowed:  # only the app's reaction to the interrupted body is replaced
                raise
        if overflowed and not started:
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        error = PayloadTooLarge(
            f"The request body is larger than the limit of {readable_size(self._max_bytes)}.",
            limit_bytes=self._max_bytes,
        )
        # The rest of the body is never read: the server closes the connection after this answer.
        await JSONResponse(error.to_body(), status_code=error.status, headers={"Connection": "close"})(
            scope, receive, send
        )


def _declared_length(scope: Scope) -> int:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return 0  # uvicorn's HTTP parser refuses a malformed length before the app is called
    return 0


def declare_body_limit(openapi: dict[str, Any], *, max_bytes: int) -> None:
    """The 413 on every operation that takes a JSON body (the upload's multipart body has its own limits)."""
    response = {
        "description": f"The request body is larger than {max_bytes} bytes (AXIOM_MAX_JSON_BODY_BYTES)",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }
    for operations in openapi.get("paths", {}).values():
        for operation in operations.values():
            if "application/json" in operation.get("requestBody", {}).get("content", {}):
                operation.setdefault("responses", {})["413"] = response
