"""DOCX (python-docx): a DOCX has no fixed pages, so its "pages" are the stretches between explicit page breaks and
page-starting section breaks. The archive and the body's size are checked (loaders/package.py) before python-docx
builds the body: 64 MB of empty paragraphs would be 11 M lxml nodes and 1.35 GB."""

from __future__ import annotations

import io
import itertools

import docx
from docx.oxml.ns import qn
from docx.oxml.xmlchemy import BaseOxmlElement

from backend.errors import UnsupportedFileType
from backend.ingest.loaders.package import ZIP_MAGIC, check_element_count, open_package
from backend.ingest.loaders.text import corrupt, pages_or_no_text
from backend.models import Page

_KIND = "Word document"
_DOCX_MAIN_PART = "word/document.xml"
# Page breaks travel through the text as form feeds (which XML text cannot contain) until pages are split.
_PAGE_BREAK = "\f"
_W_P, _W_TBL, _W_TR, _W_TC = qn("w:p"), qn("w:tbl"), qn("w:tr"), qn("w:tc")
_W_SDT, _W_SDT_CONTENT = qn("w:sdt"), qn("w:sdtContent")
_W_T, _W_TAB, _W_BR, _W_CR, _W_NO_BREAK_HYPHEN = (
    qn("w:t"),
    qn("w:tab"),
    qn("w:br"),
    qn("w:cr"),
    qn("w:noBreakHyphen"),
)
_W_PAGE_BREAK_BEFORE = f"{qn('w:pPr')}/{qn('w:pageBreakBefore')}"
_W_SECT_PR = qn("w:sectPr")
_W_PARAGRAPH_SECT_PR = f"{qn('w:pPr')}/{_W_SECT_PR}"
_W_VAL, _W_TYPE = qn("w:val"), qn("w:type")


def load_docx(name: str, data: bytes) -> list[Page]:
    if not data.startswith(ZIP_MAGIC):
        raise UnsupportedFileType(
            f"“{name}” is named .docx but is not a Word document (older binary .doc files are not supported: "
            "save it as .docx first).",
            filename=name,
        )
    with open_package(name, data, _KIND, _DOCX_MAIN_PART) as archive:
        check_element_count(name, _KIND, archive, [_DOCX_MAIN_PART], too_many="paragraphs and other parts")
    try:
        body = docx.Document(io.BytesIO(data)).element.body
    except Exception as error:  # python-docx and lxml raise many types for a damaged package
        raise corrupt(name, _KIND) from error
    return pages_or_no_text(name, _document_text(body).split(_PAGE_BREAK))


def _document_text(body: BaseOxmlElement) -> str:
    new_page_after = _paragraphs_ending_a_section_before_a_new_page(body)
    return "".join(
        _block_text(child) + (_PAGE_BREAK if child in new_page_after else "") for child in body.iterchildren()
    )


def _paragraphs_ending_a_section_before_a_new_page(body: BaseOxmlElement) -> set[BaseOxmlElement]:
    # A section's properties sit in the paragraph that ends it (the last section's at the end of the body), and
    # their type says how *that* section starts: so a break's kind is read from the section after it. Walked child
    # by child: an XPath over the whole body fails on libxml2's node-set limit for very long documents.
    sections = [
        (child, properties)
        for child in body.iterchildren(_W_P, _W_SECT_PR)
        if (properties := child if child.tag == _W_SECT_PR else child.find(_W_PARAGRAPH_SECT_PR)) is not None
    ]
    return {
        ending
        for (ending, _), (_, following) in itertools.pairwise(sections)
        if not _is_continuous(following)
    }


def _blocks_text(container: BaseOxmlElement) -> str:
    return "".join(_block_text(child) for child in container.iterchildren())


def _block_text(block: BaseOxmlElement) -> str:
    if block.tag == _W_P:
        return _paragraph_text(block)
    if block.tag == _W_TBL:
        return _table_text(block)
    if block.tag == _W_SDT:  # a content control wrapping paragraphs and tables
        return "".join(_blocks_text(content) for content in block.iterchildren(_W_SDT_CONTENT))
    return ""


def _paragraph_text(paragraph: BaseOxmlElement) -> str:
    # Runs sit directly in the paragraph or one or two levels down (hyperlinks, insertions, fields, content
    # controls). Going no deeper skips text boxes, whose runs a drawing's fallback copy would duplicate.
    runs = paragraph.xpath("./w:r | ./*/w:r | ./*/*/w:r")
    text = "".join(_run_text(run) for run in runs) + "\n"
    if _is_on(paragraph.find(_W_PAGE_BREAK_BEFORE)):
        return _PAGE_BREAK + text
    return text


def _run_text(run: BaseOxmlElement) -> str:
    pieces = []
    for child in run.iterchildren():
        if child.tag == _W_T:
            pieces.append(child.text or "")
        elif child.tag == _W_TAB:
            pieces.append("\t")
        elif child.tag in (_W_BR, _W_CR):
            pieces.append(_PAGE_BREAK if child.get(_W_TYPE) == "page" else "\n")
        elif child.tag == _W_NO_BREAK_HYPHEN:
            pieces.append("-")
    return "".join(pieces)


def _table_text(table: BaseOxmlElement) -> str:
    """One line per row, cells joined by " | ", so a row stays together (on one page) for retrieval."""
    rows = []
    for row in table.iterchildren(_W_TR):
        cells = (
            " ".join(_blocks_text(cell).replace(_PAGE_BREAK, " ").split()) for cell in row.iterchildren(_W_TC)
        )
        rows.append(" | ".join(cell for cell in cells if cell) + "\n")
    return "".join(rows)


def _is_on(toggle: BaseOxmlElement | None) -> bool:
    return toggle is not None and toggle.get(_W_VAL, "true") not in ("0", "false", "off")


def _is_continuous(section: BaseOxmlElement) -> bool:
    section_type = section.find(_W_TYPE)
    return section_type is not None and section_type.get(_W_VAL) == "continuous"
