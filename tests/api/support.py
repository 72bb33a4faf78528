"""Small client-side helpers shared by the API tests (requests go over real HTTP to a running server)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from httpx_sse import connect_sse


def upload(client: httpx.Client, chat_id: str, *files: tuple[str, bytes], **params) -> httpx.Response:
    return client.post(
        f"/chat/{chat_id}/documents", files=[("files", (name, data)) for name, data in files], params=params
    )


def upload_paths(client: httpx.Client, chat_id: str, *paths: Path, **params) -> httpx.Response:
    return upload(client, chat_id, *((path.name, path.read_bytes()) for path in paths), **params)


def stream_events(client: httpx.Client, path: str, body: dict) -> list[tuple[str, dict]]:
    """Every (event name, data) of an SSE response, read to its end."""
    with connect_sse(client, "POST", path, json=body) as source:
        source.response.raise_for_status()
        return [(sse.event, json.loads(sse.data)) for sse in source.iter_sse()]


def assert_error(response: httpx.Response, status: int, code: str, **details) -> dict:
    """The response is the contract's structured error; ``details`` must be among its details."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error", "message", "details"}
    assert body["error"] == code and body["message"]
    assert details.items() <= body["details"].items(), body
    return body
