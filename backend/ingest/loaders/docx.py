"""DOCX (python-docx): a DOCX has no fixed pages, but Word saves where it last laid out each new page (a "rendered"
page break); its "pages" are the stretches between those, explicit page breaks and page-starting section breaks, so
a page is cited by the number Word showed when the file was saved (a file never laid out by Word has only its
explicit breaks). List items are read with their numbers ("1.", "a)", "•": docx_numbering.py), charts by their
title and series (charts.py) after the text before them. Footnotes and endnotes are read onto the page that refers
to them: the reference becomes its mark ("[1]" for a footnote, "[i]" for an endnote, numbered in order as Word
numbers them by default) and the note's text follows at the end of that page. A text box's text follows the text
it is anchored in. Headers and footers are read once, at the top and the bottom of the first page of the section
that shows them (as a PDF's running headers are kept where they first appear): one the section repeats from the
one before is not. The archive and the size of the body, notes, numbering and charts are checked
(loaders/package.py) before python-docx builds the body: 64 MB of empty paragraphs would be 11 M lxml nodes and
1.35 GB."""

from __future__ import annotations

import io
import itertools
import re

import docx
from docx.document import Document as WordDocument
from docx.opc.constants import RELATIONSHIP_TYPE
from docx.oxml import OxmlElement, parse_xml
from docx.oxml.ns import qn
from docx.oxml.xmlchemy import BaseOxmlElement

from backend.errors import UnsupportedFileType
from backend.ingest.loaders.charts import chart_part_text
from backend.ingest.loaders.docx_numbering import number_lists, roman
from backend.ingest.loaders.package import ZIP_MAGIC, check_element_count, open_package
from backend.ingest.loaders.text import LoadedPages, corrupt, pages_or_no_text

_KIND = "Word document"
_DOCX_MAIN_PART = "word/document.xml"
# Parts read besides the body (and the headers and footers): the notes, and the list numbering definitions.
_READ_PARTS = ("word/footnotes.xml", "word/endnotes.xml", "word/numbering.xml")
_HEADER_AND_FOOTER_PARTS = re.compile(r"word/(header|footer)\d*\.xml")
_CHART_PARTS = re.compile(r"word/charts/chart\d*\.xml")
# Page breaks travel through the text as form feeds (which XML text cannot contain) until pages are split.
_PAGE_BREAK = "\f"
# Where Word's layout began a new page, until it is known whether an explicit break began that page already.
_RENDERED_PAGE_BREAK = "\x03"
# Where a section begins, until the pages are known and its headers and footers are read onto the first.
_SECTION_START = "\x04"
_RENDERED_AFTER_EXPLICIT = re.compile(r"(\A|\f)([\s\x04]*?)\x03")
_W_P, _W_TBL, _W_TR, _W_TC = qn("w:p"), qn("w:tbl"), qn("w:tr"), qn("w:tc")
_W_R, _W_SDT, _W_SDT_CONTENT = qn("w:r"), qn("w:sdt"), qn("w:sdtContent")
_W_T, _W_BR, _W_CR, _W_NO_BREAK_HYPHEN = qn("w:t"), qn("w:br"), qn("w:cr"), qn("w:noBreakHyphen")
# A tab, and an absolute-position one (Word's built-in headers put "Title", "Date" and "Page 3" in three columns).
_W_TABS = (qn("w:tab"), qn("w:ptab"))
_W_PAGE_BREAK_BEFORE = f"{qn('w:pPr')}/{qn('w:pageBreakBefore')}"
_W_SECT_PR = qn("w:sectPr")
_W_PARAGRAPH_SECT_PR = f"{qn('w:pPr')}/{_W_SECT_PR}"
_W_VAL, _W_TYPE, _W_ID = qn("w:val"), qn("w:type"), qn("w:id")
_W_FOOTNOTE_REFERENCE, _W_ENDNOTE_REFERENCE = qn("w:footnoteReference"), qn("w:endnoteReference")
_W_LAST_RENDERED_PAGE_BREAK = qn("w:lastRenderedPageBreak")
_W_DRAWING, _W_PICT, _W_TEXT_BOX = qn("w:drawing"), qn("w:pict"), qn("w:txbxContent")
_MARKUP_COMPATIBILITY = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_MC_ALTERNATE_CONTENT = f"{_MARKUP_COMPATIBILITY}AlternateContent"
_MC_CHOICE, _MC_FALLBACK = f"{_MARKUP_COMPATIBILITY}Choice", f"{_MARKUP_COMPATIBILITY}Fallback"
_C_CHART = "{http://schemas.openxmlformats.org/drawingml/2006/chart}chart"
# A note's reference travels through the text as its kind and id between two characters XML text cannot contain,
# until the pages are known and it becomes the note's mark.
_NOTE_REFERENCE = re.compile(r"\x01([fe])(-?\d+)\x02")
_NOTE_KINDS = {"f": RELATIONSHIP_TYPE.FOOTNOTES, "e": RELATIONSHIP_TYPE.ENDNOTES}


def load_docx(name: str, data: bytes) -> LoadedPages:
    if not data.startswith(ZIP_MAGIC):
        raise UnsupportedFileType(
            f"“{name}” is named .docx but is not a Word document (older binary .doc files are not supported: "
            "save it as .docx first).",
            filename=name,
        )
    with open_package(name, data, _KIND, _DOCX_MAIN_PART) as archive:
        parts = [
            _DOCX_MAIN_PART,
            *(
                part for part in archive.namelist()
                if part in _READ_PARTS or _HEADER_AND_FOOTER_PARTS.fullmatch(part) or _CHART_PARTS.fullmatch(part)
            ),
        ]
        check_element_count(name, _KIND, archive, parts, too_many="paragraphs and other parts")
    try:
        document = docx.Document(io.BytesIO(data))
        number_lists(document)
        _write_charts(document)
        notes = {kind: _notes(document, relationship) for kind, relationship in _NOTE_KINDS.items()}
        headers_and_footers = _new_headers_and_footers(document)
        body = document.element.body
    except Exception as error:  # python-docx and lxml raise many types for a damaged package
        raise corrupt(name, _KIND) from error
    pages = _laid_out(_document_text(body)).split(_PAGE_BREAK)
    texts = _with_headers_and_footers(_with_notes(pages, notes), headers_and_footers)
    return LoadedPages(pages_or_no_text(name, texts), len(texts))


def _write_charts(document: WordDocument) -> None:
    """Each chart's text (charts.py), its lines written after the run drawing it in the document tree python-docx
    built, so that it is read there: a chart's words and numbers are in a part of its own, not in the text. A
    chart drawn as the fallback of another drawing is not read twice."""
    for chart in list(document.element.body.iter(_C_CHART)):
        part = document.part.related_parts.get(chart.get(qn("r:id")))
        run = next(chart.iterancestors(_W_R), None)
        if part is None or run is None or any(ancestor.tag == _MC_FALLBACK for ancestor in chart.iterancestors()):
            continue
        lines = OxmlElement("w:r")
        for line in chart_part_text(part.blob).splitlines():
            lines.append(OxmlElement("w:br"))
            text = OxmlElement("w:t")
            text.text = line
            lines.append(text)
        run.addnext(lines)


def _notes(document: WordDocument, relationship: str) -> dict[str, str]:
    """The text of each footnote (or endnote) by its id; empty when the document has none."""
    part = next((rel.target_part for rel in document.part.rels.values() if rel.reltype == relationship), None)
    if part is None:
        return {}
    return {
        note.get(_W_ID): " ".join(_without_breaks(_blocks_text(note), " ").split())
        for note in parse_xml(part.blob).iterchildren()
    }


def _new_headers_and_footers(document: WordDocument) -> list[tuple[str, str]]:
    """Each section's headers and its footers (the first page's, the odd and the even pages' where the section
    has them), as text, but for those an earlier section showed."""
    even_pages = document.settings.odd_and_even_pages_header_footer
    read: set[str] = set()
    sections = []
    for section in document.sections:
        variants = [(section.header, section.footer)]
        if section.different_first_page_header_footer:
            variants.insert(0, (section.first_page_header, section.first_page_footer))
        if even_pages:
            variants.append((section.even_page_header, section.even_page_footer))
        headers: list[str] = []
        footers: list[str] = []
        for variant in variants:
            for part, texts in zip(variant, (headers, footers), strict=True):
                if part.is_linked_to_previous:  # it shows the section before's
                    continue
                text = _without_breaks(_blocks_text(part.part.element), "\n").strip()
                if text and text not in read:
                    read.add(text)
                    texts.append(text)
        sections.append(("\n".join(headers), "\n".join(footers)))
    return sections


def _with_headers_and_footers(pages: list[str], sections: list[tuple[str, str]]) -> list[str]:
    """The pages with the headers of each section starting on them first, and its footers last."""
    starting = iter(sections)
    texts = []
    for page in pages:
        starts = [next(starting, ("", "")) for _ in range(page.count(_SECTION_START))]
        body = page.replace(_SECTION_START, "").strip("\n")
        parts = [*(header for header, _ in starts), body, *(footer for _, footer in starts)]
        texts.append("\n".join(part for part in parts if part))
    return texts


def _with_notes(pages: list[str], notes: dict[str, dict[str, str]]) -> list[str]:
    """The pages with each note reference replaced by its mark, and the notes referred to on a page after it."""
    counts = dict.fromkeys(notes, 0)
    texts = []
    for page in pages:
        page_notes: list[str] = []

        def mark(reference: re.Match, page_notes: list[str] = page_notes) -> str:
            kind, note_id = reference.groups()
            counts[kind] += 1
            label = str(counts[kind]) if kind == "f" else roman(counts[kind])  # as Word numbers endnotes
            page_notes.append(f"[{label}] {notes[kind].get(note_id, '')}")
            return f"[{label}]"

        text = _NOTE_REFERENCE.sub(mark, page)
        texts.append("\n".join([text.rstrip("\n"), "", *page_notes]) if page_notes else text)
    return texts


def _laid_out(text: str) -> str:
    """``text`` with each rendered page break made a page break, but for one that marks the page an explicit break
    began (Word records both) or the first page."""
    return _RENDERED_AFTER_EXPLICIT.sub(r"\1\2", text).replace(_RENDERED_PAGE_BREAK, _PAGE_BREAK)


def _without_breaks(text: str, replacement: str) -> str:
    """``text`` of a part that does not break the page it is on (a note, a text box, a table cell)."""
    return text.replace(_RENDERED_PAGE_BREAK, "").replace(_PAGE_BREAK, replacement)


def _document_text(body: BaseOxmlElement) -> str:
    sections = _section_ends(body)
    # A section's properties sit in the paragraph that ends it (the last section's at the end of the body), and
    # their type says how *that* section starts: so a break's kind is read from the section after it.
    new_page_after = {
        ending for (ending, _), (_, following) in itertools.pairwise(sections) if not _is_continuous(following)
    }
    section_after = {ending for ending, _ in sections[:-1]}
    return _SECTION_START + "".join(
        _block_text(child) + (_PAGE_BREAK if child in new_page_after else "")
        + (_SECTION_START if child in section_after else "")
        for child in body.iterchildren()
    )


def _section_ends(body: BaseOxmlElement) -> list[tuple[BaseOxmlElement, BaseOxmlElement]]:
    """Each section's last element and its properties, in order. Walked child by child: an XPath over the whole
    body fails on libxml2's node-set limit for very long documents."""
    return [
        (child, properties)
        for child in body.iterchildren(_W_P, _W_SECT_PR)
        if (properties := child if child.tag == _W_SECT_PR else child.find(_W_PARAGRAPH_SECT_PR)) is not None
    ]


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
    # controls). Going no deeper leaves out the runs of text boxes, which their own runs read (_text_boxes_text).
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
        elif child.tag in _W_TABS:
            pieces.append("\t")
        elif child.tag in (_W_BR, _W_CR):
            pieces.append(_PAGE_BREAK if child.get(_W_TYPE) == "page" else "\n")
        elif child.tag == _W_LAST_RENDERED_PAGE_BREAK:
            pieces.append(_RENDERED_PAGE_BREAK)
        elif child.tag == _W_NO_BREAK_HYPHEN:
            pieces.append("-")
        elif child.tag in (_W_DRAWING, _W_PICT, _MC_ALTERNATE_CONTENT):
            pieces.append(_text_boxes_text(child))
        elif child.tag in (_W_FOOTNOTE_REFERENCE, _W_ENDNOTE_REFERENCE):
            kind = "f" if child.tag == _W_FOOTNOTE_REFERENCE else "e"
            pieces.append(f"\x01{kind}{child.get(_W_ID)}\x02")
    return "".join(pieces)


def _text_boxes_text(drawing: BaseOxmlElement) -> str:
    """The text of the text boxes in a run's drawing (a sidebar, a callout), each on lines of its own after the
    text before it."""
    # A page break inside a text box does not break the page the box is drawn on.
    return "".join("\n" + _without_breaks(_blocks_text(box), "\n") for box in _outermost_text_boxes(drawing))


def _outermost_text_boxes(element: BaseOxmlElement) -> list[BaseOxmlElement]:
    """The text boxes in ``element`` that are not inside another (whose text includes theirs). Word writes a text
    box twice, as a drawing and as a fallback picture for older readers: of an alternate content, at any depth,
    only the first choice holding text boxes is read."""
    if element.tag == _MC_ALTERNATE_CONTENT:
        choices = [*element.iterchildren(_MC_CHOICE), *element.iterchildren(_MC_FALLBACK)]
        return next((boxes for choice in choices if (boxes := _outermost_text_boxes(choice))), [])
    boxes = []
    for child in element.iterchildren():
        boxes.extend([child] if child.tag == _W_TEXT_BOX else _outermost_text_boxes(child))
    return boxes


def _table_text(table: BaseOxmlElement) -> str:
    """One line per row, cells joined by " | ", so a row stays together (on one page) for retrieval; a row Word
    laid out across a new page starts that page."""
    rows = []
    for row in table.iterchildren(_W_TR):
        texts = [_blocks_text(cell) for cell in row.iterchildren(_W_TC)]
        cells = (" ".join(_without_breaks(text, " ").split()) for text in texts)
        new_page = _RENDERED_PAGE_BREAK if any(_RENDERED_PAGE_BREAK in text for text in texts) else ""
        rows.append(new_page + " | ".join(cell for cell in cells if cell) + "\n")
    return "".join(rows)


def _is_on(toggle: BaseOxmlElement | None) -> bool:
    return toggle is not None and toggle.get(_W_VAL, "true") not in ("0", "false", "off")


def _is_continuous(section: BaseOxmlElement) -> bool:
    section_type = section.find(_W_TYPE)
    return section_type is not None and section_type.get(_W_VAL) == "continuous"
