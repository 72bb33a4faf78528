"""The API says what it enforces: schemathesis generates requests from /openapi.json, valid and invalid, sends
them to a real server and checks every answer against the document — valid requests accepted, invalid ones
refused with a declared status and body, every declared status and header kept, 405s with a true Allow, nothing
reachable after its chat was deleted. The server is real (stores, embedder, graph); only the LLM is scripted,
since what the model says is not what is tested here, and a real one would make each question take seconds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from backend.api.schemas import HAS_TEXT, MESSAGE_MAX_CHARS, TITLE_PATTERN
from backend.api.settings import ApiSettings
from backend.ids import ID_MAX_LENGTH, ID_PATTERN
from tests.api.server import serve
from tests.api.support import assert_error
from tests.rag.scripted import ScriptedLLM

CONFIG = Path(__file__).with_name("schemathesis.toml")
# Enough examples per operation (about 1,400 cases in all) to meet every kind of failure the unbounded run
# found, few enough for about a minute on two shared cores. A fixed seed makes a failure reproducible.
MAX_EXAMPLES = 50
SEED = 10
MAX_FILES = 3
MAX_UPLOAD_BYTES = 300_000


@pytest.fixture(scope="module")
def server(build_app_services, tmp_path_factory):
    llm = ScriptedLLM("Axolotls regrow their limbs [Source 1].")
    services = build_app_services(tmp_path_factory.mktemp("contract"), llm=llm, max_upload_bytes=MAX_UPLOAD_BYTES)
    with serve(services, ApiSettings(max_files_per_upload=MAX_FILES)) as running:
        yield running


def test_the_document_declares_the_constraints_the_code_enforces(server):
    openapi = httpx.get(f"{server.url}/openapi.json").json()
    paths, schemas = openapi["paths"], openapi["components"]["schemas"]
    id_rule = {"type": "string", "pattern": ID_PATTERN, "minLength": 1, "maxLength": ID_MAX_LENGTH}
    for path, method, name in [("/chat/{chat_id}/documents/{doc_id}", "get", "chat_id"),
                               ("/chat/{chat_id}/documents/{doc_id}", "delete", "doc_id"),
                               ("/chat/history/{session_id}", "get", "session_id"),
                               ("/chats/{chat_id}", "patch", "chat_id")]:
        (parameter,) = [p for p in paths[path][method]["parameters"] if p["name"] == name]
        assert id_rule.items() <= parameter["schema"].items(), (path, name)
    assert {"maxLength": MESSAGE_MAX_CHARS, "minLength": 1, "pattern": HAS_TEXT}.items() <= (
        schemas["ChatStreamRequest"]["properties"]["message"].items()
    )
    assert schemas["ChatRename"]["properties"]["title"]["pattern"] == TITLE_PATTERN
    upload = paths["/chat/{chat_id}/documents"]["post"]["requestBody"]["content"]["multipart/form-data"]
    files = upload["schema"]["properties"]["files"]
    assert (files["minItems"], files["maxItems"], files["items"]["maxLength"]) == (1, MAX_FILES, MAX_UPLOAD_BYTES)
    assert "filename*" in files["description"] and "400" in files["description"]
    password = upload["schema"]["properties"]["password"]
    assert (password["type"], password["format"], password["maxLength"]) == ("string", "password", 1024)
    # Invalid input is the contract's 400, never FastAPI's 422 (which only uploads declare: an unreadable file).
    statuses = {(path, method): set(operation["responses"]) for path, operations in paths.items()
                for method, operation in operations.items()}
    assert all("422" not in codes for (path, _), codes in statuses.items() if path != "/chat/{chat_id}/documents")
    assert all("400" in codes for (path, _), codes in statuses.items()
               if path not in ("/chats", "/health", "/v1/models")) and "400" in statuses["/chats", "post"]
    assert "HTTPValidationError" not in schemas
    # The database server away is a 503 with Retry-After on every operation that reads or writes it: all but the
    # model list (with keys off; test_auth.py has keys on).
    for (path, method), codes in statuses.items():
        if (path, method) == ("/v1/models", "get"):
            assert "503" not in codes
            continue
        unavailable = paths[path][method]["responses"]["503"]
        assert "DATABASE_UNAVAILABLE" in unavailable["description"], (path, method)
        assert "Retry-After" in unavailable["headers"], (path, method)
        assert unavailable["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorBody"}


def test_a_request_that_breaks_a_declared_pattern_is_told_the_rule_not_the_regex(server):
    response = httpx.post(f"{server.url}/chats", json={"title": " \t "})
    body = assert_error(response, 400, "VALIDATION_ERROR", field="title")
    assert body["message"] == (
        "Invalid title: should be one line of 1-100 characters once trimmed, without control characters."
    )
    response = httpx.post(f"{server.url}/chat/bad.id/stream", json={"message": "hi"})
    assert assert_error(response, 400, "VALIDATION_ERROR", field="chat_id")["message"] == (
        "Invalid chat_id: should be 1-63 letters, digits, '_' or '-', starting and ending with a letter or digit."
    )


@pytest.mark.slow
def test_every_generated_request_is_answered_as_the_openapi_document_says(server, tmp_path):
    command = [
        str(Path(sys.executable).with_name("schemathesis")), "--config-file", str(CONFIG), "run",
        f"{server.url}/openapi.json", "--max-examples", str(MAX_EXAMPLES),
        "--seed", str(SEED), "--workers", "1", "--no-color",
    ]
    # The bound is for a hang only (the run is bounded by its examples, not by time).
    # In tmp_path: schemathesis keeps a cache directory where it runs.
    run = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-30_000:] + run.stderr[-5_000:]
