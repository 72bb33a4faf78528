"""Reading order of PDF pages laid out in columns (backend/ingest/loaders/pdf_columns.py): a page drawn line by
line across its columns is read column by column; a page of a table's cells, or of one column, as before."""

from __future__ import annotations

import io
from pathlib import Path

import pypdfium2
import pytest
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from backend.ingest.loaders import load_document
from backend.ingest.loaders.pdf_columns import column_ordered_text

TITLE = "Two Unrelated Stories Printed Side by Side in Two Columns"
LEFT = [
    "Axolotls keep their feathery gills for life",
    "and never leave the water of the lakes in",
    "the valley of Mexico, where they hunt worms",
    "and insect larvae at the bottom of canals",
    "among the floating gardens of Xochimilco.",
    "A lost leg grows back within a few weeks,",
    "bones, muscles and nerves included, and",
    "even parts of the heart and brain regrow.",
]
RIGHT = [
    "Lighthouse keepers on the northern coast",
    "trimmed the wicks every four hours of the",
    "night and wound the clockwork that turned",
    "the great lens, logging the weather, each",
    "passing ship and every lamp they lit in a",
    "book that the inspector read twice a year.",
    "Storms could keep the relief boat away for",
    "weeks, so the stores held a winter of food.",
]
FOOTER = "Printed for a test of reading order: the footer runs across both of the columns above it."


def _pdf(drawn: list[tuple[float, float, str]]) -> bytes:
    """A one-page PDF drawing each (x, y, text) in 10 pt Helvetica, in the order given."""
    writer = PdfWriter()
    page = writer.add_blank_page(612, 792)
    helvetica = DictionaryObject({
        NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica"),
    })
    page[NameObject("/Resources")] = DictionaryObject({
        NameObject("/Font"): DictionaryObject({NameObject("/F1"): helvetica}),
    })
    stream = DecodedStreamObject()
    stream.set_data(" ".join(f"BT /F1 10 Tf {x} {y} Td ({text}) Tj ET" for x, y, text in drawn).encode("latin-1"))
    page.replace_contents(stream)
    output = io.BytesIO()
    writer.write(output)
    return output.getvalue()


def _two_columns_drawn_across() -> bytes:
    """The title, then each line of the left column followed by the line beside it in the right column (as a
    typesetter working line by line draws them), then the footer."""
    drawn = [(72, 740, TITLE)]
    for row, (left, right) in enumerate(zip(LEFT, RIGHT, strict=True)):
        drawn += [(72, 710 - 12 * row, left), (290, 710 - 12 * row, right)]
    return _pdf([*drawn, (72, 600, FOOTER)])


def test_a_page_drawn_across_two_columns_is_read_column_by_column() -> None:
    text = load_document("columns.pdf", _two_columns_drawn_across()).pages[0].text

    assert text == "\n".join([TITLE, *LEFT, *RIGHT, FOOTER])


def test_text_drawn_far_off_the_page_does_not_hide_its_columns() -> None:
    # A glyph a long way right of the page (hidden there by its maker) is read after the page's text.
    drawn = [(72, 740, TITLE)]
    for row, (left, right) in enumerate(zip(LEFT, RIGHT, strict=True)):
        drawn += [(72, 710 - 12 * row, left), (290, 710 - 12 * row, right)]
    text = load_document("off-page.pdf", _pdf([*drawn, (72, 600, FOOTER), (1_000_000, 650, "Hidden")])).pages[0].text

    assert text == "\n".join([TITLE, *LEFT, *RIGHT, FOOTER, "Hidden"])


def test_a_table_of_short_cells_beside_each_other_is_read_row_by_row() -> None:
    rows = [("Apples", "12"), ("Pears", "7"), ("Plums", "30"), ("Cherries", "140"), ("Quinces", "3")]
    drawn = [(x, 700 - 14 * row, cell) for row, cells in enumerate(rows) for x, cell in zip((72, 320), cells)]

    lines = load_document("table.pdf", _pdf(drawn)).pages[0].text.split("\n")

    assert [line.split() for line in lines] == [list(cells) for cells in rows]


def test_the_shared_irs_instructions_read_each_column_down(pdfs: Path) -> None:
    """The instructions for Form 1040-NR are drawn line by line across three columns."""
    document = load_document("i1040nr.pdf", (pdfs / "long_us_irs_i1040nr_50p.pdf").read_bytes())
    page = " ".join(next(page for page in document.pages if page.number == 6).text.split())

    # Each sentence is on several lines of one column, beside lines of other sentences.
    assert (
        "1. Tax withheld from wages earned in the United States and taxes withheld at the source from various "
        "items of income from U.S. sources other than wages." in page
    )
    assert "You must divide your income for the tax year into the following three categories." in page
    assert "To make the election, attach a statement to your return for the year of the election." in page


@pytest.mark.parametrize("filename", [
    "long_us_irs_irm_2.3.59_400p.pdf",  # a margin of section headings beside the text, terminal-screen tables
    "tables_ca-warn-report_16p.pdf",
    "tables_fbi_nics-background-checks-2015-11.pdf",
    "tables_ibm_redpaper_redp5110_sampled.pdf",
    "nonenglish_fr_olap_paper.pdf",  # one column
])
def test_shared_pages_of_tables_or_one_column_have_no_columns(pdfs: Path, filename: str) -> None:
    """Their text stays pypdf's, as it read before columns were looked for."""
    document = pypdfium2.PdfDocument(pdfs / filename)
    try:
        assert [number for number, page in enumerate(document, start=1) if column_ordered_text(page)] == []
    finally:
        document.close()


def test_the_shared_federal_register_reads_its_three_columns_in_order(pdfs: Path) -> None:
    """Its stream draws one column after the other (pypdf read it right): the columns' text stays whole, in order."""
    document = load_document("fr.pdf", (pdfs / "gov_us_federal-register-2020-17221.pdf").read_bytes())
    page = " ".join(next(page for page in document.pages if page.number == 2).text.split())

    first_column = page.find(
        "Investigation of the accident has been completed by the Indonesian authorities (Komite Nasional "
        "Keselamatan Transportasi (KNKT)) with assistance from the National Transportation Safety Board (NTSB)"
    )
    second_column = page.find("On November 7, 2018, the FAA issued Emergency AD 2018–23–51 as an interim corrective")
    assert 0 <= first_column < second_column
