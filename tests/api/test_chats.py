"""The chat list over HTTP: create, list, rename and delete chats, with real uploads, history and stores."""

from __future__ import annotations

import http.client
import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from sqlalchemy import event

from backend.ids import collection_name
from tests.api.server import serve
from tests.api.support import assert_error, upload, upload_paths
from tests.support.postgres import DATABASES
from tests.support.waiting import BACKGROUND_WAIT_SECONDS, wait_for

NOTES = ("notes.txt", b"The Quorra river is 412 kilometres long and flows into the Vellichor sea.")
OTHER_NOTES = ("other.txt", b"Ada Finchley built the granite bridge over the Quorra in 1931.")
PAPER = "academic_2col_naacl06-shinyama.pdf"  # ~100 chunks: its background job takes seconds to index
GREETING = "Hello!"


@pytest.fixture(scope="module", params=DATABASES)
def server(request, build_app_services, tmp_path_factory, new_database_url):
    """The whole service on each database engine in turn."""
    database_url = new_database_url(request.param)
    services = build_app_services(tmp_path_factory.mktemp("chats"), database_url=database_url)
    with serve(services) as running:
        yield running
    services.database.dispose()


def create(client: httpx.Client, **body) -> dict:
    response = client.post("/chats", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def listed(client: httpx.Client) -> list[dict]:
    response = client.get("/chats")
    assert response.status_code == 200, response.text
    return response.json()["chats"]


def listed_by_id(client: httpx.Client) -> dict[str, dict]:
    return {chat["id"]: chat for chat in listed(client)}


def greet(client: httpx.Client, chat_id: str) -> None:
    """A real question and answer in the chat's conversation, kept as the UI keeps it: session id = chat id."""
    response = client.post("/chat/", json={"message": GREETING, "chat_id": chat_id, "session_id": chat_id})
    assert response.status_code == 200, response.text


def history(client: httpx.Client, session_id: str) -> list[dict]:
    response = client.get(f"/chat/history/{session_id}")
    return response.json()["messages"] if response.status_code == 200 else []


def document_names(client: httpx.Client, chat_id: str) -> list[str]:
    return [document["name"] for document in client.get(f"/chat/{chat_id}/documents").json()["documents"]]


def test_a_chat_is_created_listed_renamed_and_deleted(client):
    named = create(client, title="  Tax questions  ")
    assert re.fullmatch(r"[0-9a-f]{32}", named["id"])
    assert named | {"created_at": 0, "updated_at": 0} == {
        "id": named["id"], "title": "Tax questions", "session_id": named["id"], "document_count": 0,
        "created_at": 0, "updated_at": 0,
    }
    assert named["created_at"] == named["updated_at"] > 0
    untitled = client.post("/chats")
    assert untitled.status_code == 201 and untitled.json()["title"] == "New chat"
    untitled = untitled.json()

    ids = [chat["id"] for chat in listed(client)]
    assert ids.index(untitled["id"]) < ids.index(named["id"])  # most recently updated first

    renamed = client.patch(f"/chats/{named['id']}", json={"title": "Taxes 2024"})
    assert renamed.status_code == 200
    assert renamed.json() == named | {"title": "Taxes 2024", "updated_at": renamed.json()["updated_at"]}
    assert renamed.json()["updated_at"] > named["updated_at"]
    assert listed(client)[0] == renamed.json()

    deleted = client.delete(f"/chats/{named['id']}")
    assert deleted.status_code == 200
    assert deleted.json() == {"id": named["id"], "deleted": True, "documents_deleted": 0, "messages_deleted": 0}
    assert named["id"] not in listed_by_id(client) and untitled["id"] in listed_by_id(client)
    assert_error(client.delete(f"/chats/{named['id']}"), 404, "NOT_FOUND", chat_id=named["id"])


def test_a_chat_known_only_by_its_documents_is_listed_and_can_be_renamed(client):
    assert upload(client, "uploads-only", NOTES).status_code == 200
    (document,) = client.get("/chat/uploads-only/documents").json()["documents"]

    listed_chat = listed_by_id(client)["uploads-only"]
    assert listed_chat == {
        "id": "uploads-only", "title": "uploads-only", "session_id": "uploads-only", "document_count": 1,
        "created_at": document["created_at"], "updated_at": document["created_at"],
    }

    renamed = client.patch("/chats/uploads-only", json={"title": "River notes"})
    assert renamed.status_code == 200
    body = renamed.json()
    assert body["title"] == "River notes" and body["document_count"] == 1
    assert body["created_at"] == document["created_at"] < body["updated_at"]
    assert [chat for chat in listed(client) if chat["id"] == "uploads-only"] == [body]
    assert document_names(client, "uploads-only") == [NOTES[0]]


def test_deleting_a_chat_removes_its_documents_and_history_and_nothing_of_another_chat(client, server):
    chat_id = create(client, title="Doomed")["id"]
    for chat in (chat_id, "bystander"):
        assert upload(client, chat, NOTES, OTHER_NOTES).status_code == 200
        greet(client, chat)
    bystander = {
        "documents": client.get("/chat/bystander/documents").json(),
        "history": history(client, "bystander"),
        "vectors": server.services.vectors.document_ids("bystander"),
        "keywords": server.services.keywords.document_ids("bystander"),
    }
    assert len(bystander["documents"]["documents"]) == 2 and len(bystander["history"]) == 2

    deleted = client.delete(f"/chats/{chat_id}")
    assert deleted.status_code == 200
    assert deleted.json() == {"id": chat_id, "deleted": True, "documents_deleted": 2, "messages_deleted": 2}

    assert_error(client.get(f"/chat/{chat_id}/documents"), 404, "NOT_FOUND", chat_id=chat_id)
    assert history(client, chat_id) == []
    assert server.services.vectors.document_ids(chat_id) == set()
    assert server.services.keywords.document_ids(chat_id) == set()
    assert chat_id not in listed_by_id(client)
    assert {
        "documents": client.get("/chat/bystander/documents").json(),
        "history": history(client, "bystander"),
        "vectors": server.services.vectors.document_ids("bystander"),
        "keywords": server.services.keywords.document_ids("bystander"),
    } == bystander
    assert listed_by_id(client)["bystander"]["document_count"] == 2


def test_a_deleted_chat_is_gone_from_every_route(client):
    chat_id = create(client, title="Short-lived")["id"]
    assert upload(client, chat_id, NOTES).status_code == 200
    (document,) = client.get(f"/chat/{chat_id}/documents").json()["documents"]
    greet(client, chat_id)
    assert client.delete(f"/chats/{chat_id}").status_code == 200

    assert_error(client.get(f"/chat/{chat_id}/documents"), 404, "NOT_FOUND", chat_id=chat_id)
    assert_error(client.get(f"/chat/{chat_id}/documents/{document['id']}"), 404, "NOT_FOUND")
    assert_error(client.get(f"/chat/history/{chat_id}"), 404, "NOT_FOUND", session_id=chat_id)
    assert_error(client.patch(f"/chats/{chat_id}", json={"title": "Back"}), 404, "NOT_FOUND", chat_id=chat_id)
    assert_error(client.delete(f"/chats/{chat_id}"), 404, "NOT_FOUND", chat_id=chat_id)


def stale_tab_requests(chat_id: str) -> dict[str, dict]:
    """What a browser tab that still shows a deleted chat (or any client holding its id) can send to it."""
    question = {"message": GREETING, "session_id": chat_id}
    completion = {"model": "axiom", "messages": [{"role": "user", "content": GREETING}]}
    return {
        "upload": {"method": "POST", "url": f"/chat/{chat_id}/documents", "files": [("files", OTHER_NOTES)]},
        "background upload": {"method": "POST", "url": f"/chat/{chat_id}/documents?background=true",
                              "files": [("files", OTHER_NOTES)]},
        "question": {"method": "POST", "url": "/chat/", "json": {**question, "chat_id": chat_id}},
        "new conversation": {"method": "POST", "url": "/chat/", "json": {"message": GREETING, "chat_id": chat_id}},
        "stream": {"method": "POST", "url": f"/chat/{chat_id}/stream", "json": question},
        "legacy stream": {"method": "POST", "url": "/chat/stream",
                          "json": {**question, "collection_name": f"chat_{chat_id}"}},
        "completion": {"method": "POST", "url": "/v1/chat/completions", "json": completion,
                       "headers": {"X-Axiom-Chat-Id": chat_id}},
    }


def test_an_upload_or_a_question_from_a_stale_tab_does_not_make_a_deleted_chat_again(client, server):
    """Deleted in one tab, then a file dropped (or a question asked) in another that still shows it: a 410 that
    names the chat, and nothing of the request is kept, instead of a chat holding only the new file."""
    chat_id = create(client, title="Tax returns")["id"]
    assert upload(client, chat_id, NOTES).status_code == 200
    greet(client, chat_id)
    assert client.delete(f"/chats/{chat_id}").status_code == 200

    for what, request in stale_tab_requests(chat_id).items():
        refused = assert_error(client.request(**request), 410, "CHAT_DELETED", chat_id=chat_id)
        assert "“Tax returns” was deleted" in refused["message"], what

    services = server.services
    assert chat_id not in listed_by_id(client)
    assert_error(client.get(f"/chat/{chat_id}/documents"), 404, "NOT_FOUND", chat_id=chat_id)
    assert history(client, chat_id) == []
    assert services.documents.list(chat_id) == [] and services.jobs.unfinished(chat_id) == []
    assert services.chats.get(chat_id) is None
    assert services.memory.chat_of(chat_id) == chat_id  # its session stays the deleted chat's, for no other to take
    assert not services.vectors.has_collection(chat_id)


def test_a_chat_deleted_without_a_name_is_not_made_again_either(client):
    """A chat that existed only through its documents (no record to remove) is remembered as deleted too."""
    assert upload(client, "unnamed-gone", NOTES).status_code == 200
    assert client.delete("/chats/unnamed-gone").status_code == 200

    refused = assert_error(upload(client, "unnamed-gone", OTHER_NOTES), 410, "CHAT_DELETED", chat_id="unnamed-gone")
    assert "Chat unnamed-gone was deleted" in refused["message"]
    assert "unnamed-gone" not in listed_by_id(client)


def test_a_fresh_id_is_still_made_a_chat_by_its_first_upload_or_question(client):
    assert upload(client, "fresh-upload", NOTES).status_code == 200
    assert document_names(client, "fresh-upload") == [NOTES[0]]
    greet(client, "fresh-question")
    assert client.get("/chat/fresh-question/documents").status_code == 200


def test_a_question_naming_no_chat_makes_the_deleted_default_chat_again(client):
    """The default chat is the one a client that names no chat uses: it cannot pick another, so its question
    makes it again (one that names the deleted default chat is refused like any other)."""
    asked = client.post("/chat/", json={"message": GREETING})
    assert asked.status_code == 200, asked.text
    assert client.delete("/chats/default").status_code == 200
    assert_error(client.post("/chat/", json={"message": GREETING, "chat_id": "default"}), 410, "CHAT_DELETED")

    again = client.post("/chat/", json={"message": GREETING})
    assert again.status_code == 200, again.text
    assert len(history(client, again.json()["session_id"])) == 2
    assert upload(client, "default", NOTES).status_code == 200


def test_a_deleted_chats_id_is_used_again_by_creating_the_chat_under_it(client):
    """A client that keeps its chats under ids of its own (say a script that starts "demo" over) makes the chat
    again on purpose; then uploads and questions go in as before."""
    assert upload(client, "started-over", NOTES).status_code == 200
    assert client.delete("/chats/started-over").status_code == 200

    made = client.post("/chats", json={"id": "started-over", "title": "Second go"})
    assert made.status_code == 201, made.text
    assert made.json() | {"created_at": 0, "updated_at": 0} == {
        "id": "started-over", "title": "Second go", "session_id": "started-over", "document_count": 0,
        "created_at": 0, "updated_at": 0,
    }
    assert upload(client, "started-over", OTHER_NOTES).status_code == 200
    assert document_names(client, "started-over") == [OTHER_NOTES[0]]
    greet(client, "started-over")
    assert listed_by_id(client)["started-over"]["title"] == "Second go"


def test_a_chat_is_not_created_under_the_id_of_one_that_exists(client):
    named = create(client, title="Named")["id"]
    assert upload(client, "with-documents", NOTES).status_code == 200
    greet(client, "with-a-conversation")
    for chat_id in (named, "with-documents", "with-a-conversation"):
        assert_error(client.post("/chats", json={"id": chat_id}), 409, "CONFLICT", chat_id=chat_id)
    assert listed_by_id(client)[named]["title"] == "Named"
    assert document_names(client, "with-documents") == [NOTES[0]]
    assert_error(client.post("/chats", json={"id": "not an id"}), 400, "VALIDATION_ERROR", field="id")


def test_a_deleted_chat_that_axiom_ingest_filled_again_takes_uploads(client, server):
    """`axiom ingest --chat` (the stores directly, as an operator) may put documents in a deleted chat's id on
    purpose: it is a chat again, and the API treats it as one."""
    assert upload(client, "refilled", NOTES).status_code == 200
    assert client.delete("/chats/refilled").status_code == 200
    server.services.chats.forget_deletion("refilled")  # what `axiom ingest` does first
    server.services.ingestion.ingest("refilled", *NOTES)

    assert upload(client, "refilled", OTHER_NOTES).status_code == 200
    assert sorted(document_names(client, "refilled")) == sorted([NOTES[0], OTHER_NOTES[0]])
    greet(client, "refilled")


def test_a_chat_exists_once_something_is_uploaded_or_asked_in_it(client):
    assert_error(client.get("/chat/never-used/documents"), 404, "NOT_FOUND", chat_id="never-used")
    greet(client, "asked-only")
    assert client.get("/chat/asked-only/documents").json() == {"chat_id": "asked-only", "documents": [], "jobs": []}
    named = create(client, title="Empty")["id"]
    assert client.get(f"/chat/{named}/documents").json()["documents"] == []


def test_a_chat_with_only_a_conversation_can_be_deleted(client):
    greet(client, "talk-only")
    assert "talk-only" not in listed_by_id(client)  # listed are chats with a name or documents

    deleted = client.delete("/chats/talk-only")
    assert deleted.status_code == 200 and deleted.json()["messages_deleted"] == 2
    assert history(client, "talk-only") == []


def test_deleting_a_chat_cancels_its_background_jobs_and_leaves_nothing_behind(client, server, pdfs):
    chat_id = create(client, title="Papers")["id"]
    assert upload(client, chat_id, NOTES).status_code == 200
    server.services.memory.add(chat_id, "user", "What do the papers say?")
    queued = upload_paths(client, chat_id, pdfs / PAPER, background="true")
    assert queued.status_code == 202
    (job,) = queued.json()["jobs"]

    deleted = client.delete(f"/chats/{chat_id}")
    assert deleted.status_code == 200
    # The job was cancelled (1 document deleted), or, on a fast machine, had already finished (2).
    assert deleted.json()["documents_deleted"] in (1, 2) and deleted.json()["messages_deleted"] == 1
    assert_error(client.get(f"/chat/{chat_id}/documents"), 404, "NOT_FOUND", chat_id=chat_id)
    assert_error(client.get(f"/chat/{chat_id}/documents/{job['id']}"), 404, "NOT_FOUND")
    services = server.services
    assert services.documents.list(chat_id) == [] and services.documents.incomplete() == []
    # The chat's vector collection and keyword index are gone, not left empty.
    assert not services.vectors.has_collection(chat_id)
    assert not (services.settings.bm25_dir / f"{collection_name(chat_id)}.jsonl").exists()


@pytest.mark.parametrize(
    "title",
    ["", "   ", "x" * 101, " " + "y" * 101 + " ", "a\u0000b", "Tax\nreturns", "Tax\treturns", "\u0007",
     "Tax\u2028returns", "Tax\u2029returns"],  # Unicode's line and paragraph separators break lines too
)
def test_a_blank_too_long_or_control_character_title_is_refused(client, title):
    before = listed(client)
    assert_error(client.post("/chats", json={"title": title}), 400, "VALIDATION_ERROR", field="title")
    assert upload(client, "titled", NOTES).status_code == 200
    assert_error(client.patch("/chats/titled", json={"title": title}), 400, "VALIDATION_ERROR", field="title")
    assert listed_by_id(client)["titled"]["title"] == "titled"
    assert [chat for chat in listed(client) if chat["id"] != "titled"] == [
        chat for chat in before if chat["id"] != "titled"
    ]


def test_a_title_of_exactly_the_limit_is_accepted(client):
    assert create(client, title=" " + "z" * 100 + " ")["title"] == "z" * 100


def test_a_title_in_any_script_with_a_trailing_line_break_is_trimmed_and_kept(client):
    assert create(client, title="  Налоги — 税金 ✓\n")["title"] == "Налоги — 税金 ✓"


def test_a_refused_title_says_why_in_words(client):
    body = assert_error(client.post("/chats", json={"title": "a\nb"}), 400, "VALIDATION_ERROR", field="title")
    assert "one line" in body["message"] and "control characters" in body["message"]


def test_a_rename_without_a_title_is_refused(client):
    chat_id = create(client)["id"]
    assert_error(client.patch(f"/chats/{chat_id}", json={}), 400, "VALIDATION_ERROR", field="title")


@pytest.mark.parametrize("method", ["PATCH", "DELETE"])
def test_a_malformed_chat_id_is_refused(client, method):
    response = client.request(method, "/chats/bad.id", json={"title": "t"} if method == "PATCH" else None)
    assert_error(response, 400, "VALIDATION_ERROR", field="chat_id")


@pytest.mark.parametrize("method", ["PATCH", "DELETE"])
def test_an_unknown_chat_is_404(client, method):
    response = client.request(method, "/chats/nobody-here", json={"title": "t"} if method == "PATCH" else None)
    assert_error(response, 404, "NOT_FOUND", chat_id="nobody-here")
    assert "nobody-here" not in listed_by_id(client)


def test_the_chat_with_the_newest_message_comes_first(client):
    older, newer = create(client, title="Older"), create(client, title="Newer")
    assert [c["id"] for c in listed(client)].index(newer["id"]) < [c["id"] for c in listed(client)].index(older["id"])

    greet(client, older["id"])
    chats = listed(client)
    assert chats[0]["id"] == older["id"]
    assert chats[0]["updated_at"] > older["updated_at"]


def test_a_question_refused_for_its_session_leaves_the_deleted_default_chat_deleted(client):
    """Only a question that is answered makes the deleted default chat again: one refused (its session is
    another chat's) does not, so an upload to the default chat's id is still the 410 of a deleted chat."""
    assert client.post("/chat/", json={"message": GREETING}).status_code == 200
    assert client.delete("/chats/default").status_code == 200
    greet(client, "session-owner")

    refused = client.post("/chat/", json={"message": GREETING, "session_id": "session-owner"})
    assert_error(refused, 404, "NOT_FOUND", session_id="session-owner")
    assert_error(upload(client, "default", NOTES), 410, "CHAT_DELETED", chat_id="default")

    assert client.post("/chat/", json={"message": GREETING}).status_code == 200  # made again on purpose


def test_a_chat_is_not_created_under_the_id_of_another_chats_session(client):
    """The web UI asks in the session of its chat's id: a chat made under another chat's session id could
    never be asked in."""
    asked = client.post("/chat/", json={"message": GREETING, "chat_id": "asker", "session_id": "asker-side"})
    assert asked.status_code == 200, asked.text

    assert_error(client.post("/chats", json={"id": "asker-side"}), 409, "CONFLICT", chat_id="asker-side")
    assert "asker-side" not in listed_by_id(client)


@pytest.mark.parametrize("route", ["upload", "/chat/", "stream", "openai"])
def test_an_upload_or_a_question_does_not_make_a_chat_under_the_id_of_another_chats_session(client, server, route):
    """An upload made the chat, listed with the other chat's conversation as its own (its session_id): the web UI
    showed that conversation in it, and could not ask there (404)."""
    asked = client.post("/chat/", json={"message": GREETING, "chat_id": "asker2", "session_id": "asker2-side"})
    assert asked.status_code == 200, asked.text
    before = history(client, "asker2-side")

    question = {"message": GREETING}
    refused = {
        "upload": lambda: upload(client, "asker2-side", NOTES),
        "/chat/": lambda: client.post("/chat/", json={**question, "chat_id": "asker2-side"}),
        "stream": lambda: client.post("/chat/asker2-side/stream", json=question),
        "openai": lambda: client.post("/v1/chat/completions", headers={"X-Axiom-Chat-Id": "asker2-side"}, json={
            "model": "axiom", "messages": [{"role": "user", "content": GREETING}]}),
    }[route]()
    body = assert_error(refused, 409, "CONFLICT", chat_id="asker2-side")
    assert "conversation in another chat" in body["message"]
    assert "asker2-side" not in listed_by_id(client)
    assert server.services.documents.list("asker2-side") == []
    assert not server.services.memory.has_conversation("asker2-side")
    assert history(client, "asker2-side") == before


def test_a_file_still_being_read_when_its_chat_is_deleted_is_refused(client, server):
    """The upload passes the deleted-chat check before its body is read; the chat is deleted while the body
    is still arriving (sent in two parts, the second after the deletion), so only the check made when the
    file goes in (``Chats.claim``) can refuse it."""
    chat = create(client, title="Deleted mid-upload")["id"]
    boundary = "axiomtestboundary"
    body = (
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{NOTES[0]}\"\r\n"
        f"Content-Type: text/plain\r\n\r\n"
    ).encode() + NOTES[1] + f"\r\n--{boundary}--\r\n".encode()
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=600)
    try:
        connection.putrequest("POST", f"/chat/{chat}/documents")
        connection.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
        connection.putheader("Content-Length", str(len(body)))
        connection.endheaders()
        connection.send(body[:40])
        # The route has started (the chat's check passed) once the first part is in; a moment's margin for it.
        time.sleep(0.5)
        assert client.delete(f"/chats/{chat}").status_code == 200
        connection.send(body[40:])
        response = connection.getresponse()
        status, answer = response.status, json.loads(response.read())
    finally:
        connection.close()

    assert (status, answer["error"], answer["details"]) == (410, "CHAT_DELETED", {"chat_id": chat})
    assert_error(client.get(f"/chat/{chat}/documents"), 404, "NOT_FOUND")
    assert chat not in listed_by_id(client)


def test_a_file_being_stored_when_its_chat_is_deleted_is_refused_and_leaves_nothing(client, server, monkeypatch):
    """The upload has passed every check and its file is being embedded when the chat is deleted: storing it is
    refused (410), so nothing of it stays in the deleted chat, nor turns up in a chat made later under its id."""
    chat = create(client, title="Deleted mid-store")["id"]
    services = server.services
    embedding, release = threading.Event(), threading.Event()
    embed = services.ingestion._embedder.embed_documents

    def held(texts):  # a stand-in for a long file's embedding: it lasts until the deletion has begun
        embedding.set()
        release.wait(BACKGROUND_WAIT_SECONDS)
        return embed(texts)

    monkeypatch.setattr(services.ingestion._embedder, "embed_documents", held)
    with ThreadPoolExecutor(2) as pool:
        uploading = pool.submit(upload, client, chat, NOTES)
        assert embedding.wait(BACKGROUND_WAIT_SECONDS)
        deleting = pool.submit(client.delete, f"/chats/{chat}")
        wait_for(lambda: services.chats.deleted(chat), "the chat's deletion to be noted")
        release.set()
        uploaded, deleted = uploading.result(), deleting.result()

    body = assert_error(uploaded, 410, "CHAT_DELETED", chat_id=chat)
    assert "“Deleted mid-store” was deleted while “notes.txt” was being stored" in body["message"]
    assert deleted.status_code == 200 and deleted.json()["documents_deleted"] == 0
    assert services.documents.list(chat) == [] and services.documents.incomplete() == []
    assert not services.vectors.has_collection(chat)
    assert not (services.settings.bm25_dir / f"{collection_name(chat)}.jsonl").exists()
    create(client, id=chat)
    assert document_names(client, chat) == []


def test_a_background_job_queued_just_after_its_chat_was_deleted_ends_with_chat_deleted(
    client, server, monkeypatch
):
    """An upload claims its chat, the chat is deleted (cancelling the jobs it had: none yet), then the upload
    queues its job: the job's storing is refused, so it ends failed with CHAT_DELETED and keeps nothing."""
    chat = create(client, title="Deleted before its job ran")["id"]
    services = server.services
    claimed, release = threading.Event(), threading.Event()
    ingest_many = services.ingestion.ingest_many

    def held(chat_id, files, progress=None):  # a stand-in for a slow moment between the claim and the queueing
        claimed.set()
        release.wait(BACKGROUND_WAIT_SECONDS)
        return ingest_many(chat_id, files, progress)

    monkeypatch.setattr(services.ingestion, "ingest_many", held)
    with ThreadPoolExecutor(1) as pool:
        uploading = pool.submit(upload, client, chat, NOTES, background="true")
        assert claimed.wait(BACKGROUND_WAIT_SECONDS)
        assert client.delete(f"/chats/{chat}").status_code == 200
        release.set()
        queued = uploading.result()
    assert queued.status_code == 202, queued.text
    (job,) = queued.json()["jobs"]

    ended = wait_for(
        lambda: (record := services.jobs.get(chat, job["id"])) and record.state not in ("queued", "indexing")
        and record, "the job to end",
    )
    assert (ended.state, ended.error["error"], ended.error["details"]) == ("failed", "CHAT_DELETED", {"chat_id": chat})
    assert services.documents.list(chat) == [] and services.documents.incomplete() == []
    assert not services.vectors.has_collection(chat)
    assert_error(upload(client, chat, NOTES), 410, "CHAT_DELETED", chat_id=chat)  # still deleted


def test_deleting_a_chat_notes_its_deletion_once(client, server):
    chat = create(client, title="Noted once")["id"]
    notes: list[str] = []

    def record(_connection, _cursor, statement, *_args) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO DELETED_CHATS"):
            notes.append(statement)

    event.listen(server.services.database, "before_cursor_execute", record)
    try:
        assert client.delete(f"/chats/{chat}").status_code == 200
    finally:
        event.remove(server.services.database, "before_cursor_execute", record)

    assert len(notes) == 1
    assert server.services.chats.deleted(chat).title == "Noted once"
