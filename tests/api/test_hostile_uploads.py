"""Uploads built to hurt the server, against a real one: each gets its status and error code, and nothing of it is
stored; memory does not stay behind; a client hanging up is one line in the log."""

from __future__ import annotations

import io
import logging
import os
import socket
import time
import zipfile
from pathlib import Path

import docx
import httpx
import pytest

from backend.api.settings import ApiSettings
from tests.api.server import serve
from tests.api.support import assert_error, upload
from tests.support.waiting import wait_for

NOTES = ("notes.txt", b"Axolotls can regrow their limbs, their hearts and even parts of their brains.")
_DOCUMENT_XML_HEAD = (
    '<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
    "<w:body>"
)


def docx_of_empty_paragraphs(count: int) -> bytes:
    """A valid, small .docx whose body is ``count`` empty paragraphs (2.5 M: 15 MB of XML, a 30 KB upload)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
            "</Types>",
        )
        archive.writestr("word/document.xml", _DOCUMENT_XML_HEAD + "<w:p/>" * count + "</w:body></w:document>")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def server(build_app_services, tmp_path_factory):
    with serve(build_app_services(tmp_path_factory.mktemp("hostile"))) as running:
        yield running


def assert_nothing_stored(server, chat_id: str) -> None:
    services = server.services
    assert services.documents.list(chat_id) == [] and services.documents.incomplete() == []
    assert services.keywords.count(chat_id) == 0 and services.vectors.count(chat_id) == 0


def test_a_docx_of_millions_of_empty_paragraphs_is_refused_as_too_complex(client, server):
    response = upload(client, "bombed", ("bomb.docx", docx_of_empty_paragraphs(2_500_000)))
    body = assert_error(response, 422, "UNREADABLE_DOCUMENT", reason="too_complex", filename="bomb.docx")
    assert "too many paragraphs" in body["message"]
    assert_nothing_stored(server, "bombed")


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _rss_with_children_mib() -> float:
    """This process (the server runs in it) and its children (the reader processes)."""
    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()
    return _rss_mib(os.getpid()) + sum(_rss_mib(int(child)) for child in children if Path(f"/proc/{child}").exists())


def test_docx_bombs_leave_no_memory_behind(client, server):
    """A regression guard (the full measurement is bench/upload_memory.py): parsed in the server, each of these
    left ~1.35 GB behind (issue 14)."""
    bomb = docx_of_empty_paragraphs(2_500_000)
    assert upload(client, "warm", NOTES).status_code == 200
    before = _rss_with_children_mib()
    for _ in range(5):
        assert upload(client, "bombed", ("bomb.docx", bomb)).status_code == 422
    growth = _rss_with_children_mib() - before
    assert growth < 200, f"RSS grew by {growth:.0f} MiB over 5 DOCX bombs"


def test_a_text_file_that_decodes_to_noise_is_unreadable(client, server):
    noise = b"\xff\xfe" + bytes(range(0x80, 0x100)) * 40  # a UTF-16 byte-order mark before bytes that are not
    body = assert_error(
        upload(client, "noisy", ("notes.txt", noise)), 422, "UNREADABLE_DOCUMENT", reason="no_text",
        filename="notes.txt",
    )
    assert "readable text" in body["message"]
    assert_nothing_stored(server, "noisy")


def test_a_file_of_an_unsupported_type_is_refused_as_such_even_when_its_bytes_are_already_stored(client, server):
    assert upload(client, "typed", NOTES).status_code == 200
    response = upload(client, "typed", ("README", NOTES[1]))
    assert_error(response, 415, "UNSUPPORTED_FILE_TYPE", filename="README")
    assert [d.filename for d in server.services.documents.list("typed")] == ["notes.txt"]


def _raw_request(url: str, head: bytes, body: bytes, *, hang_up: bool) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as connection:
        connection.sendall(head + body)
        if hang_up:
            return b""
        return connection.recv(65536)


def _multipart_head(chat_id: str, length: int) -> bytes:
    return (
        f"POST /chat/{chat_id}/documents HTTP/1.1\r\nHost: test\r\nContent-Type: multipart/form-data; boundary=b\r\n"
        f"Content-Length: {length}\r\nConnection: close\r\n\r\n"
    ).encode()


_PART = b'--b\r\nContent-Disposition: form-data; name="files"; filename="notes.txt"\r\n\r\n' + NOTES[1]


def test_a_multipart_body_without_its_closing_boundary_is_refused(server):
    body = _PART + b"\r\n"  # complete as far as its Content-Length goes, but the last part never ends
    answer = _raw_request(server.url, _multipart_head("truncated", len(body)), body, hang_up=False)
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert b'"VALIDATION_ERROR"' in answer and b"cut short" in answer
    assert_nothing_stored(server, "truncated")


def test_a_client_hanging_up_mid_upload_is_one_info_line(server, caplog):
    body = _PART + b"\r\n--b--\r\n"
    with caplog.at_level(logging.INFO):
        # Promises more bytes than it sends, then closes the connection.
        _raw_request(server.url, _multipart_head("gone", len(body) + 10_000), body, hang_up=True)
        wait_for(lambda: any("hung up" in r.getMessage() for r in caplog.records), "the hang-up to be logged")
    hang_ups = [r for r in caplog.records if "hung up" in r.getMessage()]
    assert len(hang_ups) == 1 and hang_ups[0].levelno == logging.INFO and hang_ups[0].exc_info is None
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert_nothing_stored(server, "gone")


@pytest.fixture(scope="module")
def budgeted_server(build_app_services, tmp_path_factory):
    with serve(
        build_app_services(tmp_path_factory.mktemp("budget")), ApiSettings(upload_budget_bytes=1024 * 1024)
    ) as running:
        yield running


def padded_docx(text: str, padding_bytes: int) -> bytes:
    """A real .docx of one paragraph that weighs ``padding_bytes`` more (an unreferenced binary part): big to
    upload, quick to index."""
    import os


    buffer = io.BytesIO()
    document = docx.Document()
    document.add_paragraph(text)
    document.save(buffer)
    with zipfile.ZipFile(buffer, "a", zipfile.ZIP_STORED) as archive:
        archive.writestr("word/media/padding.bin", os.urandom(padding_bytes))
    return buffer.getvalue()


def test_uploads_beyond_the_memory_budget_are_503_with_retry_after_and_the_budget_comes_back(budgeted_server):
    with httpx.Client(base_url=budgeted_server.url, timeout=300) as client:
        response = upload(client, "budget", ("big.docx", padded_docx("Axolotls are amphibians.", 1200 * 1024)))
        body = assert_error(response, 503, "SERVER_BUSY", budget_bytes=1024 * 1024)
        assert int(response.headers["Retry-After"]) > 0 and body["details"]["retry_after_seconds"] > 0
        assert_nothing_stored(budgeted_server, "budget")
        # What a refused or finished request held is given back: two uploads of 60 % of the budget, one after the
        # other, both fit, also when the first is a background job (its share is held until it ends).
        first = ("first.docx", padded_docx("Axolotls are amphibians.", 600 * 1024))
        job = upload(client, "budget", first, background="true").json()["jobs"][0]
        wait_for(lambda: client.get(f"/chat/budget/documents/{job['id']}").json()["status"] == "ready", "the job")
        time.sleep(0.2)  # the job's share is released just after its state is written
        second = ("second.docx", padded_docx("Salamanders are amphibians too.", 600 * 1024))
        assert upload(client, "budget", second).status_code == 200
