"""API keys (AXIOM_AUTH=api-key) and who owns what (OWASP API1, broken object-level authorisation).

Two users on one real server: Alice has a named chat with a document, a finished background job and a
conversation; Bob tries every route of the API on each of them and gets the 404 a chat that does not exist gets,
and Alice's things are all still there afterwards. The routes come from the server's own OpenAPI document, so a new
route without a case here fails the test. Only the LLM is scripted (what it says is not what is tested).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import openai
import pytest

from tests.api.server import serve
from tests.api.support import assert_error, stream_events, upload
from tests.rag.scripted import ScriptedLLM
from tests.support.waiting import wait_for

NOTES = ("axolotl.txt", b"Axolotls can regrow their limbs, their hearts and even parts of their brains.")
NEVER_MADE = "never-made"
CONTRACT_CONFIG = Path(__file__).with_name("schemathesis.toml")


@pytest.fixture(scope="module")
def server(build_app_services, tmp_path_factory):
    llm = ScriptedLLM(*["Axolotls regrow their limbs [Source 1]."] * 100)
    services = build_app_services(tmp_path_factory.mktemp("auth"), llm=llm, auth="api-key")
    with serve(services) as running:
        yield running


def client_of(server, key: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=server.url, headers=headers, timeout=600)


@pytest.fixture(scope="module")
def alice(server):
    with client_of(server, server.services.users.create_key("alice").key) as client:
        yield client


@pytest.fixture(scope="module")
def bob(server):
    with client_of(server, server.services.users.create_key("bob").key) as client:
        yield client


@pytest.fixture(scope="module")
def alices(alice):
    """Alice's chat, document, job and session."""
    chat = alice.post("/chats", json={"title": "Alice's notes"}).json()["id"]
    document = upload(alice, chat, NOTES).json()["uploaded"][0]["id"]
    job = upload(alice, chat, ("tiny.md", b"# Tiny\n\nA small markdown note."), background="true").json()
    job_id = job["jobs"][0]["id"]
    wait_for(lambda: alice.get(f"/chat/{chat}/documents/{job_id}").json()["status"] == "ready", "the job")
    events = stream_events(alice, f"/chat/{chat}/stream", {"message": "What can axolotls regrow?"})
    session = events[-1][1]["session_id"]
    return {"chat": chat, "document": document, "job": job_id, "session": session}


def bobs_attempts(ids: dict[str, str]) -> dict[tuple[str, str], list[dict]]:
    """For each route of the API, Bob's requests on Alice's things (every one must be a 404)."""
    chat, session = ids["chat"], ids["session"]
    message = {"message": "What can axolotls regrow?"}
    completion = {"model": "axiom", "messages": [{"role": "user", "content": "What can axolotls regrow?"}]}
    return {
        ("POST", "/chat/"): [{"json": {**message, "chat_id": chat}},
                             {"json": {**message, "chat_id": chat, "session_id": session}}],
        ("POST", "/chat/{chat_id}/stream"): [{"url": f"/chat/{chat}/stream", "json": message}],
        ("POST", "/chat/stream"): [{"json": {**message, "collection_name": f"chat_{chat}"}}],
        ("GET", "/chat/history/{session_id}"): [{"url": f"/chat/history/{session}"},
                                                 {"url": f"/chat/history/{chat}"}],
        ("DELETE", "/chat/history/{session_id}"): [{"url": f"/chat/history/{session}"}],
        ("POST", "/chat/{chat_id}/documents"): [{"url": f"/chat/{chat}/documents",
                                                 "files": [("files", NOTES)]}],
        ("GET", "/chat/{chat_id}/documents"): [{"url": f"/chat/{chat}/documents"}],
        ("GET", "/chat/{chat_id}/documents/{doc_id}"): [{"url": f"/chat/{chat}/documents/{ids['document']}"},
                                                        {"url": f"/chat/{chat}/documents/{ids['job']}"}],
        ("DELETE", "/chat/{chat_id}/documents/{doc_id}"): [
            {"url": f"/chat/{chat}/documents/{ids['document']}"}, {"url": f"/chat/{chat}/documents/{ids['job']}"}
        ],
        ("PATCH", "/chats/{chat_id}"): [{"url": f"/chats/{chat}", "json": {"title": "Bob's now"}}],
        ("DELETE", "/chats/{chat_id}"): [{"url": f"/chats/{chat}"}],
        ("POST", "/v1/chat/completions"): [
            {"json": completion, "headers": {"X-Axiom-Chat-Id": chat}},
            {"json": {**completion, "metadata": {"chat_id": chat}}},
            {"json": {**completion, "stream": True}, "headers": {"X-Axiom-Chat-Id": chat}},
        ],
    }


MAKING_A_CHAT = {("POST", "/chat/"), ("POST", "/chat/{chat_id}/stream"), ("POST", "/chat/stream"),
                 ("POST", "/chat/{chat_id}/documents"), ("POST", "/v1/chat/completions")}
# Routes that name no chat: what Bob gets from them is checked by the tests below them.
NO_CHAT_ROUTES = {("GET", "/chats"), ("POST", "/chats"), ("GET", "/health"), ("GET", "/v1/models")}


def api_routes(client: httpx.Client) -> set[tuple[str, str]]:
    paths = client.get("/openapi.json").json()["paths"]
    return {(method.upper(), path) for path, operations in paths.items() for method in operations}


def send(client: httpx.Client, method: str, path: str, request: dict) -> httpx.Response:
    request = dict(request)
    return client.request(method, request.pop("url", path), **request)


def test_every_route_is_covered_here(alice):
    assert api_routes(alice) == set(bobs_attempts({"chat": "c", "document": "d", "job": "j", "session": "s"})) | (
        NO_CHAT_ROUTES
    )


def test_another_users_chat_is_not_found_on_every_route_and_stays_whole(alice, bob, alices):
    before = alice.get(f"/chat/{alices['chat']}/documents").json()
    history = alice.get(f"/chat/history/{alices['session']}").json()
    for (method, path), requests in bobs_attempts(alices).items():
        for request in requests:
            response = send(bob, method, path, request)
            assert_error(response, 404, "NOT_FOUND")
    assert alice.get(f"/chat/{alices['chat']}/documents").json() == before
    assert alice.get(f"/chat/history/{alices['session']}").json() == history
    assert [chat["title"] for chat in alice.get("/chats").json()["chats"]].count("Alice's notes") == 1


def test_another_users_chat_looks_exactly_like_one_that_does_not_exist(bob, alices):
    """404 rather than 403: nothing in the answer tells Bob that the id is taken. (Routes that make a chat which
    does not exist yet, an upload or a question, are left out: for a free id they succeed.)"""
    never_made = bobs_attempts({key: NEVER_MADE for key in alices})
    for route, requests in bobs_attempts(alices).items():
        if route in MAKING_A_CHAT:
            continue
        for theirs, free in zip(requests, never_made[route], strict=True):
            taken = send(bob, *route, theirs).text
            for value in alices.values():
                taken = taken.replace(value, NEVER_MADE)
            assert json.loads(taken) == assert_error(send(bob, *route, free), 404, "NOT_FOUND"), route


def test_each_user_lists_only_their_own_chats(alice, bob, alices):
    bobs = bob.post("/chats", json={"title": "Bob's chat"}).json()["id"]
    assert {chat["id"] for chat in bob.get("/chats").json()["chats"]} >= {bobs}
    assert alices["chat"] not in {chat["id"] for chat in bob.get("/chats").json()["chats"]}
    assert bobs not in {chat["id"] for chat in alice.get("/chats").json()["chats"]}


def test_a_chat_first_used_by_a_user_is_theirs(alice, bob):
    assert upload(bob, "bobs-first", NOTES).status_code == 200
    assert "bobs-first" in {chat["id"] for chat in bob.get("/chats").json()["chats"]}
    assert_error(upload(alice, "bobs-first", NOTES), 404, "NOT_FOUND")
    assert_error(alice.post("/chat/", json={"message": "hello", "chat_id": "bobs-first"}), 404, "NOT_FOUND")
    bob.post("/chat/", json={"message": "What can axolotls regrow?", "chat_id": "bobs-asked"}).raise_for_status()
    assert_error(alice.get("/chat/bobs-asked/documents"), 404, "NOT_FOUND")


def test_a_question_naming_no_chat_goes_to_the_askers_own_default_chat(alice, bob):
    answered = alice.post("/chat/", json={"message": "What can axolotls regrow?"})
    session = answered.json()["session_id"]
    assert_error(bob.get(f"/chat/history/{session}"), 404, "NOT_FOUND")
    assert_error(bob.post("/chat/", json={"message": "hello", "session_id": session}), 404, "NOT_FOUND")
    bob.post("/chat/", json={"message": "hello"}).raise_for_status()
    alices_chats = {chat["id"] for chat in alice.get("/chats").json()["chats"]}
    bobs_chats = {chat["id"] for chat in bob.get("/chats").json()["chats"]}
    (alices_default,) = {chat for chat in alices_chats if chat.startswith("default-")}
    (bobs_default,) = {chat for chat in bobs_chats if chat.startswith("default-")}
    assert alices_default != bobs_default


def test_a_request_without_a_valid_key_is_401_on_every_route_but_health(server, alice, alices):
    revoked = server.services.users.create_key("carol")
    server.services.users.revoke(revoked.record.key_id)
    routes = bobs_attempts(alices)
    routes |= {("GET", "/chats"): [{}], ("POST", "/chats"): [{"json": {}}], ("GET", "/v1/models"): [{}]}
    assert set(routes) | {("GET", "/health")} == api_routes(alice)
    for key in (None, "axk_not-a-key", revoked.key):
        with client_of(server, key) as stranger:
            for (method, path), requests in routes.items():
                for request in requests:
                    response = send(stranger, method, path, request)
                    assert_error(response, 401, "UNAUTHORIZED")
                    assert response.headers["www-authenticate"].startswith("Bearer")
            assert stranger.get("/health").status_code == 200
    with client_of(server, None) as stranger:
        assert_error(stranger.get("/chats", headers={"Authorization": "Basic YWxpY2U6"}), 401, "UNAUTHORIZED")
        # The web UI's files are served to anyone: the page asks for the key itself.
        assert stranger.get("/").status_code == 200 and stranger.get("/assets/app.js").status_code == 200
    assert alice.get(f"/chat/{alices['chat']}/documents").status_code == 200


def test_the_openapi_document_declares_the_bearer_scheme(alice):
    openapi = alice.get("/openapi.json").json()
    scheme = openapi["components"]["securitySchemes"]["apiKey"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer") and "axiom keys create" in scheme["description"]
    for path, operations in openapi["paths"].items():
        for operation in operations.values():
            # Checking the key reads the database: every operation may find it away.
            assert "DATABASE_UNAVAILABLE" in operation["responses"]["503"]["description"], path
            if path == "/health":
                assert "security" not in operation and "401" not in operation["responses"]
            else:
                assert operation["security"] == [{"apiKey": []}] and "401" in operation["responses"], path


def test_the_openai_sdk_works_with_an_api_key(server, alice, alices):
    key = alice.headers["Authorization"].removeprefix("Bearer ")
    sdk = openai.OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)
    assert [model.id for model in sdk.models.list()] == ["axiom"]
    completion = sdk.chat.completions.create(
        model="axiom", messages=[{"role": "user", "content": "What can axolotls regrow?"}],
        extra_headers={"X-Axiom-Chat-Id": alices["chat"]},
    )
    assert "limbs" in completion.choices[0].message.content
    streamed = sdk.chat.completions.create(
        model="axiom", messages=[{"role": "user", "content": "What can axolotls regrow?"}], stream=True,
        extra_headers={"X-Axiom-Chat-Id": alices["chat"]},
    )
    assert "limbs" in "".join(chunk.choices[0].delta.content or "" for chunk in streamed if chunk.choices)
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{server.url}/v1", api_key="axk_wrong", max_retries=0).models.list()
    bob_key = server.services.users.create_key("bob").key
    with pytest.raises(openai.NotFoundError):
        openai.OpenAI(base_url=f"{server.url}/v1", api_key=bob_key, max_retries=0).chat.completions.create(
            model="axiom", messages=[{"role": "user", "content": "hi"}],
            extra_headers={"X-Axiom-Chat-Id": alices["chat"]},
        )


def test_a_user_deletes_their_own_chat(alice, bob):
    chat = alice.post("/chats", json={"title": "Short-lived"}).json()["id"]
    assert upload(alice, chat, NOTES).status_code == 200
    assert_error(bob.delete(f"/chats/{chat}"), 404, "NOT_FOUND")
    assert alice.delete(f"/chats/{chat}").json()["documents_deleted"] == 1
    assert_error(alice.get(f"/chat/{chat}/documents"), 404, "NOT_FOUND")


def chat_ids(client: httpx.Client) -> set[str]:
    return {chat["id"] for chat in client.get("/chats").json()["chats"]}


def test_a_request_that_fails_makes_no_chat(alice, bob, alices):
    """Each of these is refused, and leaves Bob's list of chats as it was: the new ids are still free (Alice
    can make them hers)."""
    before = chat_ids(bob)
    question = {"message": "What can axolotls regrow?"}
    failures = {
        "another user's session": bob.post("/chat/", json={**question, "chat_id": "failed-1",
                                                           "session_id": alices["session"]}),
        "another user's chat as session": bob.post("/chat/failed-2/stream", json={**question,
                                                                              "session_id": alices["chat"]}),
        "completion with another user's session": bob.post("/v1/chat/completions", json={
            "model": "axiom", "messages": [{"role": "user", "content": "hi"}],
            "metadata": {"chat_id": "failed-3", "session_id": alices["session"]}}),
        "a file of no supported type": upload(bob, "failed-4", ("x.bin", b"\x00\x01 binary")),
        "an empty file": upload(bob, "failed-5", ("empty.txt", b"")),
    }
    for what, response in failures.items():
        assert response.status_code in (404, 415, 422), (what, response.text)
    several = upload(bob, "failed-6", ("x.bin", b"\x00\x01 binary"), ("empty.txt", b""))
    assert several.status_code == 200 and several.json()["uploaded"] == [] and len(several.json()["failed"]) == 2

    assert chat_ids(bob) == before
    for n in range(1, 7):
        assert upload(alice, f"failed-{n}", NOTES).status_code == 200


def test_another_users_session_is_refused_as_a_session_of_ones_own_other_chat(bob, alices):
    """Session ids are one namespace (as chat ids are): one already used cannot start a new conversation, and
    whose it is makes no difference to the answer."""
    bob.post("/chat/", json={"message": "hello", "chat_id": "bobs-other", "session_id": "bobs-session"})
    own = bob.post("/chat/", json={"message": "hello", "chat_id": "bobs-asking", "session_id": "bobs-session"})
    theirs = bob.post("/chat/", json={"message": "hello", "chat_id": "bobs-asking", "session_id": alices["session"]})
    assert_error(theirs, 404, "NOT_FOUND")
    assert json.loads(theirs.text.replace(alices["session"], "bobs-session")) == own.json()


def test_a_deleted_chat_is_410_for_its_owner_and_404_for_everyone_else(alice, bob):
    chat = alice.post("/chats", json={"title": "Gone"}).json()["id"]
    assert upload(alice, chat, NOTES).status_code == 200
    assert alice.delete(f"/chats/{chat}").status_code == 200

    assert_error(upload(alice, chat, NOTES), 410, "CHAT_DELETED", chat_id=chat)
    assert_error(alice.post("/chat/", json={"message": "hello", "chat_id": chat}), 410, "CHAT_DELETED")
    taken = assert_error(upload(bob, chat, NOTES), 404, "NOT_FOUND", chat_id=chat)
    assert taken["message"] == f"Chat {chat} was not found."
    assert_error(bob.post("/chat/", json={"message": "hello", "chat_id": chat}), 404, "NOT_FOUND", chat_id=chat)
    assert chat not in chat_ids(alice) | chat_ids(bob)
    # Made again on purpose, by its owner only.
    assert_error(bob.post("/chats", json={"id": chat}), 404, "NOT_FOUND", chat_id=chat)
    assert alice.post("/chats", json={"id": chat, "title": "Back"}).status_code == 201
    assert upload(alice, chat, NOTES).status_code == 200
    assert_error(bob.post("/chats", json={"id": chat}), 404, "NOT_FOUND", chat_id=chat)


def test_a_chat_made_while_keys_were_off_is_nobodys_and_cannot_be_claimed(server, alice):
    server.services.ingestion.ingest("before-keys", *NOTES)  # as `axiom ingest` or an open server made it
    assert_error(alice.get("/chat/before-keys/documents"), 404, "NOT_FOUND")
    assert_error(upload(alice, "before-keys", NOTES), 404, "NOT_FOUND")
    assert_error(alice.post("/chat/", json={"message": "hello", "chat_id": "before-keys"}), 404, "NOT_FOUND")
    assert "before-keys" not in {chat["id"] for chat in alice.get("/chats").json()["chats"]}
    assert server.services.chats.get("before-keys") is None


@pytest.mark.slow
def test_generated_requests_with_a_key_are_answered_as_the_openapi_document_says(server, tmp_path):
    """schemathesis (as in test_openapi_contract.py, fewer examples) with a key: the declared 401s and the
    security scheme hold too (its ignored_auth check sends requests without the key). Its stateful phase is left
    to test_openapi_contract.py: it chains ids between operations regardless of users (a chat's id reused as a
    session elsewhere is a 404 by the sessions rule with keys off as well)."""
    key = server.services.users.create_key("schemathesis").key
    command = [
        str(Path(sys.executable).with_name("schemathesis")), "--config-file", str(CONTRACT_CONFIG), "run",
        f"{server.url}/openapi.json", "--max-examples", "10", "--seed", "10", "--workers", "1", "--no-color",
        "--phases", "examples,coverage,fuzzing", "-H", f"Authorization: Bearer {key}",
    ]
    run = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-30_000:] + run.stderr[-5_000:]
