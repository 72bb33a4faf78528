"""Loaders for slides, spreadsheets, CSV, web pages and e-books on real files built here with the libraries that
write them (tests/support/documents.py), and on hostile ones: zip bombs, a sheet declaring billions of cells, a web
page of 50 MB, broken zips and content of another kind than the name says."""

from __future__ import annotations

import datetime
import io
import re
import zipfile
from collections.abc import Callable

import openpyxl
import pptx
import pytest
from pptx.chart.data import CategoryChartData, XyChartData
from pptx.enum.chart import XL_CHART_TYPE
from pptx.opc.constants import CONTENT_TYPE, RELATIONSHIP_TYPE
from pptx.opc.package import Part
from pptx.opc.packuri import PackURI
from pptx.oxml import parse_xml
from pptx.slide import Slide
from pptx.util import Inches

from backend.errors import UnreadableDocument, UnsupportedFileType
from backend.ingest.chunker import ParentChildChunker
from backend.ingest.loaders import html as html_loader
from backend.ingest.loaders import load_document
from backend.ingest.loaders.html import MAX_HTML_ELEMENTS
from backend.models import LoadedDocument
from tests.support import documents

CORRUPT, NO_TEXT, TOO_COMPLEX = UnreadableDocument.CORRUPT, UnreadableDocument.NO_TEXT, UnreadableDocument.TOO_COMPLEX
OLE_COMPOUND_FILE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)  # the old binary .doc/.ppt/.xls container


def _refusal(filename: str, data: bytes) -> UnreadableDocument:
    with pytest.raises(UnreadableDocument) as raised:
        load_document(filename, data)
    assert raised.value.details["filename"] == filename
    return raised.value


def _texts(document: LoadedDocument) -> dict[int, str]:
    return {page.number: page.text for page in document.pages}


def _zip(members: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return buffer.getvalue()


# --- PPTX ---------------------------------------------------------------------------------------------------------


def test_pptx_slides_are_pages_with_title_body_tables_groups_and_speaker_notes() -> None:
    document = load_document("deck.pptx", documents.deck())

    assert document.file_type == "pptx"
    assert _texts(document) == {
        1: "Axolotl regeneration\n\nAxolotls regrow their limbs\nHearts regrow too\n\n"
           "Speaker notes:\nMention that they live in Lake Xochimilco.",
        2: "Survey counts\n\nSpecies | Count\nAxolotl | 1,204",
        4: "Grouped caption",  # the blank slide 3 is skipped but counted
    }


def test_pptx_slides_are_cited_as_slides() -> None:
    document = load_document("deck.pptx", documents.deck())

    assert [(page.number, page.label) for page in document.pages] == [(1, "Slide 1"), (2, "Slide 2"), (4, "Slide 4")]


def test_pptx_counts_its_blank_last_slide() -> None:
    presentation = pptx.Presentation(io.BytesIO(documents.deck()))
    presentation.slides.add_slide(presentation.slide_layouts[6])
    buffer = io.BytesIO()
    presentation.save(buffer)

    document = load_document("deck.pptx", buffer.getvalue())

    assert document.page_count == 5 and document.pages[-1].number == 4


def test_pptx_footer_and_date_are_read_on_the_first_slide_and_slide_numbers_not_at_all() -> None:
    document = load_document("deck.pptx", documents.deck_with_footers())

    assert _texts(document) == {
        1: "Finding 1\n\n24 November 2026\n\nAxolotl Institute, confidential", 2: "Finding 2", 3: "Finding 3",
    }


def _slide_deck(title: str, add: Callable[[Slide], object]) -> bytes:
    """A deck of one slide titled ``title``, to which ``add`` adds its shapes."""
    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])
    slide.shapes.title.text = title
    add(slide)
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def _survey_charts(slide: Slide) -> None:
    counts = CategoryChartData()
    counts.categories = ["2023", "2024", "2025"]
    counts.add_series("Axolotls", (10, 20, 35.5))
    counts.add_series("Newts", (4, None, 6))
    chart = slide.shapes.add_chart(
        XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(2), Inches(6), Inches(4), counts
    ).chart
    chart.has_title = True
    chart.chart_title.text_frame.text = "Animals counted in Lake Xochimilco"
    points = XyChartData()
    points.add_series("Regrowth").add_data_point(1, 3)
    slide.shapes.add_chart(XL_CHART_TYPE.XY_SCATTER, Inches(1), Inches(6), Inches(3), Inches(1), points)


def test_pptx_charts_are_read_by_their_title_and_series() -> None:
    """Their words and numbers are shown on the slide, but held in the chart's part, not in a text frame."""
    deck = _slide_deck("Survey counts", _survey_charts)

    assert _texts(load_document("survey.pptx", deck))[1] == (
        "Survey counts\n\nAnimals counted in Lake Xochimilco\nAxolotls: 2023: 10; 2024: 20; 2025: 35.5\n"
        "Newts: 2023: 4; 2025: 6\n\nRegrowth: 3"
    )


def test_pptx_chart_that_cannot_be_read_costs_the_chart_not_the_deck() -> None:
    damaged = documents.replace_part(
        _slide_deck("Survey counts", _survey_charts), "ppt/charts/chart1.xml",
        lambda xml: re.sub(r"<c:v>10</c:v>", "<c:v>n/a</c:v>", xml),
    )

    assert _texts(load_document("survey.pptx", damaged)) == {1: "Survey counts\n\nRegrowth: 3"}


_DIAGRAM = "http://schemas.openxmlformats.org/drawingml/2006/diagram"
_DRAWING = "http://schemas.openxmlformats.org/drawingml/2006/main"


def _with_smart_art(slide: Slide, nodes: list[str]) -> None:
    """A SmartArt diagram of ``nodes`` on ``slide``, as PowerPoint writes one: a frame naming the part of its
    data model, whose "node" points hold the text (the whole diagram's "doc" point is not shown)."""
    points = "".join(
        f'<dgm:pt modelId="{number}" type="{kind}"><dgm:t><a:bodyPr/><a:p><a:r><a:t>{text}</a:t></a:r></a:p>'
        "</dgm:t></dgm:pt>"
        for number, (kind, text) in enumerate([("doc", "Not shown"), *(("node", node) for node in nodes)])
    )
    model = f'<dgm:dataModel xmlns:dgm="{_DIAGRAM}" xmlns:a="{_DRAWING}"><dgm:ptLst>{points}</dgm:ptLst></dgm:dataModel>'
    package = slide.part.package
    data = Part(PackURI("/ppt/diagrams/data1.xml"), CONTENT_TYPE.DML_DIAGRAM_DATA, package, model.encode())
    _add_smart_art_frame(slide, slide.part.relate_to(data, RELATIONSHIP_TYPE.DIAGRAM_DATA))


def _add_smart_art_frame(slide: Slide, relationship: str) -> None:
    """The frame of a SmartArt diagram whose data model is the part ``relationship`` names."""
    slide.shapes._spTree.append(parse_xml(
        '<p:graphicFrame xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" '
        f'xmlns:a="{_DRAWING}" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
        '<p:nvGraphicFramePr><p:cNvPr id="9" name="Diagram"/><p:cNvGraphicFramePr/><p:nvPr/></p:nvGraphicFramePr>'
        '<p:xfrm><a:off x="0" y="0"/><a:ext cx="100" cy="100"/></p:xfrm><a:graphic>'
        f'<a:graphicData uri="{_DIAGRAM}"><dgm:relIds xmlns:dgm="{_DIAGRAM}" r:dm="{relationship}"/></a:graphicData>'
        "</a:graphic></p:graphicFrame>"
    ))


def test_pptx_smart_art_is_read_a_node_a_line() -> None:
    deck = _slide_deck("Regeneration steps", lambda slide: _with_smart_art(slide, ["Wound", "Blastema", "Limb"]))

    assert _texts(load_document("steps.pptx", deck)) == {1: "Regeneration steps\n\nWound\nBlastema\nLimb"}


def test_pptx_smart_art_whose_data_is_missing_costs_the_diagram_not_the_deck() -> None:
    deck = _slide_deck("Regeneration steps", lambda slide: _add_smart_art_frame(slide, "rId99"))

    assert _texts(load_document("steps.pptx", deck)) == {1: "Regeneration steps"}


def test_pptx_without_text_is_no_text() -> None:
    presentation = pptx.Presentation()
    presentation.slides.add_slide(presentation.slide_layouts[6])
    buffer = io.BytesIO()
    presentation.save(buffer)

    assert _refusal("blank.pptx", buffer.getvalue()).reason == NO_TEXT


@pytest.mark.parametrize("data", [OLE_COMPOUND_FILE, _zip({"word/document.xml": "<w/>"})], ids=["ppt", "docx"])
def test_pptx_of_another_kind_is_unsupported(data: bytes) -> None:
    with pytest.raises(UnsupportedFileType, match="not a PowerPoint presentation"):
        load_document("talk.pptx", data)


def test_truncated_pptx_is_corrupt() -> None:
    data = documents.deck()
    assert _refusal("cut.pptx", data[: len(data) // 2]).reason == CORRUPT


def test_pptx_zip_bomb_is_refused_from_the_zip_directory() -> None:
    bombed = documents.with_zip_bomb(documents.deck(), "ppt/media/image9.png")
    assert len(bombed) < 2 * 1024 * 1024

    refusal = _refusal("bomb.pptx", bombed)

    assert refusal.reason == TOO_COMPLEX and "expands to more than 512 MB" in refusal.message


def test_pptx_of_millions_of_empty_paragraphs_is_refused_before_it_is_parsed() -> None:
    def bloat(xml: str) -> str:
        return xml.replace("</p:spTree>", '<p:sp><p:txBody><a:bodyPr/>' + "<a:p/>" * 2_100_000 + "</p:txBody></p:sp></p:spTree>")

    refusal = _refusal("bomb.pptx", documents.replace_part(documents.deck(), "ppt/slides/slide1.xml", bloat))

    assert refusal.reason == TOO_COMPLEX and "too many shapes" in refusal.message


# --- XLSX ---------------------------------------------------------------------------------------------------------


def test_xlsx_sheets_are_pages_of_rows_labelled_by_their_headers() -> None:
    document = load_document("book.xlsx", documents.workbook())

    texts = _texts(document)
    assert document.file_type == "xlsx" and set(texts) == {1, 3}  # the empty sheet 2 is skipped but counted
    lines = texts[1].splitlines()
    assert lines[0] == "Sheet: Sales"
    # The formula's cached value is read; the one never calculated leaves nothing behind, not "=C2+1".
    assert lines[1] == "Region: Region 1; Quarter: Q1; Revenue: 1002; Day: 2024-01-03; Doubled: 2004"
    assert len(lines) == 301 and "Uncalculated" not in texts[1] and "=" not in texts[1]
    assert texts[3] == "Sheet: Notes\nAxolotls are amphibians that keep their gills."


def test_xlsx_sheets_are_cited_by_their_names() -> None:
    document = load_document("book.xlsx", documents.workbook())

    assert [(page.number, page.label) for page in document.pages] == [(1, "Sheet “Sales”"), (3, "Sheet “Notes”")]


def test_every_chunk_of_a_sheet_says_what_its_values_are() -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    headers = [f"Measurement {column}" for column in range(12)]
    sheet.append(headers)  # rows too long for one line of a 400-character chunk
    for row in range(200):
        sheet.append([f"value {row}-{column}" for column in range(12)])
    narrow = openpyxl.Workbook()
    narrow.active.append(["City", "Population"])
    for row in range(500):
        narrow.active.append([f"Town {row}", row * 1000])

    for workbook, labels in ((book, headers), (narrow, ["City", "Population"])):
        buffer = io.BytesIO()
        workbook.save(buffer)
        document = load_document("wide.xlsx", buffer.getvalue())
        _, chunks = ParentChildChunker(2000, 200, 400, 50).chunk(document, "doc")
        assert len(chunks) > 10
        labelled = re.compile(rf"^({'|'.join(labels)}): \S")
        for chunk in chunks:
            for line in chunk.text.splitlines():
                for value in line.split("; "):
                    assert line == "Sheet: Sheet" or labelled.match(value), f"{value!r} in chunk {chunk.text!r}"


def test_xlsx_with_numbers_in_its_first_row_labels_columns_by_letter() -> None:
    book = openpyxl.Workbook()
    book.active.append([2023, 2024])
    book.active.append([17, 19])
    buffer = io.BytesIO()
    book.save(buffer)

    assert _texts(load_document("years.xlsx", buffer.getvalue())) == {
        1: "Sheet: Sheet\nColumn A: 2023; Column B: 2024\nColumn A: 17; Column B: 19"
    }


def test_xlsx_percentages_read_as_the_sheet_shows_them() -> None:
    """Stored as 0.125 but shown as 12.5 %: a question about "12.5%" must find the row. A first row of
    percentages holds numbers, so it is not taken for the header."""
    book = openpyxl.Workbook()
    for row in ([0.125, 0.07, 1200.5], [1, 0.5, 3]):
        book.active.append(row)
    for cell, number_format in (("A1", "0.0%"), ("B1", "0%"), ("C1", "#,##0.00"), ("A2", "0%")):
        book.active[cell].number_format = number_format
    buffer = io.BytesIO()
    book.save(buffer)

    assert _texts(load_document("growth.xlsx", buffer.getvalue())) == {
        1: "Sheet: Sheet\nColumn A: 12.5%; Column B: 7%; Column C: 1,200.50\nColumn A: 100%; Column B: 0.5; Column C: 3"
    }


def test_xlsx_numbers_dates_and_times_read_as_their_formats_show_them() -> None:
    """Currencies, separators, fixed decimals, dates and times as the sheet shows them, not as stored; a format
    not covered (a fraction) reads the stored value, and a first row of formatted numbers is still no header."""
    rows = [
        (1234.5, '"$"#,##0.00_);[Red]("$"#,##0.00)'), (-1234.5, '"$"#,##0.00_);[Red]("$"#,##0.00)'),
        (1234.5, '#,##0.00\\ [$€-407]'), (9876543, "#,##0"), (3.14159, "0.00"), (1_250_000, '0.0,,"M"'),
        (datetime.date(2023, 3, 15), "d-mmm-yy"), (datetime.date(2023, 3, 15), "mmmm d, yyyy"),
        (datetime.datetime(2023, 3, 15, 14, 30), "m/d/yyyy h:mm AM/PM"), (datetime.date(2023, 3, 15), "mm-dd-yy"),
        (datetime.datetime(2023, 3, 15), "yyyy-mm-dd h:mm:ss"), (datetime.time(9, 5), "h:mm"), (0.75, "# ?/?"),
        (0.5, "General"), (0.1 + 0.2, "General"),
    ]
    book = openpyxl.Workbook()
    book.active.append([value for value, _ in rows])
    for cell, (_, number_format) in zip(book.active[1], rows, strict=True):
        cell.number_format = number_format
    buffer = io.BytesIO()
    book.save(buffer)

    text = _texts(load_document("ledger.xlsx", buffer.getvalue()))[1]
    assert text.splitlines()[1].split("; ") == [
        "Column A: $1,234.50", "Column B: ($1,234.50)", "Column C: 1,234.50 €", "Column D: 9,876,543",
        "Column E: 3.14", "Column F: 1.3M", "Column G: 15-Mar-23", "Column H: March 15, 2023",
        "Column I: 3/15/2023 2:30 PM", "Column J: 2023-03-15", "Column K: 2023-03-15", "Column L: 9:05",
        "Column M: 0.75", "Column N: 0.5", "Column O: 0.3",
    ]


def test_xlsx_title_rows_above_the_table_are_not_its_header() -> None:
    book = openpyxl.Workbook()
    for row in (["Quarterly report"], [], ["Region", "Sales"], ["North", 1200]):
        book.active.append(row)
    buffer = io.BytesIO()
    book.save(buffer)

    assert _texts(load_document("report.xlsx", buffer.getvalue())) == {
        1: "Sheet: Sheet\nQuarterly report\nRegion: North; Sales: 1200"
    }


def test_xlsx_without_cells_is_no_text() -> None:
    buffer = io.BytesIO()
    openpyxl.Workbook().save(buffer)
    assert _refusal("empty.xlsx", buffer.getvalue()).reason == NO_TEXT


@pytest.mark.parametrize("data", [OLE_COMPOUND_FILE, _zip({"ppt/presentation.xml": "<p/>"})], ids=["xls", "pptx"])
def test_xlsx_of_another_kind_is_unsupported(data: bytes) -> None:
    with pytest.raises(UnsupportedFileType, match="not an Excel workbook|not a spreadsheet"):
        load_document("sheet.xlsx", data)


def test_truncated_xlsx_is_corrupt() -> None:
    data = documents.workbook()
    assert _refusal("cut.xlsx", data[: len(data) // 2]).reason == CORRUPT


def test_xlsx_zip_bomb_is_refused_from_the_zip_directory() -> None:
    refusal = _refusal("bomb.xlsx", documents.with_zip_bomb(documents.workbook(), "xl/media/image1.png"))
    assert refusal.reason == TOO_COMPLEX and "expands to more than 512 MB" in refusal.message


def test_xlsx_declaring_a_billion_cells_is_refused() -> None:
    data = documents.with_declared_dimension(documents.workbook(), "A1:XFD1048576")

    refusal = _refusal("huge.xlsx", data)

    assert refusal.reason == TOO_COMPLEX and "17,179,869,184 cells" in refusal.message


def test_xlsx_with_cells_spread_over_the_widest_rows_is_refused() -> None:
    """No dimension declared, 2,000 rows each with a cell in the last column: openpyxl would pad every row to
    16,384 values."""
    rows = "".join(f'<row r="{row}"><c r="XFD{row}"><v>1</v></c></row>' for row in range(1, 2001))

    refusal = _refusal("spread.xlsx", _workbook_with_rows(rows, dimension=False))

    assert refusal.reason == TOO_COMPLEX and "more rows and columns" in refusal.message


def test_xlsx_with_too_many_filled_cells_is_refused() -> None:
    rows = "".join(f'<row r="{row}">' + '<c t="n"><v>7</v></c>' * 100 + "</row>" for row in range(1, 5002))

    refusal = _refusal("full.xlsx", _workbook_with_rows(rows))

    assert refusal.reason == TOO_COMPLEX and "500,000 filled cells" in refusal.message


def _workbook_with_rows(rows: str, dimension: bool = True) -> bytes:
    """The test workbook with its first sheet's rows replaced by ``rows`` (XML), and without its declared
    dimension unless ``dimension``."""

    def replace(xml: str) -> str:
        xml = xml if dimension else re.sub(r"<dimension[^>]*/>", "", xml)
        return re.sub(r"<sheetData>.*</sheetData>", f"<sheetData>{rows}</sheetData>", xml, flags=re.DOTALL)

    return documents.replace_part(documents.workbook(), "xl/worksheets/sheet1.xml", replace)


# --- CSV ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_csv_rows_are_labelled_by_the_header_whatever_the_delimiter(delimiter: str) -> None:
    document = load_document("species.csv", documents.csv_file(delimiter))

    assert document.file_type == "csv"
    assert _texts(document) == {
        1: "Species: Axolotl; Habitat: Lake Xochimilco, Mexico; Length: 23 cm\n"
           "Species: Olm; Habitat: Caves; Length: 30 cm"
    }


def test_tsv_is_read_with_tabs_and_legacy_encodings_are_decoded() -> None:
    data = "Name\tCity\nRenée\tZürich\n".encode("cp1252")
    assert _texts(load_document("people.tsv", data)) == {1: "Name: Renée; City: Zürich"}


def test_csv_in_a_cyrillic_legacy_encoding_is_decoded() -> None:
    data = "Город;Продажи\nМосква;1200\nКазань;800\n".encode("cp1251")

    assert _texts(load_document("sales.csv", data)) == {1: "Город: Москва; Продажи: 1200\nГород: Казань; Продажи: 800"}


def test_csv_value_spanning_lines_stays_on_its_row() -> None:
    data = b'Question,Answer\n"Where do axolotls live?","In lakes,\nnear Mexico City"\n'
    assert _texts(load_document("faq.csv", data)) == {
        1: "Question: Where do axolotls live?; Answer: In lakes, near Mexico City"
    }


def test_binary_data_named_csv_is_unsupported() -> None:
    with pytest.raises(UnsupportedFileType, match="named as a CSV file"):
        load_document("data.csv", bytes(range(256)) * 8)


# --- HTML ---------------------------------------------------------------------------------------------------------


def test_html_main_text_keeps_headings_and_drops_scripts_navigation_and_footer() -> None:
    document = load_document("axolotl.html", documents.WEB_PAGE)

    assert document.file_type == "html"
    assert _texts(document) == {
        1: "# The axolotl\n\nAxolotls can regrow their limbs, their hearts and even parts of their brains.\n\n"
           "## Habitat\n\nThey live in Lake Xochimilco near Mexico City, in cool fresh water full of plants."
    }


def test_short_html_fragment_is_read_whole_as_markdown() -> None:
    assert _texts(load_document("note.htm", b"<p>Remember the <b>axolotl</b> tank.</p>")) == {
        1: "Remember the **axolotl** tank."
    }


def test_html_in_the_encoding_its_meta_tag_declares() -> None:
    page = '<html><head><meta charset="windows-1251"></head><body><p>Аксолотль живёт в озере.</p></body></html>'
    assert "Аксолотль живёт в озере." in load_document("ru.html", page.encode("cp1251")).pages[0].text


def test_xhtml_with_an_xml_declaration_is_read() -> None:
    page = b'<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml"><body><p>Hi</p></body></html>'
    assert _texts(load_document("page.xhtml", page)) == {1: "Hi"}


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"just some words, no markup", "contains no HTML"), (b"%PDF-1.7\n" + bytes(range(256)) * 4, "binary data")],
)
def test_html_of_another_kind_is_unsupported(data: bytes, message: str) -> None:
    with pytest.raises(UnsupportedFileType, match=message):
        load_document("page.html", data)


def test_html_with_only_scripts_is_no_text() -> None:
    assert _refusal("app.html", b"<html><body><script>run()</script></body></html>").reason == NO_TEXT


def test_a_page_with_no_article_is_read_whole(monkeypatch) -> None:
    """Stand-in: trafilatura's extract runs for real on the tree but its answer is dropped (no article), which
    real pages rarely make it do: the fallback reads the whole page, its scripts and drawings still left out."""
    real_extract = html_loader.trafilatura.extract

    def no_article(tree, **options) -> None:
        real_extract(tree, **options)  # its answer is dropped

    monkeypatch.setattr(html_loader.trafilatura, "extract", no_article)
    page = b"<html><body><script>var hidden = 1;</script><svg><text>drawn</text></svg><p>Axolotls regrow.</p>" \
           b"<p>They live in lakes.</p></body></html>"

    assert _texts(load_document("page.html", page)) == {1: "Axolotls regrow. They live in lakes."}


def test_html_of_50_mb_is_refused_before_it_is_parsed() -> None:
    page = b"<html><body>" + b"<p>Axolotls regrow their limbs.</p>\n" * (50 * 1024 * 1024 // 37) + b"</body></html>"

    refusal = _refusal("huge.html", page)

    assert refusal.reason == TOO_COMPLEX and "more than 10 MB" in refusal.message


def test_html_of_too_many_elements_is_refused() -> None:
    page = b"<html><body>" + b"<p>a</p>" * (MAX_HTML_ELEMENTS + 1) + b"</body></html>"

    refusal = _refusal("long.html", page)

    assert refusal.reason == TOO_COMPLEX and "HTML elements" in refusal.message


# --- EPUB ---------------------------------------------------------------------------------------------------------


def test_epub_chapters_are_pages_in_reading_order() -> None:
    story = "The axolotl stays a larva all its life, and keeps the feathery gills of its youth. " * 4
    book = documents.epub({
        "one.xhtml": f"<h1>Chapter one</h1><p>{story}</p>",
        "blank.xhtml": "",
        "two.xhtml": f"<h1>Chapter two</h1><p>They regrow limbs within weeks.</p><p>{story}</p>",
    })

    document = load_document("book.epub", book)

    assert document.file_type == "epub"
    assert _texts(document) == {
        1: f"# Chapter one\n\n{story.strip()}",
        3: f"# Chapter two\n\nThey regrow limbs within weeks.\n\n{story.strip()}",
    }


@pytest.mark.parametrize("toc_format", ["nav", "ncx"])
def test_epub_chapters_are_cited_by_their_titles_in_the_table_of_contents(toc_format: str) -> None:
    book = documents.epub(
        {
            "cover.xhtml": "<p>The Axolotl Book, by a keeper of salamanders</p>",
            "one.xhtml": "<p>Axolotls keep their gills.</p>",
            "one-continued.xhtml": "<p>They regrow limbs within weeks.</p>",
            "two.xhtml": "<p>They live in Lake Xochimilco.</p>",
        },
        toc={"one.xhtml": "1. Larvae  for\n life", "two.xhtml": "2. Home"},
        toc_format=toc_format,
    )

    document = load_document("book.epub", book)

    # Before the first entry, a chapter is numbered; a file the table leaves out continues the one before it.
    assert [page.label for page in document.pages] == ["Chapter 1", "1. Larvae for life", "1. Larvae for life",
                                                       "2. Home"]


def test_epub_chapters_without_a_table_of_contents_are_numbered() -> None:
    book = documents.epub({"one.xhtml": "<p>Axolotls keep their gills.</p>", "two.xhtml": "<p>Lake.</p>"})

    assert [page.label for page in load_document("book.epub", book).pages] == ["Chapter 1", "Chapter 2"]


def test_an_epub_whose_table_of_contents_is_missing_still_reads() -> None:
    book = documents.epub({"one.xhtml": "<p>Axolotls keep their gills.</p>"}, toc={"one.xhtml": "One"})
    broken = documents.replace_part(book, "OEBPS/content.opf", lambda xml: xml.replace('"nav.xhtml"', '"gone.xhtml"'))

    (page,) = load_document("book.epub", broken).pages

    assert "Axolotls keep their gills." in page.text and page.label == "Chapter 1"


def test_an_epub_with_html_entities_xml_does_not_define_still_reads() -> None:
    book = documents.epub({"one.xhtml": "<p>Axolotls keep their gills.</p>"}, toc={"one.xhtml": "One"})
    sloppy = documents.replace_part(book, "OEBPS/nav.xhtml", lambda xml: xml.replace("One", "One&nbsp;"))
    sloppy = documents.replace_part(sloppy, "OEBPS/text/one.xhtml", lambda xml: xml.replace("keep", "keep&nbsp;"))

    (page,) = load_document("book.epub", sloppy).pages

    # HTML entities XML does not define, in the table of contents and in a chapter: read past, as browsers do.
    assert "Axolotls keep" in page.text and "their gills." in page.text and page.label == "One"


def test_epub_of_another_kind_is_unsupported() -> None:
    with pytest.raises(UnsupportedFileType, match="not a book in EPUB format"):
        load_document("book.epub", _zip({"word/document.xml": "<w/>"}))


def test_epub_with_a_broken_package_is_corrupt() -> None:
    book = documents.epub({"one.xhtml": "<p>Text</p>"})
    broken = documents.replace_part(book, "OEBPS/content.opf", lambda xml: xml[: len(xml) // 2])

    assert _refusal("broken.epub", broken).reason == CORRUPT
    assert _refusal("cut.epub", book[: len(book) // 2]).reason == CORRUPT


def test_the_unsupported_type_error_names_the_new_types() -> None:
    with pytest.raises(UnsupportedFileType) as raised:
        load_document("slides.key", b"anything")

    assert all(extension in raised.value.message for extension in (".pptx", ".xlsx", ".csv", ".html", ".epub"))
