"""Slides, spreadsheets, CSV, web pages and e-books uploaded to a real server: each ends indexed with its text found
by the search `axiom search` runs (the hybrid retriever), on the right page; hostile ones end with their typed error
and nothing stored."""

from __future__ import annotations

import pytest

from backend.api.settings import ApiSettings
from tests.api.server import serve
from tests.api.support import assert_error, upload
from tests.api.test_hostile_uploads import assert_nothing_stored
from tests.support import documents
from tests.support.waiting import BACKGROUND_WAIT_SECONDS

STORY = "The axolotl stays a larva all its life, and keeps the feathery gills of its youth. " * 4


@pytest.fixture(scope="module")
def server(build_app_services, tmp_path_factory):
    # Every file is read within its request, so a refusal is the upload's own response.
    limits = ApiSettings(background_ingest_chars=2**30, inline_read_seconds=BACKGROUND_WAIT_SECONDS)
    with serve(build_app_services(tmp_path_factory.mktemp("formats")), limits) as s:
        yield s


@pytest.mark.parametrize(
    ("filename", "data", "query", "page", "expected"),
    [
        ("deck.pptx", documents.deck(), "Where do axolotls live?", 1, "Lake Xochimilco"),
        ("deck.pptx", documents.deck(), "How many axolotls were counted in the survey?", 2, "Axolotl | 1,204"),
        ("book.xlsx", documents.workbook(), "Revenue of Region 42", 1, "Region: Region 42; Quarter: Q1; Revenue: 1043"),
        ("species.csv", documents.csv_file(";"), "Which species lives in caves, and how long is it?", 1, "Species: Olm; Habitat: Caves; Length: 30 cm"),
        ("axolotl.html", documents.WEB_PAGE, "What can axolotls regrow?", 1, "## Habitat"),
        ("book.epub", documents.epub({"one.xhtml": "<p>Prologue.</p>", "two.xhtml": f"<h1>Gills</h1><p>{STORY}</p>"}),
         "Does the axolotl keep its gills?", 2, "# Gills"),
    ],
    ids=["pptx-notes", "pptx-table", "xlsx", "csv", "html", "epub"],
)
def test_an_uploaded_file_is_indexed_and_found_by_search(client, server, filename, data, query, page, expected):
    chat = filename.replace(".", "-")
    response = upload(client, chat, (filename, data))

    assert response.status_code == 200, response.text
    assert response.json()["uploaded"][0]["name"] == filename
    result = server.services.retriever.retrieve(chat, query)
    assert any(passage.parent.page == page and expected in passage.parent.text for passage in result.relevant), [
        (passage.score, passage.parent.page, passage.parent.text[:200]) for passage in result.candidates
    ]


def test_html_boilerplate_is_not_indexed(client, server):
    assert upload(client, "boilerplate", ("axolotl.html", documents.WEB_PAGE)).status_code == 200
    for noise in ("SCRIPTNOISE", "NAVNOISE", "FOOTERNOISE"):
        assert not server.services.retriever.retrieve("boilerplate", noise).relevant


@pytest.mark.parametrize(
    ("filename", "build", "message"),
    [
        ("bomb.pptx", lambda: documents.with_zip_bomb(documents.deck(), "ppt/media/image9.png"), "expands to more than"),
        ("bomb.xlsx", lambda: documents.with_zip_bomb(documents.workbook(), "xl/media/image1.png"),
         "expands to more than"),
        ("huge.xlsx", lambda: documents.with_declared_dimension(documents.workbook(), "A1:XFD1048576"),
         "17,179,869,184 cells"),
        ("huge.html", lambda: b"<html><body>" + b"<p>Axolotls regrow their limbs.</p>\n" * 1_400_000 + b"</body></html>",
         "more than 10 MB"),  # 50 MB, just under the upload limit
    ],
    ids=["pptx-zip-bomb", "xlsx-zip-bomb", "xlsx-billion-cells", "html-50-mb"],
)
def test_a_hostile_file_is_refused_as_too_complex_and_nothing_is_stored(client, server, filename, build, message):
    chat = "hostile-" + filename.replace(".", "-")
    body = assert_error(
        upload(client, chat, (filename, build())), 422, "UNREADABLE_DOCUMENT", reason="too_complex", filename=filename
    )
    assert message in body["message"]
    assert_nothing_stored(server, chat)


@pytest.mark.parametrize(
    ("filename", "data", "status", "code"),
    [
        ("cut.xlsx", documents.workbook()[:4000], 422, "UNREADABLE_DOCUMENT"),
        ("slides.pptx", documents.workbook(), 415, "UNSUPPORTED_FILE_TYPE"),
        ("table.csv", bytes(range(256)) * 4, 415, "UNSUPPORTED_FILE_TYPE"),
    ],
    ids=["truncated-xlsx", "xlsx-named-pptx", "binary-named-csv"],
)
def test_a_broken_or_misnamed_file_gets_its_typed_error(client, server, filename, data, status, code):
    chat = "broken-" + filename.replace(".", "-")
    assert_error(upload(client, chat, (filename, data)), status, code, filename=filename)
    assert_nothing_stored(server, chat)
