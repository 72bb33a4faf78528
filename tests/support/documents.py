"""Small real documents of the formats beyond PDF and text, built with the libraries that write them (python-pptx,
openpyxl, zipfile), and hostile ones built to hurt a reader: the loader and API tests share them."""

from __future__ import annotations

import copy
import datetime
import io
import re
import zipfile

import openpyxl
import pptx
from pptx.enum.shapes import PP_PLACEHOLDER
from pptx.util import Inches

ZIP_BOMB_BYTES = 600 * 1024 * 1024  # over the 512 MB a package may expand to; ~600 KB compressed


def deck() -> bytes:
    """Slide 1: title, bullets and speaker notes; 2: a table; 3: blank; 4: grouped text boxes."""
    presentation = pptx.Presentation()
    first = presentation.slides.add_slide(presentation.slide_layouts[1])
    first.shapes.title.text = "Axolotl regeneration"
    first.placeholders[1].text = "Axolotls regrow their limbs\nHearts regrow too"
    first.notes_slide.notes_text_frame.text = "Mention that they live in Lake Xochimilco."
    second = presentation.slides.add_slide(presentation.slide_layouts[5])
    second.shapes.title.text = "Survey counts"
    table = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(6), Inches(1)).table
    for (row, column), text in {(0, 0): "Species", (0, 1): "Count", (1, 0): "Axolotl", (1, 1): "1,204"}.items():
        table.cell(row, column).text = text
    presentation.slides.add_slide(presentation.slide_layouts[6])
    group = presentation.slides.add_slide(presentation.slide_layouts[6]).shapes.add_group_shape()
    group.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1)).text_frame.text = "Grouped caption"
    return _saved(presentation)


def deck_with_footers(slides: int = 3) -> bytes:
    """Slides titled "Finding N" with the footer "Axolotl Institute, confidential", a date and their number,
    as PowerPoint writes them when "Footer", "Date and time" and "Slide number" are ticked (python-pptx leaves
    those placeholders out of the slides it adds: they are copied from the layout here)."""
    presentation = pptx.Presentation()
    layout = presentation.slide_layouts[5]
    running = {PP_PLACEHOLDER.FOOTER, PP_PLACEHOLDER.DATE, PP_PLACEHOLDER.SLIDE_NUMBER}
    for number in range(1, slides + 1):
        slide = presentation.slides.add_slide(layout)
        slide.shapes.title.text = f"Finding {number}"
        for placeholder in layout.placeholders:
            if placeholder.placeholder_format.type in running:
                slide.shapes._spTree.append(copy.deepcopy(placeholder._element))
        texts = {
            PP_PLACEHOLDER.FOOTER: "Axolotl Institute, confidential", PP_PLACEHOLDER.DATE: "24 November 2026",
            PP_PLACEHOLDER.SLIDE_NUMBER: str(number),
        }
        for shape in slide.placeholders:
            if shape.placeholder_format.type in running:
                shape.text_frame.text = texts[shape.placeholder_format.type]
    return _saved(presentation)


def workbook() -> bytes:
    """Sheet 1 "Sales": a header row, 300 data rows, a formula column whose cached values are set as a spreadsheet
    program would have left them, and a formula never calculated; 2 "Empty"; 3 "Notes": one line of text."""
    book = openpyxl.Workbook()
    sales = book.active
    sales.title = "Sales"
    sales.append(["Region", "Quarter", "Revenue", "Day", "Doubled", "Uncalculated"])
    for row in range(2, 302):
        sales.append([f"Region {row - 1}", "Q1", 1000 + row, datetime.date(2024, 1, 1 + row % 28),
                      f"=C{row}*2", f"=C{row}+1"])
    book.create_sheet("Empty")
    book.create_sheet("Notes")["A1"] = "Axolotls are amphibians that keep their gills."
    # openpyxl writes a formula without the value a spreadsheet program caches beside it: "Doubled" gets the value
    # Excel would have saved, "Uncalculated" keeps none (as a file written by a script and never opened).
    def cached(cell: re.Match) -> str:
        return f'<c r="E{cell[1]}"><f>{cell[2]}</f><v>{(1000 + int(cell[1])) * 2}</v></c>'

    return replace_part(
        _saved(book), "xl/worksheets/sheet1.xml", lambda xml: re.sub(r'<c r="E(\d+)"><f>([^<]*)</f><v></v></c>', cached, xml)
    )


def csv_file(delimiter: str = ",") -> bytes:
    rows = [
        ["Species", "Habitat", "Length"], ["Axolotl", "Lake Xochimilco, Mexico", "23 cm"], ["Olm", "Caves", "30 cm"]
    ]
    return "\r\n".join(delimiter.join(f'"{value}"' if delimiter in value else value for value in row)
                       for row in rows).encode()


WEB_PAGE = b"""<!doctype html><html><head><meta charset="utf-8"><title>Axolotl facts</title>
<script>var tracking = "SCRIPTNOISE";</script><style>body { color: red }</style></head><body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/shop">Shop NAVNOISE</a></li></ul></nav>
<main><article><h1>The axolotl</h1>
<p>Axolotls can regrow their limbs, their hearts and even parts of their brains.</p>
<h2>Habitat</h2><p>They live in Lake Xochimilco near Mexico City, in cool fresh water full of plants.</p>
</article></main><footer>Copyright 2024 FOOTERNOISE</footer></body></html>"""


def epub(chapters: dict[str, str], toc: dict[str, str] | None = None, toc_format: str = "nav") -> bytes:
    """An EPUB 3 whose spine lists ``chapters`` (file name → body HTML) in order, with a cover image beside them;
    ``toc`` (file name → title) adds a table of contents as a navigation document ("nav") or an NCX ("ncx")."""
    manifest = "".join(
        f'<item id="c{index}" href="text/{file}" media-type="application/xhtml+xml"/>'
        for index, file in enumerate(chapters)
    )
    toc_parts = _epub_toc(toc, toc_format) if toc else {}
    manifest += "".join(item for item, _ in toc_parts.values())
    spine = "".join(f'<itemref idref="c{index}"/>' for index in range(len(chapters)))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        archive.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>",
        )
        archive.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            f'<manifest>{manifest}<item id="cover" href="cover.png" media-type="image/png"/></manifest>'
            f"<spine>{spine}</spine></package>",
        )
        archive.writestr("OEBPS/cover.png", b"\x89PNG\r\n\x1a\n")
        for path, (_, content) in toc_parts.items():
            archive.writestr(f"OEBPS/{path}", content)
        for file, body in chapters.items():
            archive.writestr(
                f"OEBPS/text/{file}",
                '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>'
                f"{file}</title></head><body>{body}</body></html>",
            )
    return buffer.getvalue()


def _epub_toc(toc: dict[str, str], toc_format: str) -> dict[str, tuple[str, str]]:
    """The table of contents' part: its path → (its manifest item, its content)."""
    if toc_format == "ncx":
        points = "".join(
            f'<navPoint id="n{index}"><navLabel><text>{title}</text></navLabel><content src="text/{file}"/></navPoint>'
            for index, (file, title) in enumerate(toc.items())
        )
        content = f'<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1"><navMap>{points}</navMap></ncx>'
        return {"toc.ncx": ('<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>', content)}
    links = "".join(f'<li><a href="text/{file}#start">{title}</a></li>' for file, title in toc.items())
    content = (
        '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml" '
        'xmlns:epub="http://www.idpf.org/2007/ops"><body><nav epub:type="landmarks"><ol><li><a href="cover.png">'
        f'Cover</a></li></ol></nav><nav epub:type="toc"><ol>{links}</ol></nav></body></html>'
    )
    return {"nav.xhtml": ('<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>',
                          content)}


def replace_part(data: bytes, part: str, change) -> bytes:
    """The package with ``part``'s text changed by ``change`` (every other member copied as it is)."""
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for member in source.infolist():
            content = source.read(member)
            target.writestr(member, change(content.decode()) if member.filename == part else content)
    return buffer.getvalue()


def with_zip_bomb(data: bytes, member: str) -> bytes:
    """The package with a member of ZIP_BOMB_BYTES zeros added: a small upload that would inflate past the limit."""
    buffer = io.BytesIO(data)
    zeros = bytes(1024 * 1024)
    with zipfile.ZipFile(buffer, "a", zipfile.ZIP_DEFLATED) as archive, archive.open(member, "w", force_zip64=True) as bomb:
        for _ in range(ZIP_BOMB_BYTES // len(zeros)):
            bomb.write(zeros)
    return buffer.getvalue()


def with_declared_dimension(data: bytes, reference: str) -> bytes:
    """The workbook's first sheet declaring ``reference`` (e.g. "A1:XFD1048576") as its extent."""
    declared = f'<dimension ref="{reference}"'
    return replace_part(data, "xl/worksheets/sheet1.xml", lambda xml: re.sub(r'<dimension ref="[^"]*"', declared, xml))


def _saved(document) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()
