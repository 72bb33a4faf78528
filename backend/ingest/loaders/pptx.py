"""PPTX (python-pptx): a slide is a page, numbered as in the deck. Its title comes first, then the text of its
shapes (grouped ones too), its tables one row a line, its charts (the title, then each series a line of its
values by category: "Axolotls: 2023: 10; 2024: 20"; charts.py) and its SmartArt diagrams (each node's text a
line), then its speaker notes. python-pptx parses every XML part
of the package when it opens it, so all of them are counted first (loaders/package.py).

A deck's footer and date, repeated on every slide, are read on the first slide that shows them (as a PDF's
running headers are), and slide numbers not at all: citations name the slide."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterable, Iterator

import pptx
from pptx.enum.shapes import PP_PLACEHOLDER
from pptx.oxml import parse_xml
from pptx.oxml.ns import qn
from pptx.shapes.base import BaseShape
from pptx.shapes.group import GroupShape
from pptx.slide import Slide

from backend.errors import UnsupportedFileType
from backend.ingest.loaders.charts import chart_text
from backend.ingest.loaders.package import ZIP_MAGIC, check_element_count, open_package
from backend.ingest.loaders.text import LoadedPages, corrupt, labelled, pages_or_no_text

log = logging.getLogger(__name__)

_KIND = "PowerPoint presentation"
_PRESENTATION_PART = "ppt/presentation.xml"
_RUNNING_PLACEHOLDERS = (PP_PLACEHOLDER.FOOTER, PP_PLACEHOLDER.DATE)
# A SmartArt diagram's frame names the part holding its data model, whose "node" points hold its text.
_DIAGRAM = "{http://schemas.openxmlformats.org/drawingml/2006/diagram}"
_DIAGRAM_PARTS = f"./{qn('a:graphic')}/{qn('a:graphicData')}/{_DIAGRAM}relIds"
_DIAGRAM_POINT, _DIAGRAM_TEXT = f"{_DIAGRAM}pt", f"{_DIAGRAM}t"


def load_pptx(name: str, data: bytes) -> LoadedPages:
    if not data.startswith(ZIP_MAGIC):
        raise UnsupportedFileType(
            f"“{name}” is named .pptx but is not a PowerPoint presentation (older binary .ppt files are not "
            "supported: save it as .pptx first).",
            filename=name,
        )
    with open_package(name, data, _KIND, _PRESENTATION_PART) as archive:
        xml_parts = [part for part in archive.namelist() if part.endswith((".xml", ".rels"))]
        check_element_count(name, _KIND, archive, xml_parts, too_many="shapes and other parts")
    try:
        footers_read: set[str] = set()
        texts = [_slide_text(slide, footers_read) for slide in pptx.Presentation(io.BytesIO(data)).slides]
    except Exception as error:  # python-pptx and lxml raise many types for a damaged package
        raise corrupt(name, _KIND) from error
    return LoadedPages(labelled(pages_or_no_text(name, texts), lambda number: f"Slide {number}"), len(texts))


def _slide_text(slide: Slide, footers_read: set[str]) -> str:
    """``footers_read``: the footers and dates of the slides before, to which this slide's are added."""
    title = slide.shapes.title
    blocks = [title.text_frame.text] if title is not None and title.has_text_frame else []
    blocks += [
        _shape_text(shape)
        for shape in _shapes(slide.shapes)
        if shape != title and _is_new(shape, footers_read)
    ]
    if slide.has_notes_slide and (notes := slide.notes_slide.notes_text_frame) is not None and notes.text.strip():
        blocks.append(f"Speaker notes:\n{notes.text}")
    # A shape's lines are joined by line breaks inside a paragraph; blank lines keep shapes apart.
    return "\n\n".join(block.replace("\v", "\n") for block in blocks if block.strip())


def _shapes(shapes: Iterable[BaseShape]) -> Iterator[BaseShape]:
    for shape in shapes:
        if isinstance(shape, GroupShape):
            yield from _shapes(shape.shapes)
        else:
            yield shape


def _is_new(shape: BaseShape, footers_read: set[str]) -> bool:
    """False for a slide number, and for a footer or date read on an earlier slide."""
    if not shape.is_placeholder:
        return True
    kind = shape.placeholder_format.type
    if kind == PP_PLACEHOLDER.SLIDE_NUMBER:
        return False
    if kind not in _RUNNING_PLACEHOLDERS:
        return True
    text = _shape_text(shape).strip()
    if text in footers_read:
        return False
    footers_read.add(text)
    return True


def _shape_text(shape: BaseShape) -> str:
    if shape.has_text_frame:
        return shape.text_frame.text
    if getattr(shape, "has_table", False):
        return "\n".join(
            " | ".join(" ".join(cell.text.split()) for cell in row.cells if cell.text.strip())
            for row in shape.table.rows
        )
    if getattr(shape, "has_chart", False):
        return chart_text(shape.chart)
    if (diagram := shape.element.find(_DIAGRAM_PARTS)) is not None:
        return _diagram_text(shape, diagram.get(qn("r:dm")))
    return ""


def _diagram_text(shape: BaseShape, data_part: str | None) -> str:
    """A SmartArt diagram's text: each of its nodes' paragraphs a line, in the order of its data model. A diagram
    whose data cannot be read costs the diagram, not the deck."""
    try:
        model = parse_xml(shape.part.related_part(data_part).blob)
        lines = [
            "".join(text.text or "" for text in paragraph.iter(qn("a:t")))
            for point in model.iter(_DIAGRAM_POINT) if point.get("type", "node") == "node"
            for paragraph in point.findall(f"{_DIAGRAM_TEXT}/{qn('a:p')}")
        ]
    except Exception:  # a missing part or damaged XML, of many types
        log.warning("a SmartArt diagram could not be read; the slide is read without it", exc_info=True)
        return ""
    return "\n".join(line for line in lines if line.strip())
