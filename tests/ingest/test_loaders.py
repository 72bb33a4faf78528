"""Loaders on real files: every file of the shared PDF corpus, plus PDF, TXT, MD and DOCX files built here.

How each shared file ends (pypdf 7.1 + cryptography + fonttools), asserted in SHARED_LOADS / SHARED_REFUSALS:
  loaded     academic_2col_* (16, 13, 10, 8, 10 pages), encrypted_ownerpw_only (2: opens with the empty password),
             gov_us_federal-register (15), long_de_GeoTopo (117), long_us_irs_i1040nr (50),
             long_us_irs_irm 400p (398: pages 2 and 400 are blank), malformed_pdfplumber-issue-932 (1: "2021 3 31"),
             malformed_zen_of_python_corrupted (1: pypdf recovers it), nonenglish ar_habibi / ar_rtl_word / fr / ko,
             tables_* (16, 1, 17 of 18), the OCR ground-truth .txt and SOURCE.md
  by OCR     scanned_c02-22, scanned_docling_ocr_test, scanned_linn_two-column_brochure (no text layer: recognised),
             scanned_multipage_mixed (only page 4 of 6 has a text layer: the other five are recognised, and page 3,
             a chart, is found to show no text),
             garbled_textlayer_sbert (shifted glyph codes, no spaces: its rendered pages are recognised instead)
  ENCRYPTED  encrypted_aes256_userpw_foo, encrypted_rc4-128_userpw_foo, encrypted_userpw_openpassword
  EMPTY      malformed_empty_0_bytes          CORRUPT  malformed_header_and_eof_only
  NO_TEXT    nonenglish_ja_jo (CID font without a usable ToUnicode map: decodes to mojibake, and PDFium renders the
             page blank, the font not being embedded)
(tests/ingest/test_ocr.py checks what OCR reads in detail.)
"""

from __future__ import annotations

import io
import random
import re
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docx
import pytest
from docx.document import Document as WordDocument
from docx.enum.section import WD_SECTION
from docx.opc.constants import CONTENT_TYPE as CT
from docx.opc.constants import RELATIONSHIP_TYPE as RT
from docx.opc.packuri import PackURI
from docx.opc.part import Part
from docx.oxml import OxmlElement, parse_xml
from docx.oxml.ns import qn
from lxml import etree
from pptx.chart.chart import Chart
from pptx.chart.data import CategoryChartData
from pptx.chart.xmlwriter import ChartXmlWriter
from pptx.enum.chart import XL_CHART_TYPE
from pptx.oxml import parse_xml as pptx_parse_xml
from pypdf import PdfWriter
from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject, NumberObject

from backend.errors import UnreadableDocument, UnsupportedFileType
from backend.ingest.loaders import load_document, normalise_text
from backend.ingest.loaders.text import pages_with_text
from backend.models import LoadedDocument
from tests.support import pdf_files

EMPTY, ENCRYPTED, CORRUPT, NO_TEXT = (
    UnreadableDocument.EMPTY,
    UnreadableDocument.ENCRYPTED,
    UnreadableDocument.CORRUPT,
    UnreadableDocument.NO_TEXT,
)


@dataclass(frozen=True)
class Loads:
    """A file that loads: its page count, the pages with no text (skipped), and a phrase its text must contain."""

    page_count: int
    contains: str
    blank: tuple[int, ...] = ()

    @property
    def page_numbers(self) -> list[int]:
        return [number for number in range(1, self.page_count + 1) if number not in self.blank]


SHARED_LOADS = {
    "academic_2col_bert_1810.04805.pdf": Loads(16, "Bidirectional Encoder Representations"),
    "academic_2col_dpr_2004.04906.pdf": Loads(13, "Dense Passage Retrieval"),
    "academic_2col_drqa_chen2017.pdf": Loads(10, "Reading Wikipedia to Answer Open-Domain Questions"),
    "academic_2col_naacl06-shinyama.pdf": Loads(8, "Preemptive Information Extraction"),
    "academic_2col_squad_rajpurkar2016.pdf": Loads(10, "SQuAD"),
    "encrypted_ownerpw_only_copy-protected.pdf": Loads(2, "LayoutParser"),
    "gov_us_federal-register-2020-17221.pdf": Loads(15, "FEDERAL REGISTER"),
    # "Definition" is printed with an "fi" ligature: found only because ligatures are expanded.
    "long_de_GeoTopo_117p.pdf": Loads(117, "Definition"),
    "long_us_irs_i1040nr_50p.pdf": Loads(50, "Instructions for Form 1040NR"),
    "long_us_irs_irm_2.3.59_400p.pdf": Loads(400, "IDRS Terminal Responses", blank=(2, 400)),
    "malformed_pdfplumber-issue-932.pdf": Loads(1, "2021 3 31"),
    "malformed_zen_of_python_corrupted.pdf": Loads(1, "Beautiful is better than ugly."),
    "nonenglish_ar_habibi.pdf": Loads(1, "habibi"),
    "nonenglish_ar_rtl_word.pdf": Loads(1, "البرمجة"),
    "nonenglish_fr_olap_paper.pdf": Loads(12, "Résumés et interrogations de logs de requêtes OLAP"),
    "nonenglish_ko_text-with-tables.pdf": Loads(1, "포인트"),
    "scanned_multipage_mixed.pdf": Loads(6, "It was the year of Our Lord one thousand", blank=(3,)),
    "scanned_c02-22_huckfinn_page.pdf": Loads(1, "went tip-toeing along a path amongst"),
    "scanned_docling_ocr_test.pdf": Loads(1, "Docling bundles PDF document conversion"),
    "scanned_linn_two-column_brochure.pdf": Loads(1, "32 Track MIDI Sequence Recorder"),
    "garbled_textlayer_sbert_2page_excerpt.pdf": Loads(2, "Sentence Embeddings using Siamese BERT-Networks"),
    "tables_ca-warn-report_16p.pdf": Loads(16, "Notice Date"),
    "tables_fbi_nics-background-checks-2015-11.pdf": Loads(1, "Alabama 18,870"),
    "tables_ibm_redpaper_redp5110_sampled.pdf": Loads(18, "Row and Column Access Control", blank=(17,)),
    "scanned_linn_two-column_brochure.groundtruth.txt": Loads(1, "The LinnSequencer"),
    "SOURCE.md": Loads(1, "Real-world PDF test set"),
}

SHARED_REFUSALS = {
    "encrypted_aes256_userpw_foo.pdf": ENCRYPTED,
    "encrypted_rc4-128_userpw_foo.pdf": ENCRYPTED,
    "encrypted_userpw_openpassword.pdf": ENCRYPTED,
    "malformed_empty_0_bytes.pdf": EMPTY,
    "malformed_header_and_eof_only.pdf": CORRUPT,
    "nonenglish_ja_jo.pdf": NO_TEXT,
}

# What the text of a loaded page never contains after normalisation.
_UNNORMALISED = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\t\ufeff]|  |\n\n\n| \n|\n |^\s|\s$")


def _refusal(filename: str, data: bytes) -> UnreadableDocument:
    with pytest.raises(UnreadableDocument) as raised:
        load_document(filename, data)
    return raised.value


def _text(document: LoadedDocument) -> str:
    return "\n".join(page.text for page in document.pages)


# --- the shared corpus --------------------------------------------------------------------------------------------


def test_every_shared_file_has_an_expected_outcome(shared_data: Path) -> None:
    on_disk = {path.name for path in (shared_data / "pdfs").iterdir()}
    assert on_disk == SHARED_LOADS.keys() | SHARED_REFUSALS.keys()


@pytest.mark.parametrize("filename", sorted(SHARED_LOADS))
def test_shared_file_loads_with_real_page_numbers(shared_data: Path, filename: str) -> None:
    expected = SHARED_LOADS[filename]

    document = load_document(filename, (shared_data / "pdfs" / filename).read_bytes())

    assert document.filename == filename
    assert [page.number for page in document.pages] == expected.page_numbers
    assert document.page_count == expected.page_count
    assert all(page.text and not _UNNORMALISED.search(page.text) for page in document.pages)
    assert expected.contains in _text(document)


@pytest.mark.parametrize("filename", sorted(SHARED_REFUSALS))
def test_shared_file_is_refused_with_its_reason(shared_data: Path, filename: str) -> None:
    refusal = _refusal(filename, (shared_data / "pdfs" / filename).read_bytes())

    assert refusal.reason == SHARED_REFUSALS[filename]
    assert filename in refusal.message


# --- PDF ----------------------------------------------------------------------------------------------------------


def test_pdf_pages_without_text_are_skipped_but_keep_real_numbers_and_count() -> None:
    document = load_document("report.pdf", pdf_files.pdf(["First page", "", "Third page", ""]))

    assert document.file_type == "pdf"
    assert [(page.number, page.text) for page in document.pages] == [(1, "First page"), (3, "Third page")]
    assert document.page_count == 4  # the blank last page too


def _with_page_labels(pdf: bytes, *ranges: tuple[int, int, str, int]) -> bytes:
    """``pdf`` printing its pages' numbers by ``ranges`` of (first index, last index, style, start)."""
    writer = PdfWriter(clone_from=io.BytesIO(pdf))
    for first, last, style, start in ranges:
        writer.set_page_label(first, last, style=style, start=start)
    output = io.BytesIO()
    writer.write(output)
    return output.getvalue()


def test_pdf_page_printing_another_number_is_cited_by_both() -> None:
    """A preface numbered i, ii and a body starting again at 1: "Page 1" alone would name two pages."""
    pdf = _with_page_labels(
        pdf_files.pdf(["Preface", "Contents", "Chapter one", "Chapter two"]), (0, 1, "/r", 1), (2, 3, "/D", 1)
    )

    document = load_document("book.pdf", pdf)

    assert [(page.number, page.label) for page in document.pages] == [
        (1, "Page i (PDF page 1)"), (2, "Page ii (PDF page 2)"), (3, "Page 1 (PDF page 3)"), (4, "Page 2 (PDF page 4)"),
    ]


def test_pdf_page_printing_its_own_position_is_page_n() -> None:
    document = load_document("report.pdf", _with_page_labels(pdf_files.pdf(["One", "Two"]), (0, 1, "/D", 1)))

    assert [page.label for page in document.pages] == ["", ""]


def test_shared_pdf_with_a_roman_numbered_preface_is_cited_by_its_printed_numbers(pdfs: Path) -> None:
    document = load_document("GeoTopo.pdf", (pdfs / "long_de_GeoTopo_117p.pdf").read_bytes())

    labels = {page.number: page.label for page in document.pages}
    assert labels[3] == "Page iii (PDF page 3)" and labels[4] == "Page 1 (PDF page 4)"
    # Page 49 begins section 3.1, so it keeps its running header, which prints its number.
    page_49 = next(page for page in document.pages if page.number == 49)
    assert labels[49] == "Page 46 (PDF page 49)" and page_49.text.startswith("46 3.1. HOMOTOPIE VON WEGEN")


def test_pdf_without_any_text_says_so_and_that_ocr_found_none() -> None:
    refusal = _refusal("scan.pdf", pdf_files.pdf(["", ""]))

    assert refusal.reason == NO_TEXT
    assert "scanned" in refusal.message and "OCR" in refusal.message


@pytest.mark.parametrize("algorithm", ["AES-256", "AES-128", "RC4-128"])
def test_pdf_needing_a_password_asks_for_it_or_to_remove_it(algorithm: str) -> None:
    refusal = _refusal("secret.pdf", pdf_files.encrypted(pdf_files.pdf(["Top secret"]), "user-secret", algorithm))

    assert refusal.reason == ENCRYPTED
    assert "Enter its password" in refusal.message and "remove the password" in refusal.message


def test_pdf_restricted_only_by_an_owner_password_loads() -> None:
    document = load_document("restricted.pdf", pdf_files.encrypted(pdf_files.pdf(["Readable by anyone"]), "", "AES-256"))

    assert _text(document) == "Readable by anyone"


def test_pdf_text_without_word_breaks_is_refused_as_garbled() -> None:
    shifted_glyphs = "RdmsdmbdADQSRdmsdmbdDladcchmfrtrhmfRhWldrdADQSMdsvnpjr" * 5

    assert _refusal("shifted.pdf", pdf_files.pdf([shifted_glyphs])).reason == NO_TEXT


def test_pdf_with_a_long_but_normal_line_loads() -> None:
    sentence = "Ordinary words separated by spaces are never mistaken for garbage. " * 5

    assert _text(load_document("plain.pdf", pdf_files.pdf([sentence]))) == sentence.strip()


def _helvetica(glyph_names: list[str] | None = None) -> DictionaryObject:
    """Helvetica; with ``glyph_names``, its codes from "!" on name those glyphs (outside the Adobe Glyph List:
    no character is said) instead, as a font converted without its character map does."""
    font = DictionaryObject({
        NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica"),
    })
    if glyph_names:
        differences = ArrayObject([NumberObject(ord("!")), *map(NameObject, glyph_names)])
        font[NameObject("/Encoding")] = DictionaryObject({NameObject("/Differences"): differences})
    return font


def _pdf_with_named_glyphs(content: str) -> bytes:
    """A one-page PDF drawing ``content``, whose font /F1 is Helvetica and /F2 names its glyphs "/SM590000" (a
    bullet in an IBM Redbook), "/g40", "/g81" and "/g75"."""
    writer = PdfWriter()
    page = writer.add_blank_page(612, 792)
    fonts = {"/F1": _helvetica(), "/F2": _helvetica(["/SM590000", "/g40", "/g81", "/g75"])}
    page[NameObject("/Resources")] = DictionaryObject({
        NameObject("/Font"): DictionaryObject({NameObject(key): font for key, font in fonts.items()}),
    })
    stream = DecodedStreamObject()
    stream.set_data(content.encode("latin-1"))
    page.replace_contents(stream)
    output = io.BytesIO()
    writer.write(output)
    return output.getvalue()


def test_pdf_glyphs_named_without_a_character_are_not_read_as_their_names() -> None:
    """pypdf reads such a glyph as its name: a list's bullets "/SM590000" would stand in the text."""
    items = ["Security fundamentals", "Current state of security", "Access controls"]
    content = "BT /F1 12 Tf 72 760 Td (Topics covered:) Tj ET " + " ".join(
        f"BT /F2 12 Tf 72 {740 - 20 * index} Td (!) Tj /F1 12 Tf 20 0 Td ({item}) Tj ET"
        for index, item in enumerate(items)
    )

    assert _text(load_document("redbook.pdf", _pdf_with_named_glyphs(content))) == "\n".join(["Topics covered:", *items])


def test_pdf_page_of_many_glyphs_named_without_a_character_is_recognised() -> None:
    """A page whose text is partly in such glyphs ("/g40/g81/g75" for "Enh") is garbled: it is read by OCR."""
    lines = [
        "Axolotls regrow whole limbs within weeks.", "Their hearts repair themselves without scars.",
        "Lake Xochimilco is their only wild home.", "Researchers map the genes that drive it.",
    ]
    shown = " 0 -16 Td ".join(f"({line}) Tj" for line in lines)
    # Under the words, invisible (render mode 3) so that only they are seen: glyphs naming no character.
    named = " ".join(['"#$', "!$#", '$"'] * 10)
    content = f"BT /F1 12 Tf 72 760 Td {shown} ET BT 3 Tr /F2 12 Tf 72 600 Td ({named}) Tj ET"

    page = load_document("brief.pdf", _pdf_with_named_glyphs(content)).pages[0]

    assert page.ocr and "/g" not in page.text
    assert "Lake Xochimilco" in page.text and "repair themselves" in page.text


def test_pdf_page_only_of_glyphs_named_without_a_character_is_sent_to_ocr() -> None:
    """Too few glyphs to judge as garbled, but none shows text: the page is recognised like a scan."""
    recognising: list[tuple[int, int]] = []

    named = " ".join(['"#$', "!$#"] * 10)
    pdf = _pdf_with_named_glyphs(f"BT /F2 12 Tf 72 760 Td ({named}) Tj ET")

    with pytest.raises(UnreadableDocument) as raised:  # they draw nothing here, so OCR finds no text either
        load_document("label.pdf", pdf, on_page=lambda done, total: recognising.append((done, total)))

    assert recognising[-1] == (1, 1) and "OCR" in raised.value.message


@pytest.mark.parametrize(
    "damaged",
    [b"%PDF-1.7\n%%EOF\n", b"%PDF-1.4\n" + b"\x8f\x02garbage" * 100, pdf_files.pdf(["Cut short"])[:120]],
    ids=["header-only", "garbage-body", "truncated"],
)
def test_damaged_pdf_is_corrupt(damaged: bytes) -> None:
    refusal = _refusal("broken.pdf", damaged)

    assert refusal.reason == CORRUPT
    assert "damaged" in refusal.message


def _png() -> bytes:
    def chunk(kind: bytes, payload: bytes) -> bytes:
        return (
            struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)  # 1×1 pixel, 8-bit greyscale
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\x00"))
        + chunk(b"IEND", b"")
    )


def test_png_renamed_to_pdf_is_unsupported() -> None:
    with pytest.raises(UnsupportedFileType, match="not a PDF"):
        load_document("photo.pdf", _png())


# --- TXT and Markdown ---------------------------------------------------------------------------------------------

_GREETING = "Grüße aus Köln — naïve café, “quoted” €5"
_LATIN1_GREETING = "Grüße aus Köln, naïve café à 5 £"


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (_GREETING.encode("utf-8"), _GREETING),
        (_GREETING.encode("utf-8-sig"), _GREETING),
        (_GREETING.encode("utf-16"), _GREETING),
        (_GREETING.encode("cp1252"), _GREETING),
        (_LATIN1_GREETING.encode("latin-1"), _LATIN1_GREETING),
        # 0x81 is undefined in Windows-1252, so only the Latin-1 fallback reads this; the C1 control is dropped.
        (_LATIN1_GREETING.encode("latin-1") + b"\x81", _LATIN1_GREETING),
    ],
    ids=["utf-8", "utf-8-bom", "utf-16-bom", "cp1252", "latin-1", "latin-1-not-cp1252"],
)
def test_text_file_is_decoded(data: bytes, text: str) -> None:
    document = load_document("notes.txt", data)

    assert document.file_type == "txt"
    assert [(page.number, page.text) for page in document.pages] == [(1, text)]


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("日本語のテキストです。これは東京都の天気について説明する文章です。", "shift_jis"),
        ("这是一个中文文本文件，用于测试编码检测。", "gbk"),
        ("한국어 텍스트 파일입니다. 인코딩을 시험합니다.", "euc-kr"),
        ("Это русский текст в кодировке Windows-1251.", "cp1251"),
        ("Ελληνικό κείμενο σε κωδικοποίηση Windows.", "cp1253"),
    ],
    ids=["shift_jis", "gbk", "euc-kr", "cp1251", "cp1253"],
)
def test_text_file_in_a_legacy_encoding_of_another_script_is_decoded(text: str, encoding: str) -> None:
    """Read as Windows-1252, these would be stored as mojibake ("ÕâÊÇÒ»¸ö") that no question ever finds."""
    document = load_document("notes.txt", text.encode(encoding))

    assert _text(document) == text


@pytest.mark.parametrize("filename", ["README.md", "README.markdown", "NOTES.MD"])
def test_markdown_is_one_page_of_its_source(filename: str) -> None:
    document = load_document(filename, b"# Title\n\nSome *emphasis* and a [link](https://example.org).\n")

    assert document.file_type == "md"
    assert _text(document) == "# Title\n\nSome *emphasis* and a [link](https://example.org)."


@pytest.mark.parametrize(
    ("filename", "data"),
    [
        ("empty.txt", b""),
        ("blank.txt", b" \n\t\r\n  "),
        ("blank.pdf", b"\n\n"),
        ("bom.md", "\ufeff \n".encode()),
    ],
)
def test_empty_or_blank_file_is_empty(filename: str, data: bytes) -> None:
    assert _refusal(filename, data).reason == EMPTY


@pytest.mark.parametrize(
    "data",
    [random.Random(7).randbytes(4096), bytes(range(1, 256)) * 16, _png()],
    ids=["random-bytes", "binary-without-nul", "png"],
)
def test_binary_data_named_txt_is_unsupported(data: bytes) -> None:
    with pytest.raises(UnsupportedFileType, match="binary data"):
        load_document("data.txt", data)


def test_normalisation_cleans_extracted_text() -> None:
    raw = "  Cafe\u0301\x00 ﬁnd\u00a0\t  this \r\nline\x07  \r\n\r\n\r\n\r\nnext\u2028last\ufeff  "

    assert normalise_text(raw) == "Café find this\nline\n\nnext\nlast"


def test_normalisation_rejoins_words_hyphenated_across_lines_but_keeps_a_compounds_hyphens() -> None:
    raw = "reading compre-\nhension of left-to-\nright models, state-of-the-\nart in Question-\nAnswering"

    assert normalise_text(raw) == (
        "reading comprehension of left-to-right models, state-of-the-art in Question-\nAnswering"
    )


def test_a_compound_broken_at_its_hyphen_keeps_it_where_the_document_writes_it_so_elsewhere() -> None:
    """Typesetting breaks "sentence-level" at its own hyphen as it breaks "docu-ment" for the line: the document
    itself tells them apart, writing the compound whole elsewhere (here on another page) and never closed up."""
    pages = pages_with_text([
        "We compare sentence-level and Word-Level scores, in a data-base or database.",
        "The sentence-\nlevel model stores each docu-\nment in the data-\nbase;\nword-\nlevel scores and token-\nlevel ones.",
    ])

    assert pages[1].text == (
        "The sentence-level model stores each document in the database;\nword-level scores and tokenlevel ones."
    )


# A bound for a hang, not a speed expectation: read from each of its positions, a file of one 200,000-character
# token took the reader's whole timeout (minutes); read once, it takes milliseconds.
@pytest.mark.timeout(120)
def test_normalisation_reads_a_file_of_one_long_token_once() -> None:
    token = "ab-" * 66_000 + "\nc"

    assert normalise_text(token) == "ab-" * 66_000 + "c"  # a compound broken at its own hyphen keeps it


# --- DOCX ---------------------------------------------------------------------------------------------------------


def _docx(build: Callable[[WordDocument], None]) -> bytes:
    document = docx.Document()
    build(document)
    output = io.BytesIO()
    document.save(output)
    return output.getvalue()


def _report(document: WordDocument) -> None:
    document.add_heading("Quarterly report", level=1)
    document.add_paragraph("Revenue grew in every region.")
    table = document.add_table(rows=2, cols=2)
    for row, values in zip(table.rows, [("Region", "Growth"), ("North", "12%")]):
        for cell, value in zip(row.cells, values):
            cell.text = value
    document.add_paragraph("The table above lists growth per region.")
    document.add_page_break()
    document.add_paragraph("Outlook for next year.")


def test_docx_reads_paragraphs_and_tables_in_order_and_splits_at_page_breaks() -> None:
    document = load_document("report.docx", _docx(_report))

    assert document.file_type == "docx"
    assert [(page.number, page.text) for page in document.pages] == [
        (
            1,
            (
                "Quarterly report\nRevenue grew in every region.\nRegion | Growth\nNorth | 12%\n"
                "The table above lists growth per region."
            ),
        ),
        (2, "Outlook for next year."),
    ]


_W_NAMESPACE = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def _rewrite_docx(data: bytes, edit: Callable[[dict[str, bytes]], None]) -> bytes:
    """``data`` with its parts (bytes by name) changed in place by ``edit``."""
    with zipfile.ZipFile(io.BytesIO(data)) as original:
        parts = {item.filename: original.read(item.filename) for item in original.infolist()}
    edit(parts)
    output = io.BytesIO()
    with zipfile.ZipFile(output, "w") as package:
        for part, content in parts.items():
            package.writestr(part, content)
    return output.getvalue()


def _with_notes(data: bytes, references: dict[str, str], kind: str, notes: dict[str, str]) -> bytes:
    """``data`` with a ``kind`` ("footnote" or "endnote") part holding ``notes`` (text by id), and a reference to
    note ``id`` after each text run ending with ``references[id]``, as Word writes them."""
    return _rewrite_docx(data, lambda parts: _add_notes(parts, references, kind, notes))


def _add_notes(parts: dict[str, bytes], references: dict[str, str], kind: str, notes: dict[str, str]) -> None:
    for note_id, run_end in references.items():
        reference = f'<w:r><w:{kind}Reference w:id="{note_id}"/></w:r>'
        parts["word/document.xml"] = parts["word/document.xml"].replace(
            f"{run_end}</w:t></w:r>".encode(), f"{run_end}</w:t></w:r>{reference}".encode(), 1
        )
    separator = f'<w:{kind} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:{kind}>'
    bodies = "".join(
        f'<w:{kind} w:id="{note_id}"><w:p><w:r><w:{kind}Ref/></w:r><w:r><w:t xml:space="preserve"> {text}</w:t>'
        f"</w:r></w:p></w:{kind}>"
        for note_id, text in notes.items()
    )
    parts[f"word/{kind}s.xml"] = f"<w:{kind}s {_W_NAMESPACE}>{separator}{bodies}</w:{kind}s>".encode()
    parts["[Content_Types].xml"] = parts["[Content_Types].xml"].replace(b"</Types>", (
        f'<Override PartName="/word/{kind}s.xml" '
        f'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.{kind}s+xml"/></Types>'
    ).encode())
    parts["word/_rels/document.xml.rels"] = parts["word/_rels/document.xml.rels"].replace(b"</Relationships>", (
        f'<Relationship Id="rId{kind}s" Target="{kind}s.xml" '
        f'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/{kind}s"/></Relationships>'
    ).encode())


def test_docx_footnotes_are_read_on_the_page_that_refers_to_them() -> None:
    """Word prints a footnote at the foot of its page: its text must be found, and cited on that page."""
    data = _with_notes(
        _docx(_report),
        {"1": "every region.", "2": "next year."},
        "footnote",
        {"1": "Excluding the Osnabrück office.", "2": "Assuming the merger closes."},
    )

    assert [(page.number, page.text) for page in load_document("report.docx", data).pages] == [
        (
            1,
            (
                "Quarterly report\nRevenue grew in every region.[1]\nRegion | Growth\nNorth | 12%\n"
                "The table above lists growth per region.\n\n[1] Excluding the Osnabrück office."
            ),
        ),
        (2, "Outlook for next year.[2]\n\n[2] Assuming the merger closes."),
    ]


def test_docx_endnotes_are_marked_as_word_numbers_them() -> None:
    data = _with_notes(_docx(_report), {"1": "every region.", "2": "growth per region."}, "endnote", {
        "1": "Audited figures.", "2": "See the annex.",
    })

    first_page = load_document("report.docx", data).pages[0].text
    assert "every region.[i]\n" in first_page and "per region.[ii]\n" in first_page
    assert first_page.endswith("\n\n[i] Audited figures.\n[ii] See the annex.")


def _text_box(text: str) -> str:
    """A floating text box's run as Word writes it: a drawing, and the same box again as a fallback picture."""
    namespaces = (
        'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
        'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" '
        'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
        'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
        'xmlns:v="urn:schemas-microsoft-com:vml"'
    )
    box = f"<w:txbxContent><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:txbxContent>"
    return (
        f'<w:r><mc:AlternateContent {namespaces}><mc:Choice Requires="wps"><w:drawing><wp:anchor><a:graphic>'
        f"<a:graphicData><wps:wsp><wps:txbx>{box}</wps:txbx></wps:wsp></a:graphicData></a:graphic></wp:anchor>"
        f"</w:drawing></mc:Choice><mc:Fallback><w:pict><v:shape><v:textbox>{box}</v:textbox></v:shape></w:pict>"
        "</mc:Fallback></mc:AlternateContent></w:r>"
    )


def test_docx_text_boxes_are_read_once_after_the_text_they_are_anchored_in() -> None:
    def add_text_box(parts: dict[str, bytes]) -> None:
        parts["word/document.xml"] = parts["word/document.xml"].replace(
            b"every region.</w:t></w:r>",
            f"every region.</w:t></w:r>{_text_box('Sidebar: audited figures.')}".encode(),
        )

    first_page = load_document("report.docx", _rewrite_docx(_docx(_report), add_text_box)).pages[0].text
    assert first_page.startswith("Quarterly report\nRevenue grew in every region.\nSidebar: audited figures.\n\n")
    assert first_page.count("Sidebar") == 1


def test_docx_a_text_box_in_a_group_is_read_from_the_alternative_holding_it() -> None:
    """A group drawn as a drawing canvas's picture first and as text boxes in its fallback: alternate content
    inside a drawing is chosen as at the top of a run, by the first choice holding text boxes."""
    group = _text_box("Sidebar: audited figures.").replace(
        '<mc:Choice Requires="wps">', '<mc:Choice Requires="wpc"><w:drawing><wp:inline/></w:drawing></mc:Choice>'
        '<mc:Choice Requires="wps">', 1,
    )
    alternate_content = group.removeprefix("<w:r>").removesuffix("</w:r>")
    nested = f'<w:r><w:pict><v:group xmlns:v="urn:schemas-microsoft-com:vml">{alternate_content}</v:group></w:pict></w:r>'

    def add_text_boxes(parts: dict[str, bytes]) -> None:
        parts["word/document.xml"] = parts["word/document.xml"].replace(
            b"every region.</w:t></w:r>", f"every region.</w:t></w:r>{group}".encode(),
        ).replace(b"per region.</w:t></w:r>", f"per region.</w:t></w:r>{nested}".encode())

    first_page = load_document("report.docx", _rewrite_docx(_docx(_report), add_text_boxes)).pages[0].text
    assert first_page.count("Sidebar: audited figures.") == 2


_W_NAMESPACE = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def _outline_list(document: WordDocument) -> tuple[str, str]:
    """A numbering definition of three levels ("1.", "a)", "iv.") and two lists using it, the second restarting
    it; their numIds."""
    levels = "".join(
        f'<w:lvl w:ilvl="{level}"><w:start w:val="1"/><w:numFmt w:val="{number_format}"/>'
        f'<w:lvlText w:val="{text}"/></w:lvl>'
        for level, number_format, text in ((0, "decimal", "%1."), (1, "lowerLetter", "%2)"), (2, "lowerRoman", "%3."))
    )
    numbering = document.part.numbering_part.element
    numbering.insert(0, parse_xml(f'<w:abstractNum {_W_NAMESPACE} w:abstractNumId="90">{levels}</w:abstractNum>'))
    numbering.append(parse_xml(f'<w:num {_W_NAMESPACE} w:numId="90"><w:abstractNumId w:val="90"/></w:num>'))
    numbering.append(parse_xml(
        f'<w:num {_W_NAMESPACE} w:numId="91"><w:abstractNumId w:val="90"/>'
        '<w:lvlOverride w:ilvl="0"><w:startOverride w:val="1"/></w:lvlOverride></w:num>'
    ))
    return "90", "91"


def _list_item(document: WordDocument, text: str, num_id: str, level: int) -> None:
    numbering = document.add_paragraph(text)._p.get_or_add_pPr().get_or_add_numPr()
    numbering.get_or_add_ilvl().val = level
    numbering.get_or_add_numId().val = int(num_id)


def test_docx_list_items_are_read_with_their_numbers() -> None:
    """Word draws list numbers from its numbering definitions, not the text: each item is read with the number it
    shows, counted per list and level, a level restarting under a new item above it and where a list restarts."""
    def build(document: WordDocument) -> None:
        outline, restarted = _outline_list(document)
        document.add_paragraph("Steps:")
        for text in ("Open the valve", "Check the gauge"):
            document.add_paragraph(text, style="List Number")
        document.add_paragraph("Milk", style="List Bullet")
        for text, num_id, level in (
            ("Scope", outline, 0), ("Terms", outline, 1), ("Defined terms", outline, 2), ("Other terms", outline, 2),
            ("Exceptions", outline, 1), ("Duties", outline, 0), ("Of the seller", outline, 1),
            ("Annex", restarted, 0), ("Forms", restarted, 1),
        ):
            _list_item(document, text, num_id, level)
        document.add_paragraph("", style="List Number")  # an empty item: counted, nothing to read
        document.add_paragraph("Close the valve", style="List Number")

    assert load_document("steps.docx", _docx(build)).pages[0].text.splitlines() == [
        "Steps:", "1. Open the valve", "2. Check the gauge", "• Milk",
        "1. Scope", "a) Terms", "i. Defined terms", "ii. Other terms", "b) Exceptions", "2. Duties", "a) Of the seller",
        "1. Annex", "a) Forms", "", "4. Close the valve",
    ]


def test_docx_list_number_templates_name_every_level() -> None:
    """A legal outline ("2.1.") shows each level's number in its template; upper-case letters and numerals too."""
    def build(document: WordDocument) -> None:
        levels = (
            '<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="upperRoman"/><w:lvlText w:val="%1."/></w:lvl>'
            '<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="upperLetter"/><w:lvlText w:val="%1.%2"/></w:lvl>'
            '<w:lvl w:ilvl="2"><w:start w:val="3"/><w:isLgl/><w:numFmt w:val="decimal"/>'
            '<w:lvlText w:val="%1.%2.%3"/></w:lvl>'
        )
        numbering = document.part.numbering_part.element
        numbering.insert(0, parse_xml(f'<w:abstractNum {_W_NAMESPACE} w:abstractNumId="80">{levels}</w:abstractNum>'))
        numbering.append(parse_xml(f'<w:num {_W_NAMESPACE} w:numId="80"><w:abstractNumId w:val="80"/></w:num>'))
        for text, level in (("Part", 0), ("Part", 0), ("Chapter", 1), ("Chapter", 1), ("Clause", 2)):
            _list_item(document, text, "80", level)

    assert load_document("law.docx", _docx(build)).pages[0].text.splitlines() == [
        "I. Part", "II. Part", "II.A Chapter", "II.B Chapter", "2.2.3 Clause",
    ]


def test_docx_list_numbers_come_from_paragraph_styles_and_list_styles() -> None:
    """Headings numbered by their style (a style based on another keeping its list, at its own level), through a
    list style (a definition linking to the one that holds the levels), as Word's multilevel lists are."""
    def build(document: WordDocument) -> None:
        numbering = document.part.numbering_part.element
        levels = "".join(
            f'<w:lvl w:ilvl="{level}"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="{text}"/>'
            "</w:lvl>"
            for level, text in ((0, "%1"), (1, "%1.%2"))
        )
        numbering.insert(0, parse_xml(
            f'<w:abstractNum {_W_NAMESPACE} w:abstractNumId="71"><w:styleLink w:val="Outline"/>{levels}'
            "</w:abstractNum>"
        ))
        numbering.insert(0, parse_xml(
            f'<w:abstractNum {_W_NAMESPACE} w:abstractNumId="70"><w:numStyleLink w:val="Outline"/></w:abstractNum>'
        ))
        numbering.append(parse_xml(f'<w:num {_W_NAMESPACE} w:numId="71"><w:abstractNumId w:val="71"/></w:num>'))
        numbering.append(parse_xml(f'<w:num {_W_NAMESPACE} w:numId="70"><w:abstractNumId w:val="70"/></w:num>'))
        styles = document.styles.element
        for style_type, style_id, based_on, numbering_properties in (
            ("numbering", "Outline", "", '<w:numId w:val="71"/>'),
            ("paragraph", "Chapter", "", '<w:numId w:val="70"/>'),
            ("paragraph", "Section", '<w:basedOn w:val="Chapter"/>', '<w:ilvl w:val="1"/>'),
        ):
            styles.append(parse_xml(
                f'<w:style {_W_NAMESPACE} w:type="{style_type}" w:styleId="{style_id}">{based_on}'
                f"<w:pPr><w:numPr>{numbering_properties}</w:numPr></w:pPr></w:style>"
            ))
        for text, style in (("Scope", "Chapter"), ("Terms", "Section"), ("Exceptions", "Section"), ("Duties", "Chapter")):
            document.add_paragraph(text)._p.get_or_add_pPr().get_or_add_pStyle().val = style

    assert load_document("contract.docx", _docx(build)).pages[0].text.splitlines() == [
        "1 Scope", "1.1 Terms", "1.2 Exceptions", "2 Duties",
    ]


def test_docx_numbering_that_cannot_be_read_costs_the_numbers_not_the_document() -> None:
    def build(document: WordDocument) -> None:
        _outline_list(document)
        document.part.numbering_part.element.find(f"{qn('w:abstractNum')}/{qn('w:lvl')}/{qn('w:start')}").set(
            qn("w:val"), "one"
        )
        _list_item(document, "Scope", "90", 0)

    assert load_document("steps.docx", _docx(build)).pages[0].text == "Scope"


def test_docx_list_start_beyond_words_bound_is_held_to_it() -> None:
    def build(document: WordDocument) -> None:
        _outline_list(document)
        levels = document.part.numbering_part.element.findall(f"{qn('w:abstractNum')}/{qn('w:lvl')}")
        levels[1].find(qn("w:start")).set(qn("w:val"), "2000000")  # the "a)" level: one letter per 26 counted
        _list_item(document, "Scope", "90", 0)
        _list_item(document, "Terms", "90", 1)

    assert len(load_document("steps.docx", _docx(build)).pages[0].text) < 1400


_CHART = "http://schemas.openxmlformats.org/drawingml/2006/chart"


def _add_chart(document: WordDocument, title: str, series: dict[str, tuple[float, ...]]) -> None:
    """A column chart of ``series`` by year, drawn in a paragraph of its own, its part written by python-pptx's
    chart XML writer (as Word writes a chart: the same DrawingML chart part, related to the document)."""
    data = CategoryChartData()
    data.categories = ["2023", "2024"]
    for name, values in series.items():
        data.add_series(name, values)
    chart_space = pptx_parse_xml(ChartXmlWriter(XL_CHART_TYPE.COLUMN_CLUSTERED, data).xml.encode())
    chart = Chart(chart_space, None)
    chart.has_title = True
    chart.chart_title.text_frame.text = title
    number = len([rel for rel in document.part.rels.values() if rel.reltype == RT.CHART]) + 1
    part = Part(PackURI(f"/word/charts/chart{number}.xml"), CT.DML_CHART, etree.tostring(chart_space),
                document.part.package)
    relationship = document.part.relate_to(part, RT.CHART)
    document.add_paragraph().add_run()._r.append(parse_xml(
        f'<w:drawing {_W_NAMESPACE} xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"'
        ' xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"'
        ' xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
        '<wp:inline><wp:extent cx="5486400" cy="3200400"/><wp:docPr id="1" name="Chart 1"/><a:graphic>'
        f'<a:graphicData uri="{_CHART}"><c:chart xmlns:c="{_CHART}" r:id="{relationship}"/></a:graphicData>'
        "</a:graphic></wp:inline></w:drawing>"
    ))


def test_docx_charts_are_read_by_their_title_and_series_where_they_are_drawn() -> None:
    """A chart's words and numbers are in its own part, not in the document's text."""
    def build(document: WordDocument) -> None:
        document.add_paragraph("Counts rose.")
        _add_chart(document, "Animals counted", {"Axolotls": (10, 20.5), "Newts": (4, 6)})
        document.add_paragraph("Both species grew.")

    assert load_document("survey.docx", _docx(build)).pages[0].text == (
        "Counts rose.\n\nAnimals counted\nAxolotls: 2023: 10; 2024: 20.5\nNewts: 2023: 4; 2024: 6\nBoth species grew."
    )


def test_docx_chart_that_cannot_be_read_costs_the_chart_not_the_document() -> None:
    def build(document: WordDocument) -> None:
        document.add_paragraph("Counts rose.")
        _add_chart(document, "Animals counted", {"Axolotls": (10, 20.5)})

    def damage(parts: dict[str, bytes]) -> None:
        parts["word/charts/chart1.xml"] = parts["word/charts/chart1.xml"].replace(b"<c:v>10</c:v>", b"<c:v>n/a</c:v>")

    assert load_document("survey.docx", _rewrite_docx(_docx(build), damage)).pages[0].text == "Counts rose."


def _new_page_at(run) -> None:
    """Marks ``run`` as where Word's layout began a new page."""
    run._r.insert(0, OxmlElement("w:lastRenderedPageBreak"))


def _laid_out_by_word(document: WordDocument) -> None:
    """Pages as Word saves its layout: a rendered page break where each new page began, also after an explicit
    break (which began that page already) and inside a table row laid out on a new page."""
    document.add_paragraph("Intro on page one.")
    document.add_paragraph("Still page one.")
    _new_page_at(document.add_paragraph().add_run("Word laid this out on page two."))
    document.add_page_break()
    _new_page_at(document.add_paragraph().add_run("Page three begins with an explicit break."))
    table = document.add_table(rows=2, cols=2)
    for row, values in zip(table.rows, [("Region", "Growth"), ("North", "12%")]):
        for cell, value in zip(row.cells, values):
            cell.text = value
    _new_page_at(table.rows[1].cells[1].paragraphs[0].runs[0])


def test_docx_pages_are_those_word_laid_out_when_it_saved_the_file() -> None:
    document = load_document("report.docx", _docx(_laid_out_by_word))

    assert [(page.number, page.text) for page in document.pages] == [
        (1, "Intro on page one.\nStill page one."),
        (2, "Word laid this out on page two."),
        (3, "Page three begins with an explicit break.\nRegion | Growth"),
        (4, "North | 12%"),
    ]


def _with_headers_and_footers(document: WordDocument) -> None:
    """Section 1: a header, a footer and another header on its first page, over two pages (the second laid out
    by Word); section 2 shows section 1's; section 3 a header of its own, and section 1's footer."""
    first = document.sections[0]
    first.header.paragraphs[0].text = "Axolotl Institute"
    first.footer.paragraphs[0].text = "Confidential"
    first.different_first_page_header_footer = True
    first.first_page_header.paragraphs[0].text = "Annual report 2025"
    document.add_paragraph("Intro on page one.")
    _new_page_at(document.add_paragraph().add_run("Page two, laid out by Word."))
    document.add_section(WD_SECTION.NEW_PAGE).different_first_page_header_footer = False
    _new_page_at(document.add_paragraph().add_run("Methods on page three."))
    document.add_section(WD_SECTION.NEW_PAGE).header.is_linked_to_previous = False
    document.sections[2].header.paragraphs[0].text = "Appendix"
    _new_page_at(document.add_paragraph().add_run("Tables on page four."))


def test_docx_headers_and_footers_are_read_once_on_the_first_page_showing_them() -> None:
    document = load_document("report.docx", _docx(_with_headers_and_footers))

    assert [(page.number, page.text) for page in document.pages] == [
        (1, "Annual report 2025\nAxolotl Institute\nIntro on page one.\nConfidential"),
        (2, "Page two, laid out by Word."),
        (3, "Methods on page three."),
        (4, "Appendix\nTables on page four."),
    ]


def test_docx_positioned_tabs_keep_words_apart() -> None:
    """Word's built-in headers place their columns with absolute-position tabs ("Title", tab, "Date")."""

    def build(document: WordDocument) -> None:
        run = document.sections[0].header.paragraphs[0].add_run("Axolotl Institute")
        for alignment, text in (("center", "Annual report"), ("right", "2025")):
            tab = OxmlElement("w:ptab")
            tab.set(qn("w:relativeTo"), "margin")
            tab.set(qn("w:alignment"), alignment)
            tab.set(qn("w:leader"), "none")
            run._r.append(tab)
            run._r.append(OxmlElement("w:t"))
            run._r[-1].text = text
        document.add_paragraph("Body text.")

    assert _text(load_document("report.docx", _docx(build))) == "Axolotl Institute Annual report 2025\nBody text."


def test_docx_without_breaks_is_one_page() -> None:
    def build(document: WordDocument) -> None:
        document.add_paragraph("Only paragraph one.")
        document.add_paragraph("Only paragraph two.")

    assert [page.number for page in load_document("short.docx", _docx(build)).pages] == [1]


def test_docx_blank_page_is_skipped_but_counted() -> None:
    def build(document: WordDocument) -> None:
        document.add_paragraph("Before the blank page.")
        document.add_page_break()
        document.add_page_break()
        document.add_paragraph("After the blank page.")

    pages = load_document("gap.docx", _docx(build)).pages

    assert [(page.number, page.text) for page in pages] == [
        (1, "Before the blank page."),
        (3, "After the blank page."),
    ]


@pytest.mark.parametrize(
    ("start", "page_numbers"), [(WD_SECTION.NEW_PAGE, [1, 2]), (WD_SECTION.CONTINUOUS, [1])]
)
def test_docx_section_starting_a_new_page_splits_pages(start: WD_SECTION, page_numbers: list[int]) -> None:
    def build(document: WordDocument) -> None:
        document.add_paragraph("First section.")
        document.add_section(start)
        document.add_paragraph("Second section.")

    document = load_document("sections.docx", _docx(build))

    assert [page.number for page in document.pages] == page_numbers
    assert _text(document).split() == ["First", "section.", "Second", "section."]


def test_docx_without_text_is_no_text() -> None:
    assert _refusal("blank.docx", _docx(lambda document: None)).reason == NO_TEXT


def test_zip_without_word_document_named_docx_is_unsupported() -> None:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("xl/workbook.xml", "<workbook/>")

    with pytest.raises(UnsupportedFileType, match="not a Word document"):
        load_document("sheet.docx", archive.getvalue())


def test_legacy_doc_named_docx_is_unsupported() -> None:
    ole_compound_file = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)

    with pytest.raises(UnsupportedFileType, match=r"\.doc files are not supported"):
        load_document("old.docx", ole_compound_file)


def test_truncated_docx_is_corrupt() -> None:
    data = _docx(_report)

    assert _refusal("cut.docx", data[: len(data) // 2]).reason == CORRUPT


# --- names --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("filename", ["setup.exe", "photo.gif", "README", "archive.pdf.zip", ""])
def test_unknown_extension_is_unsupported_and_names_the_supported_types(filename: str) -> None:
    with pytest.raises(UnsupportedFileType) as raised:
        load_document(filename, b"anything")

    assert all(
        extension in raised.value.message for extension in (".pdf", ".txt", ".md", ".markdown", ".docx")
    )


@pytest.mark.parametrize(
    ("uploaded_as", "kept_as"),
    [
        ("../../etc/x.txt", "x.txt"),
        ("C:\\Users\\me\\Notes.TXT", "Notes.TXT"),
        ("/abs/path/to/notes.md", "notes.md"),
        ("evil\u202etxt.md", "eviltxt.md"),
        ("line\nbreak.txt", "linebreak.txt"),
    ],
)
def test_filename_keeps_only_the_base_name(uploaded_as: str, kept_as: str) -> None:
    assert load_document(uploaded_as, b"hello").filename == kept_as
