"""Uploading, listing, polling and deleting a chat's documents over HTTP, with real files and real stores."""

from __future__ import annotations

import http.client
import io
import json
import socket

import httpx
import openpyxl
import pytest

from backend.api.settings import ApiSettings
from backend.stores.documents import new_record
from tests.api.server import serve
from tests.api.support import assert_error, upload, upload_paths
from tests.support.postgres import DATABASES
from tests.support.waiting import BACKGROUND_WAIT_SECONDS, wait_for

LIMIT_BYTES = 256 * 1024  # the academic_2col_dpr paper (383 KB) is over it, the shinyama paper (193 KB) under
BACKGROUND_CHARS = 20_000  # so the shinyama paper (8 pages, 29,790 characters) is indexed as a background job
MAX_FILES = 4
PAPER = "academic_2col_naacl06-shinyama.pdf"
TOO_LARGE_PAPER = "academic_2col_dpr_2004.04906.pdf"

# Every unreadable shared PDF, with the reason the loaders give.
UNREADABLE = {
    "encrypted_aes256_userpw_foo.pdf": "encrypted",
    "encrypted_rc4-128_userpw_foo.pdf": "encrypted",
    "encrypted_userpw_openpassword.pdf": "encrypted",
    "malformed_empty_0_bytes.pdf": "empty",
    "malformed_header_and_eof_only.pdf": "corrupt",
    "nonenglish_ja_jo.pdf": "no_text",
}


@pytest.fixture(scope="module", params=DATABASES)
def server(request, build_app_services, tmp_path_factory, new_database_url):
    """The whole service on each database engine in turn."""
    services = build_app_services(
        tmp_path_factory.mktemp("documents"), max_upload_bytes=LIMIT_BYTES,
        database_url=new_database_url(request.param),
    )
    limits = ApiSettings(
        background_ingest_chars=BACKGROUND_CHARS, max_files_per_upload=MAX_FILES,
        inline_read_seconds=BACKGROUND_WAIT_SECONDS,  # a busy machine's slow read must not make a job of a note
    )
    with serve(services, limits) as running:
        yield running
    services.database.dispose()


def poll_until_finished(client: httpx.Client, chat_id: str, job_id: str) -> tuple[dict, list[int]]:
    """The job's final state, and every percent seen on the way."""
    seen: list[int] = []

    def finished():
        state = client.get(f"/chat/{chat_id}/documents/{job_id}").json()
        seen.append(state["percent"])
        return state if state["status"] in ("ready", "failed") else None

    return wait_for(finished, f"job {job_id}"), seen


def test_a_large_pdf_is_indexed_in_the_background_and_reports_progress(client, server, pdfs):
    response = upload_paths(client, "papers", pdfs / PAPER)
    assert response.status_code == 202
    body = response.json()
    assert body["uploaded"] == [] and body["failed"] == []
    (job,) = body["jobs"]
    assert job["name"] == PAPER and job["status"] in ("queued", "indexing") and job["document_id"] is None

    state, percents = poll_until_finished(client, "papers", job["id"])
    assert state["status"] == "ready" and state["percent"] == 100 and state["error"] is None
    assert state["page_count"] == 8 and state["chunk_count"] > 20
    assert percents == sorted(percents) and all(0 <= p <= 100 for p in percents)

    listed = client.get("/chat/papers/documents").json()
    assert [d["id"] for d in listed["documents"]] == [state["document_id"]]
    assert listed["documents"][0] | {"created_at": 0} == {
        "id": state["document_id"], "name": PAPER, "file_type": "pdf", "size_bytes": (pdfs / PAPER).stat().st_size,
        "page_count": 8, "chunk_count": state["chunk_count"], "created_at": 0,
    }
    assert listed["jobs"] == []
    by_document_id = client.get(f"/chat/papers/documents/{state['document_id']}").json()
    assert by_document_id["status"] == "ready" and by_document_id["document_id"] == state["document_id"]
    assert server.services.vectors.document_ids("papers") == {state["document_id"]}


def test_a_background_job_that_fails_reports_the_error(client, pdfs):
    # Asked to be a background job, and password-protected.
    response = upload_paths(client, "locked", pdfs / "encrypted_userpw_openpassword.pdf", background="true")
    assert response.status_code == 202
    state, _ = poll_until_finished(client, "locked", response.json()["jobs"][0]["id"])
    assert state["status"] == "failed" and state["document_id"] is None
    assert state["error"]["error"] == "UNREADABLE_DOCUMENT" and state["error"]["details"]["reason"] == "encrypted"
    # Its only file failed: the chat has nothing, so it does not exist (docs/api.md, Chats).
    assert_error(client.get("/chat/locked/documents"), 404, "NOT_FOUND", chat_id="locked")


def test_a_failed_job_is_dismissed_by_its_delete(client):
    response = upload(client, "dismissed", ("empty.txt", b""), background="true")
    job_id = response.json()["jobs"][0]["id"]
    state, _ = poll_until_finished(client, "dismissed", job_id)
    assert state["status"] == "failed"

    deleted = client.delete(f"/chat/dismissed/documents/{job_id}")
    assert deleted.status_code == 200 and deleted.json() == {"id": job_id, "deleted": True}
    assert_error(client.get(f"/chat/dismissed/documents/{job_id}"), 404, "NOT_FOUND", doc_id=job_id)
    assert_error(client.delete(f"/chat/dismissed/documents/{job_id}"), 404, "NOT_FOUND", doc_id=job_id)


def test_a_cancelled_job_is_dismissed_by_a_second_delete(client, server):
    response = upload(client, "dismissed-late", ("late.md", b"# Late\n\nA note deleted twice."), background="true")
    job_id = response.json()["jobs"][0]["id"]
    poll_until_finished(client, "dismissed-late", job_id)
    assert client.delete(f"/chat/dismissed-late/documents/{job_id}").status_code == 200
    assert client.get(f"/chat/dismissed-late/documents/{job_id}").json()["status"] == "cancelled"

    assert client.delete(f"/chat/dismissed-late/documents/{job_id}").status_code == 200
    assert_error(client.get(f"/chat/dismissed-late/documents/{job_id}"), 404, "NOT_FOUND", doc_id=job_id)


def test_a_dismissed_job_whose_last_try_awaits_the_vector_store_is_gone(client, server):
    response = upload(client, "dismissed-discarded", ("empty.txt", b""), background="true")
    job_id = response.json()["jobs"][0]["id"]
    assert poll_until_finished(client, "dismissed-discarded", job_id)[0]["status"] == "failed"
    # What a job's last try half-stored while Chroma was unreachable stays as a 'discarded' row under the job's id
    # until the sweep purges it (IngestionService.discard): written here directly, as no outage can be made.
    documents = server.services.documents
    documents.begin(new_record(
        document_id=job_id, chat_id="dismissed-discarded", filename="empty.txt", sha256="0" * 64,
        file_type="txt", size_bytes=0, page_count=0,
    ))
    assert documents.discard(job_id)

    assert client.delete(f"/chat/dismissed-discarded/documents/{job_id}").status_code == 200
    assert_error(client.get(f"/chat/dismissed-discarded/documents/{job_id}"), 404, "NOT_FOUND", doc_id=job_id)
    assert_error(client.delete(f"/chat/dismissed-discarded/documents/{job_id}"), 404, "NOT_FOUND", doc_id=job_id)


def test_a_job_that_found_its_file_already_there_is_dismissed_and_the_document_kept(client):
    note = ("twice.md", b"# Twice\n\nA note uploaded two times over.")
    document_id = upload(client, "duplicates", note).json()["uploaded"][0]["id"]
    job_id = upload(client, "duplicates", note, background="true").json()["jobs"][0]["id"]
    state, _ = poll_until_finished(client, "duplicates", job_id)
    assert state["status"] == "ready" and state["document_id"] == document_id

    assert client.delete(f"/chat/duplicates/documents/{job_id}").json() == {"id": job_id, "deleted": True}
    assert_error(client.get(f"/chat/duplicates/documents/{job_id}"), 404, "NOT_FOUND", doc_id=job_id)
    assert client.get(f"/chat/duplicates/documents/{document_id}").json()["status"] == "ready"


def test_a_small_file_is_indexed_within_the_request_and_only_once(client):
    notes = ("notes.txt", b"Axolotls regrow their limbs, their hearts and parts of their brains.")
    first = upload(client, "notes", notes)
    assert first.status_code == 200
    (document,) = first.json()["uploaded"]
    assert document["name"] == "notes.txt" and document["chunk_count"] == 1 and not document["duplicate"]

    again = upload(client, "notes", ("renamed.txt", notes[1]))
    assert again.status_code == 200
    assert again.json()["uploaded"][0] | {"name": "?"} == document | {"duplicate": True, "name": "?"}
    assert len(client.get("/chat/notes/documents").json()["documents"]) == 1


def sheet_of_cells(rows: int, columns: int) -> bytes:
    book = openpyxl.Workbook(write_only=True)
    sheet = book.create_sheet("Readings")
    sheet.append([f"Sensor {column}" for column in range(columns)])
    for row in range(rows):
        sheet.append([row * column % 997 for column in range(columns)])
    output = io.BytesIO()
    book.save(output)
    return output.getvalue()


def test_a_sheet_small_in_bytes_but_long_in_text_is_indexed_in_the_background(client, server):
    """What was read decides, not the upload's size: this sheet's 5,000 cells take a sixth of the bytes of the
    8-page paper, but their rows, labelled by the headers, make over three times the text indexed within a request."""
    data = sheet_of_cells(500, 10)
    assert len(data) < 40_000

    response = upload(client, "sheets", ("readings.xlsx", data))

    assert response.status_code == 202, response.text
    body = response.json()
    assert body["uploaded"] == [] and body["failed"] == [] and body["jobs"][0]["name"] == "readings.xlsx"
    state, _ = poll_until_finished(client, "sheets", body["jobs"][0]["id"])
    assert state["status"] == "ready" and state["chunk_count"] > 100
    assert server.services.documents.list("sheets")[0].file_type == "xlsx"


def test_files_each_short_but_long_together_go_in_until_the_requests_text_is_spent(client):
    """The amount of text indexed within a request counts all its files: two notes of 12,000 characters (each
    under the 20,000 limit) are one indexed now and one job, not 24,000 characters embedded before the answer."""
    notes = [(f"note{n}.txt", f"Note {n} about salamanders. ".encode() + b"Axolotls keep their gills. " * 440)
             for n in (1, 2)]

    response = upload(client, "two-notes", *notes)

    assert response.status_code == 202, response.text
    body = response.json()
    assert [d["name"] for d in body["uploaded"]] == ["note1.txt"] and body["failed"] == []
    assert [job["name"] for job in body["jobs"]] == ["note2.txt"]
    state, _ = poll_until_finished(client, "two-notes", body["jobs"][0]["id"])
    assert state["status"] == "ready"


def test_background_true_makes_even_a_small_file_a_job(client):
    response = upload(client, "asked", ("tiny.md", b"# Tiny\n\nA small markdown note."), background="true")
    assert response.status_code == 202
    state, _ = poll_until_finished(client, "asked", response.json()["jobs"][0]["id"])
    assert state["status"] == "ready" and state["chunk_count"] == 1


def test_a_job_stopped_as_it_finished_reads_cancelled_not_ready_without_its_document(client, server):
    """Stop pressed just as the job stored its document: the document is deleted (nothing of it is kept), and the
    job's state says so instead of "ready" with no document, chunks or pages."""
    response = upload(client, "stopped-late", ("late.md", b"# Late\n\nA note stopped late."), background="true")
    job_id = response.json()["jobs"][0]["id"]
    state, _ = poll_until_finished(client, "stopped-late", job_id)
    assert state["status"] == "ready"

    assert client.delete(f"/chat/stopped-late/documents/{job_id}").status_code == 200

    after = client.get(f"/chat/stopped-late/documents/{job_id}").json()
    assert after["status"] == "cancelled" and after["chunk_count"] is None
    assert server.services.documents.list("stopped-late") == []


@pytest.mark.parametrize("filename", sorted(UNREADABLE))
def test_each_unreadable_shared_pdf_is_refused_with_its_reason(client, server, pdfs, filename):
    response = upload_paths(client, "broken", pdfs / filename)
    assert_error(response, 422, "UNREADABLE_DOCUMENT", reason=UNREADABLE[filename], filename=filename)
    assert server.services.documents.list("broken") == []


@pytest.mark.parametrize(
    ("filename", "data"),
    [("paper.pdf", b"# A markdown note named like a PDF\n\nIt is not one."),  # the content decides, not the name
     ("program.exe", b"MZ\x90\x00 not a document")],
)
def test_a_file_that_is_not_a_supported_type_is_415(client, filename, data):
    assert_error(upload(client, "types", (filename, data)), 415, "UNSUPPORTED_FILE_TYPE", filename=filename)


def test_several_files_each_get_their_outcome(client, pdfs):
    response = upload(
        client, "mixed",
        ("facts.txt", b"The Quorra river is 412 kilometres long."),
        ("secret.pdf", (pdfs / "encrypted_aes256_userpw_foo.pdf").read_bytes()),
        ("empty.txt", b""),
        (TOO_LARGE_PAPER, (pdfs / TOO_LARGE_PAPER).read_bytes()),
    )
    assert response.status_code == 200
    body = response.json()
    assert [d["name"] for d in body["uploaded"]] == ["facts.txt"]
    failed = {f["name"]: f["error"] for f in body["failed"]}
    assert set(failed) == {"secret.pdf", "empty.txt", TOO_LARGE_PAPER}
    assert failed["secret.pdf"]["error"] == "UNREADABLE_DOCUMENT"
    assert failed["secret.pdf"]["details"]["reason"] == "encrypted"
    assert failed["empty.txt"]["details"]["reason"] == "empty"
    assert failed[TOO_LARGE_PAPER]["error"] == "FILE_TOO_LARGE"
    assert failed[TOO_LARGE_PAPER]["details"]["limit_bytes"] == LIMIT_BYTES


def test_a_single_file_over_the_limit_is_413(client, server, pdfs):
    response = upload_paths(client, "large", pdfs / TOO_LARGE_PAPER)
    body = assert_error(response, 413, "FILE_TOO_LARGE", limit_bytes=LIMIT_BYTES, filename=TOO_LARGE_PAPER)
    assert body["message"] == f"“{TOO_LARGE_PAPER}” is larger than the limit of 256 KB."
    assert server.services.documents.list("large") == []


def unfinished_upload_response(url: str, headers: dict[str, str], body_start: bytes) -> tuple[int, dict]:
    """Sends an upload's headers and the start of its body, then nothing more, and reads the answer.

    The rest of the body never comes, so a server that read the whole upload before checking its size would never
    answer (the read times out and the test fails): an answer proves the limit held while the body streamed in.
    """
    host, port = url.removeprefix("http://").split(":")
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    with socket.create_connection((host, int(port)), timeout=BACKGROUND_WAIT_SECONDS) as connection:
        connection.sendall(f"POST /chat/huge/documents HTTP/1.1\r\nHost: {host}\r\n{head}\r\n".encode() + body_start)
        response = http.client.HTTPResponse(connection)
        response.begin()
        return response.status, json.loads(response.read())


BOUNDARY = "axiomtestboundary"
FILE_PART_HEAD = (f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="files"; filename="huge.txt"\r\n'
                  "Content-Type: text/plain\r\n\r\n").encode()
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"
# More than MAX_FILES full-size files: past the request limit.
OVER_THE_REQUEST_LIMIT = MAX_FILES * LIMIT_BYTES * 2


def test_the_size_limit_holds_while_a_chunked_upload_streams_in(server):
    piece = b"x" * 65536
    chunks = f"{len(FILE_PART_HEAD):x}\r\n".encode() + FILE_PART_HEAD + b"\r\n" + (
        f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    ) * (OVER_THE_REQUEST_LIMIT // len(piece))
    status, body = unfinished_upload_response(
        server.url, {"Content-Type": MULTIPART, "Transfer-Encoding": "chunked"}, chunks
    )
    assert status == 413 and body["error"] == "FILE_TOO_LARGE" and body["details"]["limit_bytes"] == LIMIT_BYTES
    assert server.services.documents.list("huge") == []


def test_a_declared_length_over_the_limits_is_refused_before_the_body_is_read(server):
    status, body = unfinished_upload_response(
        server.url, {"Content-Type": MULTIPART, "Content-Length": str(OVER_THE_REQUEST_LIMIT)}, FILE_PART_HEAD
    )
    assert status == 413 and body["error"] == "FILE_TOO_LARGE" and body["details"]["limit_bytes"] == LIMIT_BYTES


def test_a_document_is_deleted_from_every_store(client, server):
    keep = upload(client, "deleting", ("keep.txt", b"Tardigrades survive the vacuum of space.")).json()
    gone = upload(client, "deleting", ("gone.txt", b"Octopuses have three hearts and blue blood.")).json()
    keep_id, gone_id = keep["uploaded"][0]["id"], gone["uploaded"][0]["id"]

    response = client.delete(f"/chat/deleting/documents/{gone_id}")
    assert response.status_code == 200 and response.json() == {"id": gone_id, "deleted": True}

    services = server.services
    assert services.vectors.document_ids("deleting") == {keep_id}
    assert services.keywords.document_ids("deleting") == {keep_id}
    assert [d["id"] for d in client.get("/chat/deleting/documents").json()["documents"]] == [keep_id]
    assert_error(client.get(f"/chat/deleting/documents/{gone_id}"), 404, "NOT_FOUND", doc_id=gone_id)
    assert_error(client.delete(f"/chat/deleting/documents/{gone_id}"), 404, "NOT_FOUND", doc_id=gone_id)


def test_a_document_of_one_chat_cannot_be_reached_through_another(client):
    document_id = upload(client, "owner", ("mine.txt", b"Only the owner chat holds this.")).json()["uploaded"][0]["id"]
    assert_error(client.get(f"/chat/intruder/documents/{document_id}"), 404, "NOT_FOUND")
    assert_error(client.delete(f"/chat/intruder/documents/{document_id}"), 404, "NOT_FOUND")
    assert client.get(f"/chat/owner/documents/{document_id}").json()["status"] == "ready"


def test_an_uploaded_filename_is_a_label_never_a_path(client, server):
    name = "../../../../../tmp/axiom-upload-escape.txt"
    response = upload(client, "paths", (name, b"A file trying to escape its folder."))
    assert response.status_code == 200
    assert response.json()["uploaded"][0]["name"] == "axiom-upload-escape.txt"
    data_dir = server.services.settings.data_dir
    assert not list(data_dir.parent.rglob("axiom-upload-escape*"))


def multipart_body(disposition: str, data: bytes) -> bytes:
    """``disposition``'s characters each one byte (latin-1), as a client sends them."""
    return (
        f"--b\r\nContent-Disposition: form-data; name=\"files\"; {disposition}\r\n\r\n".encode("latin-1") + data
        + b"\r\n--b--\r\n"
    )


@pytest.mark.parametrize(
    "disposition",
    ["filename*=UTF-8''%C3%9Cber%20Bericht.txt",  # alone, as some clients send a name beyond ASCII
     "filename=\"Uber Bericht.txt\"; filename*=utf-8'de'%C3%9Cber%20Bericht.txt",  # beside an ASCII stand-in
     "filename*0*=UTF-8''%C3%9Cber; filename*1*=%20Bericht.txt",  # in continuations (RFC 2231)
     "filename*=''%C3%9Cber%20Bericht.txt",  # without its charset: UTF-8, as every other name
     "filename*0=\"\xc3\x9cber\"; filename*1=\" Bericht.txt\"",  # continuations without encoding: plain
     "filename=\"\xc3\x9cber Bericht.txt\"; filename*=UTF-8''",  # an empty extended one: the plain one
     "filename=\"\xc3\x9cber Bericht.txt\"; filename*=UTF-8''%DCber%20Bericht.txt",  # not UTF-8: the plain
     "filename=\"\xdcber Bericht.txt\""],  # plain, in Windows-1252 as older clients send it, not UTF-8
)
def test_a_filename_given_in_rfc_5987_form_or_legacy_bytes_is_read(client, disposition):
    body = multipart_body(disposition, f"Der Bericht {disposition}: Axolotl regenerieren Gliedmaßen.".encode())
    response = client.post(
        "/chat/umlauts/documents", content=body, headers={"content-type": "multipart/form-data; boundary=b"}
    )
    assert response.status_code == 200, response.text
    assert response.json()["uploaded"][0]["name"] == "Über Bericht.txt"


@pytest.mark.parametrize("disposition", ["filename*=UTF-8''not%00ed.txt", "filename=\"not\x00ed.txt\""])
def test_a_filename_holding_a_nul_goes_to_a_background_job_without_it(client, disposition):
    """PostgreSQL cannot keep a NUL: the job's file is stored under the name shown, without it."""
    body = multipart_body(disposition, f"A note sent as {disposition!r}.".encode())
    response = client.post(
        "/chat/nul-names/documents?background=true", content=body,
        headers={"content-type": "multipart/form-data; boundary=b"},
    )
    assert response.status_code == 202, response.text
    (job,) = response.json()["jobs"]
    assert job["name"] == "noted.txt"
    state, _ = poll_until_finished(client, "nul-names", job["id"])
    assert state["status"] == "ready" and state["name"] == "noted.txt"


@pytest.mark.parametrize("disposition", ['filename="notes/"', 'filename="\x01"', "filename*=UTF-8''..%2F"])
@pytest.mark.parametrize("background", ["false", "true"])
def test_a_file_whose_name_is_no_name_is_refused_at_once(client, disposition, background):
    """Nothing of the name is left once its path and unprintable characters go: neither read nor queued as a job
    to fail as the type “”."""
    body = multipart_body(disposition, b"A note without a name.")
    response = client.post(
        f"/chat/nameless/documents?background={background}", content=body,
        headers={"content-type": "multipart/form-data; boundary=b"},
    )
    error = assert_error(response, 400, "VALIDATION_ERROR", field="files")
    assert "without a name" in error["message"]
    assert_error(client.get("/chat/nameless/documents"), 404, "NOT_FOUND")


@pytest.mark.parametrize(
    ("method", "path", "field"),
    [("GET", "/chat/bad.chat/documents", "chat_id"),
     ("GET", "/chat/c1/documents/bad.doc", "doc_id"),
     ("DELETE", "/chat/c1/documents/-x", "doc_id"),
     ("POST", "/chat/_hidden/documents", "chat_id")],
)
def test_malformed_ids_are_400(client, method, path, field):
    assert_error(client.request(method, path), 400, "VALIDATION_ERROR", field=field)


def test_an_unknown_document_is_404(client):
    assert_error(client.get("/chat/c1/documents/0123abcd"), 404, "NOT_FOUND", doc_id="0123abcd")


def test_requests_that_are_not_file_uploads_are_400(client):
    assert_error(client.post("/chat/c1/documents", json={"files": []}), 400, "VALIDATION_ERROR", field="content-type")
    # A form with only a text field, and a file input left empty as a browser sends it (filename="").
    no_file = client.post("/chat/c1/documents", data={"note": "no file here"}, files={"files": ("", b"")})
    assert_error(no_file, 400, "VALIDATION_ERROR", field="files")
    too_many = upload(client, "c1", *((f"n{i}.txt", b"text") for i in range(MAX_FILES + 1)))
    assert_error(too_many, 400, "VALIDATION_ERROR", field="files", max_files=MAX_FILES)
    assert_error(client.post("/chat/c1/documents?background=maybe"), 400, "VALIDATION_ERROR", field="background")
