"""Asking over HTTP with the real bundled model: the JSON answer, the SSE protocol, history, the error contract."""

from __future__ import annotations

import httpx
import pytest
from httpx_sse import connect_sse

from tests.api.server import serve
from tests.api.support import assert_error, stream_events, upload_paths

PAPER = "academic_2col_naacl06-shinyama.pdf"
QUESTION = "What is preemptive information extraction?"


@pytest.fixture(scope="module")
def server(build_app_services, tmp_path_factory, pdfs):
    with serve(build_app_services(tmp_path_factory.mktemp("chat"))) as running:
        with httpx.Client(base_url=running.url, timeout=300) as client:
            assert upload_paths(client, "paper", pdfs / PAPER).status_code == 200
        yield running


def assert_sources_from_the_paper(sources: list[dict]) -> None:
    assert sources
    for source in sources:
        assert source["filename"] == PAPER and 1 <= source["page"] <= 8 and source["content_preview"]
        assert 0 < source["relevance_score"] <= 1 and source["chunk_id"]


def test_chat_answers_from_the_chats_paper_with_sources(client):
    response = client.post("/chat/", json={"message": QUESTION, "chat_id": "paper", "session_id": "json-session"})
    assert response.status_code == 200
    body = response.json()
    assert body["session_id"] == "json-session" and body["answer"].strip()
    assert body["intent"] == "question" and body["iterations"] >= 1 and body["processing_time_ms"] > 0
    assert body["answer_kind"] in ("generated", "extractive") and 0 <= body["confidence"] <= 1
    assert_sources_from_the_paper(body["sources"])

    history = client.get("/chat/history/json-session").json()["messages"]
    assert [(m["role"], m["content"]) for m in history] == [("user", QUESTION), ("assistant", body["answer"])]
    assert history[1]["id"] == body["message_id"]


def test_the_stream_sends_sources_and_evidence_first_then_tokens_then_done(client):
    with connect_sse(client, "POST", "/chat/paper/stream", json={"message": QUESTION}) as source:
        headers = source.response.headers
        events = [(sse.event, sse.json()) for sse in source.iter_sse()]
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["cache-control"] == "no-cache" and headers["x-accel-buffering"] == "no"

    names = [name for name, _ in events]
    assert names[0] == "status" and names[-1] == "done"
    assert "token" in names and set(names) <= {"status", "sources", "evidence", "token", "retry", "done"}
    # Evidence first: the passages found and the best quotes come before the model writes anything.
    assert names.index("sources") < names.index("evidence") < names.index("token")
    assert all(data["type"] == name for name, data in events)

    sources, evidence, done = (next(data for name, data in events if name == kind)
                               for kind in ("sources", "evidence", "done"))
    assert_sources_from_the_paper(sources["sources"])
    assert "[Source " in evidence["text"] and "“" in evidence["text"]
    assert set(done) == {
        "type", "is_grounded", "iterations", "query_complexity", "is_summarization", "answer_kind", "answer",
        "evidence_reason", "sources", "message_id", "session_id",
    }
    # done alone is enough for a client: the final text, its kind and the sources it cites.
    assert done["answer_kind"] in {"generated", "extractive"}
    if done["sources"]:
        assert_sources_from_the_paper(done["sources"])
    assert done["answer"].strip() and done["iterations"] >= 1 and done["is_summarization"] is False
    # The history keeps the final answer (with any citations added after streaming), under the done message id.
    (_, stored) = client.get(f"/chat/history/{done['session_id']}").json()["messages"]
    assert stored["id"] == done["message_id"] and stored["content"] == done["answer"]


def test_the_legacy_stream_takes_the_collection_name(client):
    events = stream_events(client, "/chat/stream", {"message": "hi", "collection_name": "chat_paper"})
    assert [name for name, _ in events] == ["token", "done"]  # a greeting: no search, so no sources
    assert events[-1][1]["answer_kind"] == "fixed" and events[-1][1]["answer"] and events[-1][1]["sources"] == []
    response = client.post("/chat/stream", json={"message": "hi", "collection_name": "paper"})
    assert_error(response, 400, "VALIDATION_ERROR", field="collection_name")
    response = client.post("/chat/stream", json={"message": "hi", "collection_name": "chat_../x"})
    assert_error(response, 400, "VALIDATION_ERROR", field="collection_name")


def test_history_is_read_and_cleared_per_session(client):
    for message in ("hi", "thank you"):
        assert client.post("/chat/", json={"message": message, "session_id": "greetings"}).status_code == 200
    messages = client.get("/chat/history/greetings").json()["messages"]
    assert [(m["role"], m["content"]) for m in messages if m["role"] == "user"] == [("user", "hi"),
                                                                                  ("user", "thank you")]
    assert len(messages) == 4 and all(m["timestamp"].endswith("Z") for m in messages)

    assert client.delete("/chat/history/greetings").json() == {"session_id": "greetings", "deleted": 4}
    assert_error(client.get("/chat/history/greetings"), 404, "NOT_FOUND", session_id="greetings")
    assert_error(client.delete("/chat/history/greetings"), 404, "NOT_FOUND", session_id="greetings")


@pytest.mark.parametrize("message", ["", "   \n\t ", "x" * 2001])
@pytest.mark.parametrize("path", ["/chat/", "/chat/paper/stream"])
def test_a_blank_or_too_long_message_is_400(client, path, message):
    assert_error(client.post(path, json={"message": message}), 400, "VALIDATION_ERROR", field="message")


def test_a_message_of_exactly_the_limit_is_accepted(client):
    response = client.post("/chat/", json={"message": "Hello! " + "a" * 1993, "session_id": "long-message"})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [("/chat/", {"message": "Hi", "chat_id": "../other"}, "chat_id"),
     ("/chat/", {"message": "Hi", "session_id": "a b"}, "session_id"),
     ("/chat/bad.id/stream", {"message": "Hi"}, "chat_id"),
     ("/chat/paper/stream", {"message": "Hi", "session_id": "x" * 64}, "session_id"),
     ("/chat/", {}, "message"),
     ("/chat/", {"message": 42}, "message"),
     ("/chat/", {"message": "Hi", "chat_id": ["paper"]}, "chat_id")],
)
def test_bad_ids_and_bad_bodies_are_400(client, path, body, field):
    assert_error(client.post(path, json=body), 400, "VALIDATION_ERROR", field=field)


def test_a_body_that_is_not_json_is_400(client):
    response = client.post("/chat/", content=b"{not json", headers={"content-type": "application/json"})
    assert_error(response, 400, "VALIDATION_ERROR")


@pytest.mark.parametrize("path", ["/chat/history/bad.session", "/chat/history/-"])
def test_a_malformed_session_id_is_400(client, path):
    assert_error(client.get(path), 400, "VALIDATION_ERROR", field="session_id")


def test_unknown_routes_and_methods_answer_in_the_contract(client):
    assert_error(client.get("/no/such/route"), 404, "NOT_FOUND")
    assert_error(client.put("/health"), 405, "METHOD_NOT_ALLOWED")
    assert_error(client.get("/chat/"), 405, "METHOD_NOT_ALLOWED")


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [("PUT", "/health", ["GET", "HEAD"]),
     ("OPTIONS", "/chats", ["GET", "HEAD", "POST"]),
     ("PUT", "/chats/some-chat", ["DELETE", "PATCH"]),
     ("OPTIONS", "/chat/some-chat/documents", ["GET", "HEAD", "POST"]),
     ("PATCH", "/chat/some-chat/documents/some-doc", ["DELETE", "GET", "HEAD"]),
     ("POST", "/chat/history/some-session", ["DELETE", "GET", "HEAD"]),
     ("DELETE", "/assets/app.js", ["GET", "HEAD"])],
)
def test_a_wrong_method_is_405_with_every_method_of_its_path_in_allow(client, method, path, allowed):
    """OPTIONS included: there is no CORS to serve (the web UI comes from the same origin)."""
    body = assert_error(client.request(method, path), 405, "METHOD_NOT_ALLOWED", allowed=allowed)
    assert client.request(method, path).headers["allow"] == ", ".join(allowed)
    assert body["message"] == f"{method} is not allowed on {path}; allowed: {', '.join(allowed)}."


@pytest.mark.parametrize("path", ["/health", "/chats", "/v1/models", "/", "/openapi.json", "/chat/nowhere/documents"])
def test_head_answers_with_the_headers_of_get_and_no_body(client, path):
    """Monitors and `curl -I` check a service with HEAD: it was a 405 on every API route."""
    get, head = client.get(path), client.head(path)
    assert head.status_code == get.status_code
    assert head.headers["content-type"] == get.headers["content-type"]
    assert head.content == b""


def test_health_and_the_openapi_document(client):
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["documents"] == 1 and health["chunks"] > 20
    assert health["llm"].startswith("llamacpp:") and health["vector_store"] == "chroma-embedded"
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/chat/", "/chat/{chat_id}/stream", "/chat/stream", "/chat/history/{session_id}",
            "/chat/{chat_id}/documents", "/chat/{chat_id}/documents/{doc_id}", "/health", "/v1/models",
            "/v1/chat/completions"} <= set(paths)
    assert client.get("/docs").status_code == 200


def test_a_follow_up_to_an_answer_stored_before_page_labels_keeps_its_sources(server, client):
    """An answer saved by the release before page labels (its sources name pages by number only): reworking it
    ("make that shorter") answers 200 with those sources, each page read as "Page N"."""
    memory = server.services.memory
    memory.bind("before-labels", "paper")
    paper_id = server.services.documents.list("paper")[0].document_id
    old_source = {
        "document_id": paper_id, "filename": PAPER, "page": 2, "pages": [2], "chunk_id": f"{paper_id}-p0-c0",
        "relevance_score": 0.5, "content_preview": "Preemptive IE …", "source_numbers": [1], "ocr": False,
        "passages": [{"source_number": 1, "parent_id": f"{paper_id}-p0", "page": 2, "excerpt": "Preemptive IE …",
                      "ocr": False}],
    }
    memory.add_exchange("before-labels", QUESTION, "Preemptive IE finds relations before they are asked for "
                        "[Source 1].", {"sources": [old_source], "is_grounded": True, "groundedness_score": 1.0})

    response = client.post("/chat/", json={"message": "make that shorter", "chat_id": "paper",
                                           "session_id": "before-labels"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["answer_kind"] == "transformed", body
    (source,) = body["sources"]
    assert source["page_label"] == "Page 2" and source["page_labels"] == ["Page 2"]
    assert source["passages"][0]["page_label"] == "Page 2"
