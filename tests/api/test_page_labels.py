"""Files uploaded to a real server and asked about through the API: each cited source names its page as the file
does ("Slide 2", "Sheet “Sales”", a chapter's title, "Page 1"), beside its number. The model is scripted
(tests/rag/scripted.py) so that the answer cites its first source; reading, storing, retrieval and the sources are
real."""

from __future__ import annotations

import pytest

from tests.api.server import serve
from tests.api.support import upload
from tests.rag.scripted import ScriptedLLM
from tests.support import documents

STORY = "The axolotl stays a larva all its life, and keeps the feathery gills of its youth. " * 4
BOOK = documents.epub(
    {"cover.xhtml": "<p>The Axolotl Book</p>", "two.xhtml": f"<h1>Gills</h1><p>{STORY}</p>"},
    toc={"two.xhtml": "Chapter 1: Gills for life"},
)


@pytest.fixture(scope="module")
def server(build_app_services, tmp_path_factory):
    llm = ScriptedLLM("The documents say so [Source 1].")
    with serve(build_app_services(tmp_path_factory.mktemp("labels"), llm=llm)) as running:
        yield running


@pytest.mark.parametrize(
    ("filename", "data", "question", "expected"),
    [
        ("deck.pptx", documents.deck(), "How many axolotls were counted in the survey?", {1: "Slide 1", 2: "Slide 2", 4: "Slide 4"}),
        ("book.xlsx", documents.workbook(), "What was the revenue of Region 42?", {1: "Sheet “Sales”", 3: "Sheet “Notes”"}),
        ("book.epub", BOOK, "Does the axolotl keep its gills?", {1: "Chapter 1", 2: "Chapter 1: Gills for life"}),
        ("notes.txt", STORY.encode(), "Does the axolotl keep its gills?", {1: "Page 1"}),
    ],
    ids=["pptx", "xlsx", "epub", "txt"],
)
def test_each_source_names_its_page_by_its_label(client, filename, data, question, expected):
    """``expected``: each page's label; whichever pages retrieval ranks first, the cited ones are named so."""
    chat = filename.replace(".", "-")
    assert upload(client, chat, (filename, data)).status_code == 200

    response = client.post("/chat/", json={"message": question, "chat_id": chat})

    assert response.status_code == 200, response.text
    sources = response.json()["sources"]
    assert sources, response.json()
    labels = {}
    for source in sources:
        assert source["page_label"] == source["page_labels"][0]
        labels |= dict(zip(source["pages"], source["page_labels"], strict=True))
        labels |= {passage["page"]: passage["page_label"] for passage in source["passages"]}
    assert labels and labels.items() <= expected.items(), labels


def test_the_openapi_schema_states_the_labels(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]

    assert "Slide 3" in schemas["SourcePassage"]["properties"]["page_label"]["description"]
    assert schemas["Source"]["properties"]["page_labels"]["items"] == {"type": "string"}
