"""Scans and images uploaded over HTTP, read by the real Tesseract in the reader's worker process, then searched.

Each file ends ingested with its text findable by the retriever (what `axiom search` prints; tests/test_cli.py runs
the command itself on a scan), or with its typed error.
"""

from __future__ import annotations

import io
import json

import httpx
import pypdfium2
import pytest
from httpx_sse import connect_sse

from backend.api.settings import ApiSettings
from tests.api.server import serve
from tests.api.support import assert_error, upload, upload_paths
from tests.support.waiting import BACKGROUND_WAIT_SECONDS, wait_for

LINN = "scanned_linn_two-column_brochure.pdf"
MIXED = "scanned_multipage_mixed.pdf"
HUCK_FINN = "scanned_c02-22_huckfinn_page.pdf"


@pytest.fixture(scope="module")
def server(build_app_services, tmp_path_factory):
    # A scan read within its request may wait behind the multi-page scan's job on a busy machine.
    with serve(build_app_services(tmp_path_factory.mktemp("ocr")),
               ApiSettings(inline_read_seconds=BACKGROUND_WAIT_SECONDS)) as running:
        yield running


def found(server, chat_id: str, query: str) -> list:
    """The passages the retriever returns for ``query``, as `axiom search` prints them."""
    return server.services.retriever.retrieve(chat_id, query).relevant


def image_of(pdf, image_format: str) -> bytes:
    document = pypdfium2.PdfDocument(pdf)
    try:
        image = document[0].render(scale=200 / 72, grayscale=True).to_pil()
    finally:
        document.close()
    output = io.BytesIO()
    image.save(output, format=image_format)
    return output.getvalue()


def test_a_one_page_scan_is_read_within_the_request_and_found(client, server, pdfs):
    response = upload_paths(client, "brochure", pdfs / LINN)

    assert response.status_code == 200, response.text
    (document,) = response.json()["uploaded"]
    assert document["name"] == LINN and document["page_count"] == 1 and document["chunk_count"] >= 5
    best = found(server, "brochure", "How many MIDI channels can each track be assigned to?")[0]
    assert best.parent.filename == LINN and best.parent.page == 1 and best.parent.ocr
    assert "16 MIDI channels" in " ".join(best.parent.text.split())


def test_a_multipage_scan_is_a_background_job_even_when_small(client, server, pdfs):

    response = upload_paths(client, "scans", pdfs / MIXED)

    assert response.status_code == 202, response.text
    (job,) = response.json()["jobs"]
    percents: list[int] = []

    def finished():
        state = client.get(f"/chat/scans/documents/{job['id']}").json()
        percents.append(state["percent"])
        return state if state["status"] in ("ready", "failed") else None

    state = wait_for(finished, "the scan's job")
    assert state["status"] == "ready" and state["page_count"] == 6, state
    # Recognising its five scanned pages is most of the work, and the job says how far it got.
    assert percents == sorted(percents) and any(0 < percent < 80 for percent in percents), percents
    passages = found(server, "scans", "the year of Our Lord one thousand seven hundred and seventy-five")
    assert passages and passages[0].parent.page in (5, 6) and passages[0].parent.ocr
    assert found(server, "scans", "Percentage oppose net vote")[0].parent.page == 4  # its text layer, not OCR


@pytest.mark.parametrize(("filename", "image_format"), [("page.png", "PNG"), ("photo.webp", "WEBP")])
def test_an_image_upload_is_recognised_and_found(client, server, pdfs, filename, image_format):
    response = upload(client, f"image-{image_format.lower()}", (filename, image_of(pdfs / HUCK_FINN, image_format)))

    assert response.status_code == 200, response.text
    (document,) = response.json()["uploaded"]
    assert document["page_count"] == 1
    listed = client.get(f"/chat/image-{image_format.lower()}/documents").json()["documents"]
    assert listed[0]["file_type"] == "image"
    best = found(server, f"image-{image_format.lower()}", "Miss Watson's big nigger named Jim")[0]
    assert best.parent.filename == filename and best.parent.ocr


def test_the_sources_of_an_answer_say_the_text_was_recognised(client, server, pdfs):
    assert upload_paths(client, "asking", pdfs / LINN).status_code == 200

    with connect_sse(
        client, "POST", "/chat/asking/stream", json={"message": "How many notes does a disk hold?"}
    ) as events:
        # The sources come before the model writes (or with the end, when it is not asked); the stream is left
        # there, and the server stops the model.
        sources = next(
            json.loads(event.data) for event in events.iter_sse() if event.event in ("sources", "done")
        )["sources"]

    assert sources and all(source["filename"] == LINN and source["ocr"] for source in sources)
    assert all(passage["ocr"] and passage["page"] == 1 for source in sources for passage in source["passages"])


def test_a_text_pdf_is_not_marked_recognised(client, server, pdfs):
    paper = "academic_2col_naacl06-shinyama.pdf"
    assert upload_paths(client, "paper", pdfs / paper).status_code == 200

    assert not any(passage.parent.ocr for passage in found(server, "paper", "preemptive information extraction"))


def test_a_scan_without_tesseract_is_refused_saying_how_to_install_it(build_app_services, tmp_path, pdfs):
    services = build_app_services(tmp_path / "data", ocr_tesseract_path="/nonexistent/tesseract")
    with serve(services) as running, httpx.Client(base_url=running.url, timeout=300) as client:
        body = assert_error(
            upload_paths(client, "scans", pdfs / LINN), 422, "UNREADABLE_DOCUMENT", reason="ocr_unavailable",
            filename=LINN,
        )
        assert "Tesseract" in body["message"] and "apt-get install tesseract-ocr" in body["message"]
        assert services.documents.list("scans") == []
