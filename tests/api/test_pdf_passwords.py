"""PDFs that need a password to open, uploaded over HTTP with the ``password`` field: within the request and as
background jobs, on each database engine. The password opens the request's PDFs only, is never echoed nor logged,
and is gone from the database once a job ends."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
from sqlalchemy import event, select

from backend.api.settings import ApiSettings
from backend.stores.schema import job_files, jobs
from tests.api.server import serve
from tests.api.support import assert_error, upload
from tests.support.postgres import DATABASES
from tests.support.waiting import BACKGROUND_WAIT_SECONDS, wait_for

# "Lorem ipsum …" (1 page, 591 characters): over BACKGROUND_CHARS, so it is indexed by a background job.
LONG_LOCKED = "encrypted_userpw_openpassword.pdf"
LONG_PASSWORD = "openpassword"
# "Secret!" (1 page): indexed within the request. Opened by "foo", as are its RC4 sibling.
SHORT_LOCKED = "encrypted_aes256_userpw_foo.pdf"
SHORT_PASSWORD = "foo"
RESTRICTED = "encrypted_ownerpw_only_copy-protected.pdf"  # opens without a password
BACKGROUND_CHARS = 500
WRONG = "Wr0ng-pa55word"


@pytest.fixture(scope="module", params=DATABASES)
def server(request, build_app_services, tmp_path_factory, new_database_url):
    services = build_app_services(
        tmp_path_factory.mktemp("passwords"), database_url=new_database_url(request.param)
    )
    limits = ApiSettings(background_ingest_chars=BACKGROUND_CHARS, inline_read_seconds=BACKGROUND_WAIT_SECONDS)
    with serve(services, limits) as running:
        yield running
    services.database.dispose()


def upload_locked(
    client: httpx.Client, chat_id: str, *files: tuple[str, bytes], password: str | None, **params
) -> httpx.Response:
    return client.post(
        f"/chat/{chat_id}/documents", files=[("files", file) for file in files],
        data={} if password is None else {"password": password}, params=params,
    )


def shared(pdfs: Path, filename: str, name: str | None = None) -> tuple[str, bytes]:
    """The shared file, uploaded as ``name`` (a name without the password in it, for the log checks)."""
    return name or filename, (pdfs / filename).read_bytes()


def finished_job(client: httpx.Client, chat_id: str, job_id: str) -> dict:
    def finished():
        state = client.get(f"/chat/{chat_id}/documents/{job_id}").json()
        return state if state["status"] in ("ready", "failed", "cancelled") else None

    return wait_for(finished, f"job {job_id}")


def kept_about_job(server, job_id: str) -> tuple[list, str]:
    """The job's password rows (none once it ended), and its row as text."""
    with server.services.database.connect() as db:
        passwords = list(db.execute(select(job_files.c.password).where(job_files.c.job_id == job_id)).scalars())
        row = db.execute(select(jobs).where(jobs.c.job_id == job_id)).one()
    return passwords, str(row)


def test_a_locked_pdf_with_its_password_is_indexed_within_the_request(client, server, pdfs):
    response = upload_locked(client, "inline", shared(pdfs, SHORT_LOCKED), password=SHORT_PASSWORD)

    assert response.status_code == 200, response.text
    (document,) = response.json()["uploaded"]
    assert (document["name"], document["page_count"], document["chunk_count"]) == (SHORT_LOCKED, 1, 1)
    assert [d.filename for d in server.services.documents.list("inline")] == [SHORT_LOCKED]


@pytest.mark.parametrize("filename", [SHORT_LOCKED, "encrypted_rc4-128_userpw_foo.pdf", LONG_LOCKED])
def test_a_locked_pdf_without_a_password_is_422_encrypted_saying_it_opens_with_one(client, server, pdfs, filename):
    for password in (None, ""):  # an empty password input sends "": no password
        body = assert_error(
            upload_locked(client, "no-password", shared(pdfs, filename), password=password),
            422, "UNREADABLE_DOCUMENT", reason="encrypted", filename=filename,
        )
        assert "Enter its password" in body["message"] and "“password” field" in body["message"]
    assert_error(client.get("/chat/no-password/documents"), 404, "NOT_FOUND")  # no chat made


def test_a_wrong_password_is_422_wrong_password_and_never_echoed(client, pdfs):
    response = upload_locked(client, "wrong", shared(pdfs, SHORT_LOCKED), password=WRONG)

    body = assert_error(response, 422, "UNREADABLE_DOCUMENT", reason="wrong_password", filename=SHORT_LOCKED)
    assert body["message"] == f"The password given for “{SHORT_LOCKED}” does not open it. Check the password and " \
        "upload it again."
    assert WRONG not in response.text


def test_the_password_opens_each_pdf_of_the_request_and_nothing_else_minds_it(client, server, pdfs):
    response = upload_locked(
        client, "mixed",
        shared(pdfs, SHORT_LOCKED), shared(pdfs, "encrypted_rc4-128_userpw_foo.pdf"),
        shared(pdfs, RESTRICTED),  # needs none: the password is ignored (2 pages of a paper: a job)
        ("notes.txt", b"The Quorra river is 412 kilometres long."),
        password=SHORT_PASSWORD,
    )

    assert response.status_code == 202, response.text
    body = response.json()
    # The two "Secret!" files have different bytes: both are stored.
    assert sorted(d["name"] for d in body["uploaded"]) == sorted(
        [SHORT_LOCKED, "encrypted_rc4-128_userpw_foo.pdf", "notes.txt"]
    )
    assert body["failed"] == []
    (job,) = body["jobs"]
    assert job["name"] == RESTRICTED and finished_job(client, "mixed", job["id"])["status"] == "ready"
    # A PDF the request's password does not open fails alone, saying so.
    other = upload_locked(client, "mixed", shared(pdfs, LONG_LOCKED), ("more.txt", b"Olms live in caves."),
                          password=SHORT_PASSWORD)
    (failed,) = other.json()["failed"]
    assert failed["name"] == LONG_LOCKED and failed["error"]["details"]["reason"] == "wrong_password"
    assert [d["name"] for d in other.json()["uploaded"]] == ["more.txt"]


def test_a_locked_pdf_indexed_in_the_background_opens_with_its_password_which_goes_with_the_job(
    client, server, pdfs
):
    """Over BACKGROUND_CHARS once read within the request: its job reads it again, with the password kept for
    that in the job's file row only until the job ends."""
    response = upload_locked(client, "jobs", shared(pdfs, LONG_LOCKED, "statement.pdf"), password=LONG_PASSWORD)

    assert response.status_code == 202, response.text
    (job,) = response.json()["jobs"]
    state = finished_job(client, "jobs", job["id"])
    assert state["status"] == "ready" and state["page_count"] == 1 and state["chunk_count"] >= 1
    assert [d.filename for d in server.services.documents.list("jobs")] == ["statement.pdf"]
    passwords, row = kept_about_job(server, job["id"])
    assert passwords == [] and LONG_PASSWORD not in row


def test_a_background_job_with_a_wrong_password_fails_saying_so_and_keeps_nothing_of_it(client, server, pdfs):
    response = upload_locked(client, "jobs-wrong", shared(pdfs, SHORT_LOCKED), password=WRONG, background="true")

    assert response.status_code == 202, response.text
    (job,) = response.json()["jobs"]
    state = finished_job(client, "jobs-wrong", job["id"])
    assert state["status"] == "failed"
    assert state["error"]["error"] == "UNREADABLE_DOCUMENT"
    assert state["error"]["details"] == {"reason": "wrong_password", "filename": SHORT_LOCKED}
    passwords, row = kept_about_job(server, job["id"])
    assert passwords == [] and WRONG not in row


def test_a_background_job_without_a_password_fails_as_encrypted(client, pdfs):
    response = upload_locked(client, "jobs-none", shared(pdfs, SHORT_LOCKED), password=None, background="true")

    state = finished_job(client, "jobs-none", response.json()["jobs"][0]["id"])
    assert state["status"] == "failed" and state["error"]["details"]["reason"] == "encrypted"


def test_the_password_is_never_logged(client, server, pdfs, caplog):
    caplog.set_level(logging.DEBUG)
    # Named without the password (the shared file's name holds it).
    statement = shared(pdfs, LONG_LOCKED, "statement.pdf")

    wrong = upload_locked(client, "logged", statement, password=f"{LONG_PASSWORD}-not")
    inline = upload_locked(client, "logged", shared(pdfs, SHORT_LOCKED, "payslip.pdf"), password=LONG_PASSWORD)
    queued = upload_locked(client, "logged", statement, password=LONG_PASSWORD, background="true")
    failed = upload_locked(client, "logged", statement, password=f"{LONG_PASSWORD}-not", background="true")
    for response in (queued, failed):
        finished_job(client, "logged", response.json()["jobs"][0]["id"])

    assert (wrong.status_code, inline.status_code) == (422, 422)  # "foo" opens the payslip, not this password
    logged = "\n".join(
        f"{record.getMessage()} {record.exc_text or ''} {record.stack_info or ''}" for record in caplog.records
    )
    assert LONG_PASSWORD not in logged
    assert all(LONG_PASSWORD not in response.text for response in (wrong, inline, queued, failed))


@pytest.mark.parametrize("length", [1025, 1_000_000])  # the longer is refused as it streams in
def test_a_password_longer_than_the_limit_or_sent_twice_is_400_without_echoing_it(client, pdfs, length):
    long_password = "p" * length
    too_long = upload_locked(client, "bad", shared(pdfs, SHORT_LOCKED), password=long_password)
    body = assert_error(too_long, 400, "VALIDATION_ERROR", field="password", max_length=1024)
    assert long_password not in too_long.text and body["details"]["errors"][0]["field"] == "password"

    twice = client.post(
        "/chat/bad/documents", files=[("files", shared(pdfs, SHORT_LOCKED))],
        data={"password": ["foo", "bar"]},
    )
    assert_error(twice, 400, "VALIDATION_ERROR", field="password")
    assert "bar" not in twice.text.replace("“", "")


@pytest.mark.parametrize("password", ["fo\x00o", "foo\n", "\x85foo"])
def test_a_password_with_a_control_character_is_400_without_echoing_it(client, pdfs, password):
    """A NUL could not even be kept with a background job on PostgreSQL (it was a 500)."""
    response = upload_locked(client, "bad", shared(pdfs, LONG_LOCKED), password=password, background="true")

    assert_error(response, 400, "VALIDATION_ERROR", field="password")
    assert "foo" not in response.text


def test_a_password_exactly_at_the_limit_is_taken(client, pdfs):
    assert_error(
        upload_locked(client, "edge", shared(pdfs, SHORT_LOCKED), password="é" * 1024),  # 2,048 bytes
        422, "UNREADABLE_DOCUMENT", reason="wrong_password",
    )


def test_a_password_without_any_file_is_still_no_upload(client):
    response = client.post("/chat/nofile/documents", data={"password": "foo"}, files={"other": ("", b"")})

    assert_error(response, 400, "VALIDATION_ERROR", field="files")


def test_an_upload_without_a_password_field_is_as_before(client):
    assert upload(client, "plain", ("notes.txt", b"Axolotls regrow their limbs.")).status_code == 200


def test_a_job_keeps_the_password_for_a_pdf_only(client, server, pdfs):
    """What each job's file row is written with (seen as the database is sent it: a job may end before it could be
    read back)."""
    written: list[tuple] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("INSERT INTO JOB_FILES"):
            written.append(parameters)

    event.listen(server.services.database, "before_cursor_execute", record)
    try:
        response = upload_locked(
            client, "kept", shared(pdfs, SHORT_LOCKED), ("notes.txt", b"Olms live in caves."),
            password=SHORT_PASSWORD, background="true",
        )
    finally:
        event.remove(server.services.database, "before_cursor_execute", record)

    assert response.status_code == 202, response.text
    # (job id, filename as uploaded, password), named (PostgreSQL) or in order (SQLite).
    rows = {tuple(params.values() if isinstance(params, dict) else params)[1:] for params in written}
    assert rows == {(SHORT_LOCKED, SHORT_PASSWORD), ("notes.txt", None)}
    for job in response.json()["jobs"]:
        assert finished_job(client, "kept", job["id"])["status"] == "ready"
