"""HEAD answered as the GET of the same path (RFC 9110 §9.3.2: a general-purpose server supports both).

FastAPI's routes answer only the methods they declare, so ``curl -I`` or a monitor's HEAD of ``/health`` was a
405 while ``/openapi.json`` and the web UI's files (Starlette's own routes) answered it. The request is routed as
a GET; the server, whose own scope still says HEAD, sends the GET's status and headers without the body.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send


class HeadAsGet:
    """Pure ASGI middleware."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "HEAD":
            scope = {**scope, "method": "GET"}
        await self._app(scope, receive, send)
