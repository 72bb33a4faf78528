"""Hostile input against a real server (issue 14): sessions that try to cross chats, ids and messages that are
empty in disguise, bodies that are not JSON or are far too large, paths with a stray slash. Each must get the
contract's error with its status, a message a person can act on, and leave everything stored as it was."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from sqlalchemy import text

import backend.errors
from backend.api.multipart import readable_size
from backend.api.schemas import COLLECTION_PATTERN, PATTERN_RULES
from backend.api.settings import ApiSettings
from tests.api.server import RunningServer, serve
from tests.api.support import assert_error, upload
from tests.rag.scripted import ScriptedLLM

NOTES = ("axolotl.txt", b"Axolotls can regrow their limbs, their hearts and even parts of their brains.")
OTHER_NOTES = ("bridge.txt", b"Ada Finchley built the granite bridge over the river Quorra in 1931.")
# A word only chat A's conversation holds: if it reaches a prompt of chat B, A's history crossed over.
MARKER = "Quintessa"
QUESTION = f"{MARKER} asks: what can axolotls regrow?"
BODY_LIMIT = 16 * 1024
DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"


@pytest.fixture(scope="module")
def llm() -> ScriptedLLM:
    return ScriptedLLM("Axolotls can regrow their limbs [Source 1].")


@pytest.fixture(scope="module")
def server(build_app_services, tmp_path_factory, llm) -> Iterator[RunningServer]:
    services = build_app_services(tmp_path_factory.mktemp("strict"), llm=llm)
    with serve(services, ApiSettings(max_json_body_bytes=BODY_LIMIT)) as running:
        with httpx.Client(base_url=running.url) as client:
            for chat_id in ("alpha", "beta", "gamma"):
                assert upload(client, chat_id, NOTES).status_code == 200
        yield running


def stored(server: RunningServer) -> dict[str, list]:
    """Everything a request could have written: messages, session bindings and documents."""
    with server.services.database.connect() as db:
        messages = db.execute(text("SELECT session_id, role, content FROM messages ORDER BY seq")).all()
        sessions = db.execute(text("SELECT session_id, chat_id FROM sessions ORDER BY session_id")).all()
    messages, sessions = [tuple(row) for row in messages], [tuple(row) for row in sessions]
    documents = {chat: [d.document_id for d in server.services.documents.list(chat)] for chat in ("alpha", "beta")}
    return {"messages": messages, "sessions": sessions, "documents": documents, "chats": server.services.chats.list()}


def ask(client: httpx.Client, chat_id: str, session_id: str | None = None, message: str = QUESTION) -> dict:
    body = {"message": message, "chat_id": chat_id} | ({"session_id": session_id} if session_id else {})
    response = client.post("/chat/", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def prompts_since(llm: ScriptedLLM, count: int) -> str:
    return "\n".join(message["content"] for prompt in llm.prompts[count:] for message in prompt)


def completion(message: str = QUESTION, **body) -> dict:
    return {"model": "axiom", "messages": [{"role": "user", "content": message}], **body}


# --- sessions belong to a chat ------------------------------------------------------------------------------


def cross_chat_requests(session_id: str, chat_id: str) -> dict[str, tuple[str, dict, dict]]:
    """Every way of asking in ``chat_id`` with ``session_id``: (path, JSON body, headers)."""
    return {
        "chat": ("/chat/", {"message": QUESTION, "chat_id": chat_id, "session_id": session_id}, {}),
        "stream": (f"/chat/{chat_id}/stream", {"message": QUESTION, "session_id": session_id}, {}),
        "legacy stream": (
            "/chat/stream", {"message": QUESTION, "collection_name": f"chat_{chat_id}", "session_id": session_id}, {}
        ),
        "openai metadata": (
            "/v1/chat/completions", completion(metadata={"chat_id": chat_id, "session_id": session_id}), {}
        ),
        "openai headers": (
            "/v1/chat/completions", completion(),
            {"X-Axiom-Chat-Id": chat_id, "X-Axiom-Session-Id": session_id},
        ),
    }


@pytest.mark.parametrize("route", list(cross_chat_requests("s", "c")))
def test_a_session_of_one_chat_is_refused_in_another_and_its_history_never_crosses(client, server, llm, route):
    session_id = f"conversation-{route.replace(' ', '-')}"
    ask(client, "alpha", session_id)
    before, prompted = stored(server), len(llm.prompts)

    path, body, headers = cross_chat_requests(session_id, "beta")[route]
    refused = assert_error(
        client.post(path, json=body, headers=headers), 404, "NOT_FOUND", session_id=session_id, chat_id="beta"
    )

    assert "belongs to the chat it was started in" in refused["message"]
    assert stored(server) == before
    assert len(llm.prompts) == prompted  # nothing ran: no rewrite or prompt of chat B read A's history


def test_the_session_goes_on_in_its_own_chat_with_its_history(client, server, llm):
    """The control for the test above: the same session in its own chat is answered, and its history reaches
    the prompts, which is what must never happen from another chat."""
    ask(client, "alpha", "own-chat")
    prompted = len(llm.prompts)

    answered = ask(client, "alpha", "own-chat", "And what else can they regrow?")

    assert answered["session_id"] == "own-chat"
    assert MARKER in prompts_since(llm, prompted)
    assert len(client.get("/chat/history/own-chat").json()["messages"]) == 4


def test_a_new_session_belongs_to_the_chat_it_was_made_in(client, server):
    session_id = ask(client, "alpha")["session_id"]
    before = stored(server)

    assert_error(
        client.post("/chat/", json={"message": QUESTION, "chat_id": "beta", "session_id": session_id}),
        404, "NOT_FOUND", session_id=session_id,
    )
    assert stored(server) == before


def test_a_chats_own_session_cannot_be_taken_by_another_chat(client, server):
    """gamma has documents but has not asked yet: its conversation (session gamma) is still gamma's."""
    before = stored(server)
    assert_error(
        client.post("/chat/", json={"message": QUESTION, "chat_id": "beta", "session_id": "gamma"}),
        404, "NOT_FOUND", session_id="gamma", chat_id="beta",
    )
    assert stored(server) == before

    assert ask(client, "gamma", "gamma")["session_id"] == "gamma"


def test_deleting_a_chat_clears_every_session_of_it(client, server):
    assert upload(client, "doomed", NOTES).status_code == 200
    ask(client, "doomed", "doomed")
    api_session = ask(client, "doomed")["session_id"]
    ask(client, "beta", "bystander")
    bystander = client.get("/chat/history/bystander").json()

    deleted = client.delete("/chats/doomed")

    assert deleted.status_code == 200 and deleted.json()["messages_deleted"] == 4
    for session_id in ("doomed", api_session):
        assert_error(client.get(f"/chat/history/{session_id}"), 404, "NOT_FOUND", session_id=session_id)
    assert client.get("/chat/history/bystander").json() == bystander
    # The deleted chat's sessions stay its: no other chat takes them up (nor an answer finished after the delete).
    refused = client.post("/chat/", json={"message": QUESTION, "chat_id": "beta", "session_id": api_session})
    assert_error(refused, 404, "NOT_FOUND", session_id=api_session, chat_id="beta")
    assert_error(client.get(f"/chat/history/{api_session}"), 404, "NOT_FOUND", session_id=api_session)


# --- strict input -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "headers", "field"),
    [
        ("/chat/", {"message": "hi", "chat_id": ""}, {}, "chat_id"),
        ("/chat/", {"message": "hi", "session_id": ""}, {}, "session_id"),
        ("/v1/chat/completions", completion("hi", metadata={"chat_id": ""}), {}, "metadata.chat_id"),
        ("/v1/chat/completions", completion("hi", metadata={"session_id": ""}), {}, "metadata.session_id"),
        ("/v1/chat/completions", completion("hi"), {"X-Axiom-Chat-Id": ""}, "x-axiom-chat-id"),
        ("/v1/chat/completions", completion("hi"), {"X-Axiom-Session-Id": ""}, "x-axiom-session-id"),
        ("/chat/stream", {"message": "hi", "collection_name": "chat_"}, {}, "collection_name"),
    ],
)
def test_an_empty_id_is_refused_never_taken_as_the_default(client, server, path, body, headers, field):
    before = stored(server)
    refused = assert_error(client.post(path, json=body, headers=headers), 400, "VALIDATION_ERROR", field=field)
    rule = PATTERN_RULES[COLLECTION_PATTERN] if field == "collection_name" else "should not be empty"
    assert refused["message"] == f"Invalid {field}: {rule}."
    assert stored(server) == before


BLANK_MESSAGES = [" \x00 ", "\x00", "\x1b\x07\x7f", "\t\x85\u00a0\u3000\u2028", "\x9f \x01"]


@pytest.mark.parametrize("message", BLANK_MESSAGES)
@pytest.mark.parametrize(
    "request_for",
    [
        lambda m: ("/chat/", {"message": m, "chat_id": "alpha"}),
        lambda m: ("/chat/alpha/stream", {"message": m}),
        lambda m: ("/chat/stream", {"message": m, "collection_name": "chat_alpha"}),
    ],
    ids=["chat", "stream", "legacy stream"],
)
def test_a_message_of_only_spaces_and_control_characters_is_refused(client, server, message, request_for):
    before = stored(server)
    path, body = request_for(message)
    refused = assert_error(client.post(path, json=body), 400, "VALIDATION_ERROR", field="message")
    assert refused["message"] == "Invalid message: should have some text, not only spaces or control characters."
    assert stored(server) == before


@pytest.mark.parametrize("message", BLANK_MESSAGES)
def test_an_openai_question_of_only_spaces_and_control_characters_is_refused(client, server, message):
    before = stored(server)
    refused = assert_error(
        client.post("/v1/chat/completions", json=completion(message, metadata={"chat_id": "alpha"})),
        400, "VALIDATION_ERROR", field="messages",
    )
    assert "control characters" in refused["message"]
    assert stored(server) == before


def test_control_characters_within_text_are_kept(client):
    assert ask(client, "alpha", message="What can axolotls\x00 regrow?\x07")["answer"]


@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        (b'{"title": "hi",,}', "application/json",
         "The request body is not valid JSON: Expecting property name enclosed in double quotes at character 15."),
        (b'{"title": "hi"', "application/json",
         "The request body is not valid JSON: Expecting ',' delimiter at character 14."),
        (b'{"title": "h\xff"}', "application/json", "The request body is not valid JSON: it is not UTF-8 text."),
        (b'["hi"]', "application/json",
         "The request body should be a JSON object, sent with Content-Type: application/json."),
        (b'{"title": "hi"}', "text/plain",
         "The request body should be a JSON object, sent with Content-Type: application/json."),
    ],
    ids=["stray comma", "cut short", "not UTF-8", "an array", "not labelled JSON"],
)
@pytest.mark.parametrize("path", ["/chat/", "/chat/alpha/stream", "/v1/chat/completions", "/chats"])
def test_a_body_that_is_not_a_json_object_is_a_readable_400(client, server, path, body, content_type, message):
    before = stored(server)
    response = client.post(path, content=body, headers={"content-type": content_type})
    assert assert_error(response, 400, "VALIDATION_ERROR", field="body")["message"] == message
    assert stored(server) == before


@pytest.mark.parametrize("path", ["/chat/", "/chat/alpha/stream", "/v1/chat/completions"])
def test_a_missing_body_is_a_readable_400(client, server, path):
    before = stored(server)
    response = client.post(path, headers={"content-type": "application/json"})
    assert assert_error(response, 400, "VALIDATION_ERROR", field="body")["message"] == (
        "The request body is missing: it should be a JSON object, sent with Content-Type: application/json."
    )
    assert stored(server) == before


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [("POST", "/chat/", {"message": "hi", "chatId": "alpha"}, "chatId"),
     ("POST", "/chat/", {"message": "hi", "collection_name": "chat_alpha"}, "collection_name"),
     ("POST", "/chat/alpha/stream", {"message": "hi", "sessionId": "s-typo"}, "sessionId"),
     ("POST", "/chat/stream", {"message": "hi", "collection_name": "chat_alpha", "chat_id": "beta"}, "chat_id"),
     ("POST", "/chats", {"name": "Taxes"}, "name"),
     ("PATCH", "/chats/alpha", {"title": "Taxes", "pinned": True}, "pinned")],
)
def test_a_field_the_route_does_not_have_is_a_400_that_names_it(client, server, method, path, body, field):
    """A misspelt field was ignored: the question went to the default chat (or a new session, or an untitled
    chat) as if it had been asked there."""
    before = stored(server)
    refused = assert_error(client.request(method, path, json=body), 400, "VALIDATION_ERROR", field=field)
    assert refused["message"].startswith(f"Invalid {field}: is not a field of this request")
    assert stored(server) == before


@pytest.mark.parametrize(
    ("path", "request_args", "field"),
    [("/v1/chat/completions", {"json": {"model": "axiom", "messages": [{"role": "system", "content": "x"}]}},
      "messages"),
     ("/v1/chat/completions", {"json": {"model": "axiom", "messages": [{"role": "user", "content": None}]}},
      "messages"),
     ("/chat/alpha/documents", {"json": {"files": []}}, "content-type")],
)
def test_a_400_the_services_raise_lists_its_problem_in_errors_like_the_schemas(client, path, request_args, field):
    """docs/api.md: `details.errors` lists every problem; those found past the schema had no list."""
    refused = assert_error(client.post(path, **request_args), 400, "VALIDATION_ERROR", field=field)
    assert refused["details"]["errors"] == [{"field": field, "message": refused["message"]}]


def test_the_openapi_document_says_which_fields_a_body_has(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for body in ("ChatRequest", "ChatStreamRequest", "LegacyStreamRequest", "NewChat", "ChatRename"):
        assert schemas[body]["additionalProperties"] is False, body
    assert schemas["ChatCompletionRequest"].get("additionalProperties", True) is not False  # OpenAI's extras


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [("/chat/", b'{"message": "hi \\ud800", "chat_id": "alpha"}', "message"),
     ("/chats", b'{"title": "\\udfff"}', "title"),
     ("/v1/chat/completions", b'{"model": "axiom", "messages": [{"role": "user", "content": "\\ud800"}]}',
      "messages")],
)
def test_text_with_a_lone_surrogate_is_a_readable_400(client, server, path, body, field):
    """JSON can spell half of a UTF-16 pair (\\ud800) that no text can hold."""
    before = stored(server)
    response = client.post(path, content=body, headers={"content-type": "application/json"})
    refused = assert_error(response, 400, "VALIDATION_ERROR", field=field)
    subject = "the last user message " if field == "messages" else ""  # the question of OpenAI's list
    assert refused["message"] == f"Invalid {field}: {subject}should be text without a lone surrogate such as \\ud800."
    assert stored(server) == before


@pytest.mark.parametrize(
    ("method", "path", "route"),
    [("GET", "/chats/", "/chats"), ("POST", "/chat", "/chat/"), ("GET", "/health/", "/health"),
     ("GET", "/chat/history/s1/", "/chat/history/s1"), ("POST", "/chat/alpha/stream/", "/chat/alpha/stream")],
)
def test_a_stray_or_missing_trailing_slash_is_a_404_that_names_the_route(client, method, path, route):
    response = client.request(method, path, json={"message": "hi"} if method == "POST" else None)
    refused = assert_error(response, 404, "NOT_FOUND")
    assert refused["message"] == f"No route {method} {path} (the route is {route})."


def test_an_unknown_path_is_a_404_without_a_hint(client):
    assert assert_error(client.get("/nope/"), 404, "NOT_FOUND")["message"] == "No route GET /nope/."


def documented_codes() -> set[str]:
    """The `error` column of the error table in docs/api.md."""
    table = DOCS.read_text().split("**Errors.**", 1)[1].split("\n\n", 2)[1]
    return {code for row in table.splitlines()[2:] for code in re.findall(r"`([A-Z_]+)`", row.split("|")[2])}


def test_every_error_code_is_in_the_table_of_docs_api_md():
    raised = {
        error.code for error in vars(backend.errors).values()
        if isinstance(error, type) and issubclass(error, backend.errors.AxiomError)
    }
    answered = {"VALIDATION_ERROR", "NOT_FOUND", "METHOD_NOT_ALLOWED", "INTERNAL_ERROR"}  # backend/api/errors.py
    assert raised | answered <= documented_codes()


# --- the size of a JSON body --------------------------------------------------------------------------------


def raw_exchange(url: str, request: bytes) -> bytes:
    """Sends ``request`` as is over a new connection and reads until the server closes it."""
    address = urlsplit(url)
    with socket.create_connection((address.hostname, address.port), timeout=60) as connection:
        connection.sendall(request)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    return received


def parse(raw: bytes) -> httpx.Response:
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = [tuple(line.split(": ", 1)) for line in header_lines]
    return httpx.Response(int(status_line.split()[1]), headers=headers, content=body)


def test_a_body_declared_larger_than_the_limit_is_refused_before_it_is_sent(server):
    """The request claims a gigabyte and sends none of it: the answer comes on the headers alone."""
    before = stored(server)
    raw = raw_exchange(
        server.url,
        b"POST /chat/ HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1000000000\r\n\r\n",
    )
    refused = assert_error(parse(raw), 413, "PAYLOAD_TOO_LARGE", limit_bytes=BODY_LIMIT)
    assert refused["message"] == "The request body is larger than the limit of 16 KB."  # as the upload limits say
    assert stored(server) == before


@pytest.mark.parametrize("path", ["/chat/", "/chat/alpha/stream", "/v1/chat/completions", "/chats"])
def test_a_chunked_body_is_refused_once_it_passes_the_limit(server, path):
    """No length is declared; the server stops at the limit, not at the end of what the client would send."""
    before = stored(server)
    piece = b'{"message": "' + b"x" * 4000
    chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    chunks_past_the_limit = BODY_LIMIT // len(piece) + 1
    raw = raw_exchange(
        server.url,
        f"POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n".encode()
        + b"Transfer-Encoding: chunked\r\n\r\n" + chunk * chunks_past_the_limit,  # never finished: no last chunk
    )
    assert_error(parse(raw), 413, "PAYLOAD_TOO_LARGE", limit_bytes=BODY_LIMIT)
    assert stored(server) == before


def test_a_body_within_the_limit_is_read_as_usual(client):
    padding = " " * (BODY_LIMIT - 200)  # JSON allows any amount of whitespace between tokens
    body = f'{{"message": "What can axolotls regrow?",{padding}"chat_id": "alpha"}}'.encode()
    assert len(body) <= BODY_LIMIT
    response = client.post("/chat/", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text


def test_the_upload_route_is_not_held_to_the_json_body_limit(client, server):
    large = ("large.txt", b"Axolotls live in Lake Xochimilco. " * (4 * BODY_LIMIT // 34))
    assert len(large[1]) > 3 * BODY_LIMIT
    response = upload(client, "beta", large)
    assert response.status_code == 200, response.text
    assert response.json()["uploaded"][0]["name"] == "large.txt"


def test_the_openapi_document_states_the_body_limit(client):
    paths = client.get("/openapi.json").json()["paths"]
    for path, method in [("/chat/", "post"), ("/chat/{chat_id}/stream", "post"), ("/chat/stream", "post"),
                         ("/v1/chat/completions", "post"), ("/chats", "post"), ("/chats/{chat_id}", "patch")]:
        declared = paths[path][method]["responses"]["413"]
        assert str(BODY_LIMIT) in declared["description"], (path, method)
    assert "413" in paths["/chat/{chat_id}/documents"]["post"]["responses"]  # the upload's own FILE_TOO_LARGE
    assert str(BODY_LIMIT) not in paths["/chat/{chat_id}/documents"]["post"]["responses"]["413"].get(
        "description", ""
    )
    for path, method in [("/chat/", "post"), ("/chat/{chat_id}/stream", "post"), ("/chat/stream", "post")]:
        assert "404" in paths[path][method]["responses"], (path, method)


@pytest.mark.parametrize(
    ("size", "readable"),
    [(900, "900 bytes"), (256 * 1024, "256 KB"), (3_000_000, "2.9 MB"), (50 * 1024 * 1024, "50 MB")],
)
def test_upload_limits_are_named_in_sizes_a_person_reads(size: int, readable: str):
    assert readable_size(size) == readable
