"""How long reading the worst files the slide, sheet and web-page loaders accept (and refuse) takes, and its peak
memory: each file read once by `load_document` in a fresh process, as the reader's worker does.

The loaders' limits (backend/ingest/loaders/html.py, xlsx.py, sheet_text.py, package.py) were chosen so a file just
under them reads within seconds and well inside the reader's 1 GiB; a hostile one must be refused quickly.

    PYTHONPATH=. .venv/bin/python bench/format_limits.py

Measured on the 2-core machine (busy with other work), 2026-11-24:
    case                                           MB  seconds  peak MiB  outcome
    html, elements just under the limit           9.3     13.1       325  read: 1 pages, 9,075,858 chars
    html, 50 MB                                  49.6      0.0       130  UNREADABLE_DOCUMENT too_complex
    xlsx, filled cells just under the limit       1.2     10.4       221  read: 2 pages, 8,170,011 chars
    xlsx, zip bomb                                0.6      0.0        83  UNREADABLE_DOCUMENT too_complex
    xlsx, declaring 17 G cells                    0.0      0.0        83  UNREADABLE_DOCUMENT too_complex
    pptx, zip bomb                                0.6      0.0        83  UNREADABLE_DOCUMENT too_complex
    pptx, 2.1 M empty paragraphs                  0.1      2.2        84  UNREADABLE_DOCUMENT too_complex
(A process with the parsers imported holds ~80 MiB before it reads anything.)
"""

from __future__ import annotations

import multiprocessing
import re
import time
from collections.abc import Callable

from _common import peak_rss_mib

from backend.errors import AxiomError
from backend.ingest.loaders import load_document
from backend.ingest.loaders.html import MAX_HTML_ELEMENTS
from backend.ingest.loaders.sheet_text import MAX_FILLED_CELLS
from tests.support import documents

_PARAGRAPH = "Axolotls regrow their limbs, their hearts and even parts of their brains. " * 4


def _page(paragraphs: int) -> bytes:
    body = "".join(f"<p>{_PARAGRAPH} {index}</p>\n" for index in range(paragraphs))
    return f"<html><body><article>{body}</article></body></html>".encode()


def _workbook_of_cells(cells: int) -> bytes:
    rows = "".join(
        f'<row r="{row}">' + "".join(f'<c r="{column}{row}"><v>{row}</v></c>' for column in "ABCDEFGHIJ") + "</row>"
        for row in range(1, cells // 10 + 1)
    )
    return documents.replace_part(
        documents.workbook(), "xl/worksheets/sheet1.xml",
        lambda xml: re.sub(r"<sheetData>.*</sheetData>", f"<sheetData>{rows}</sheetData>", xml, flags=re.DOTALL),
    )


def _deck_of_paragraphs(paragraphs: int) -> bytes:
    def bloat(xml: str) -> str:
        body = "<a:p/>" * paragraphs
        return xml.replace("</p:spTree>", f"<p:sp><p:txBody><a:bodyPr/>{body}</p:txBody></p:sp></p:spTree>")

    return documents.replace_part(documents.deck(), "ppt/slides/slide1.xml", bloat)


CASES: dict[str, tuple[str, Callable[[], bytes]]] = {
    "html, elements just under the limit": ("page.html", lambda: _page(MAX_HTML_ELEMENTS - 10)),
    "html, 50 MB": ("page.html", lambda: _page(160_000)),
    "xlsx, filled cells just under the limit": ("book.xlsx", lambda: _workbook_of_cells(MAX_FILLED_CELLS - 10_000)),
    "xlsx, zip bomb": ("book.xlsx", lambda: documents.with_zip_bomb(documents.workbook(), "xl/media/a.png")),
    "xlsx, declaring 17 G cells": (
        "book.xlsx", lambda: documents.with_declared_dimension(documents.workbook(), "A1:XFD1048576")
    ),
    "pptx, zip bomb": ("deck.pptx", lambda: documents.with_zip_bomb(documents.deck(), "ppt/media/a.png")),
    "pptx, 2.1 M empty paragraphs": ("deck.pptx", lambda: _deck_of_paragraphs(2_100_000)),
}


def _read(filename: str, data: bytes, results) -> None:
    start = time.perf_counter()
    try:
        document = load_document(filename, data)
        outcome = f"read: {len(document.pages)} pages, {sum(len(page.text) for page in document.pages):,} chars"
    except AxiomError as error:  # a refusal is an outcome to measure
        outcome = f"{error.code} {error.details.get('reason', '')}"
    results.put((time.perf_counter() - start, peak_rss_mib(), outcome))


def main() -> None:
    context = multiprocessing.get_context("spawn")
    print(f"{'case':42} {'MB':>6} {'seconds':>8} {'peak MiB':>9}  outcome")
    for case, (filename, build) in CASES.items():
        data = build()
        results = context.Queue()
        process = context.Process(target=_read, args=(filename, data, results))
        process.start()
        seconds, peak_mib, outcome = results.get()
        process.join()
        print(f"{case:42} {len(data) / 1e6:6.1f} {seconds:8.1f} {peak_mib:9.0f}  {outcome}")


if __name__ == "__main__":
    main()
