"""Turn an uploaded file's bytes into pages of clean text.

The extension decides which type a file may be (.pdf, .txt, .md, .markdown, .docx, .pptx, .xlsx, .csv, .tsv,
.html, .htm, .xhtml, .epub, .png, .jpg, .jpeg, .tif, .tiff, .webp, any case); the content decides whether it really
is that type. Every failure is a typed, user-readable error:

- unknown extension, or content of another kind than the extension claims (a PNG named .pdf, a zip without
  ``word/document.xml`` named .docx, binary data named .txt) → ``UnsupportedFileType``: whatever its name says,
  the file is not one of the types Axiom reads;
- content of the claimed kind that cannot be parsed (starts like a PDF but is broken, a truncated .docx)
  → ``UnreadableDocument(reason=CORRUPT)``;
- 0 bytes or only whitespace → ``EMPTY``; needs a password to open → ``ENCRYPTED``, or ``WRONG_PASSWORD`` when the
  ``password`` given does not open it (a PDF that opens with the empty user password, i.e. one only restricted by an
  owner password, loads, and so does one opened by ``password``);
- reading it would take more memory or time than a document may use (a zip bomb, a sheet declaring a billion
  cells, a 50 MB web page) → ``TOO_COMPLEX``, found before the file is parsed whole;
- parses but yields no readable text (a PDF text layer that decodes to mojibake and pages that show no text either)
  → ``NO_TEXT``;
- needs text recognition (a scanned page, an image) and Tesseract or its language data is not installed
  → ``OCR_UNAVAILABLE``.

Scanned PDF pages and images are read by text recognition (ocr.py); their pages are marked ``ocr``.

PDF pages keep their real 1-based numbers even when pages without text are skipped; a document's page count
counts those too. A DOCX has no fixed pages, so
its "pages" are those Word laid out when it last saved the file, else the stretches between explicit page breaks and
page-starting section breaks. A PPTX slide, an
XLSX sheet and an EPUB chapter are each a page, numbered by position; CSV and HTML are one page.

Citations name a page by its label where a loader gives one: "Slide 3", "Sheet “Q3 sales”", an EPUB chapter's title
from the book's table of contents, a TIFF's "Frame 2", a PDF page printing another number than its position "Page iii
(PDF page 3)"; other pages are "Page N".
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from pathlib import PurePosixPath

from backend.errors import UnreadableDocument, UnsupportedFileType
from backend.ingest.loaders.csv import load_csv
from backend.ingest.loaders.docx import load_docx
from backend.ingest.loaders.epub import load_epub
from backend.ingest.loaders.html import load_html
from backend.ingest.loaders.image import load_image
from backend.ingest.loaders.ocr import OcrOptions, PageProgress, Recogniser
from backend.ingest.loaders.pdf import load_pdf
from backend.ingest.loaders.plain import load_text
from backend.ingest.loaders.pptx import load_pptx
from backend.ingest.loaders.text import LoadedPages, normalise_text
from backend.ingest.loaders.xlsx import load_xlsx
from backend.models import LoadedDocument

__all__ = [
    "FILE_TYPES_BY_EXTENSION", "OcrOptions", "PageProgress", "base_filename", "file_type_named", "load_document",
    "normalise_text",
]

FILE_TYPES_BY_EXTENSION = {".pdf": "pdf", ".txt": "txt", ".md": "md", ".markdown": "md", ".docx": "docx"}
# Slides, spreadsheets, web pages and e-books.
FILE_TYPES_BY_EXTENSION |= {
    ".pptx": "pptx", ".xlsx": "xlsx", ".csv": "csv", ".tsv": "csv", ".html": "html", ".htm": "html",
    ".xhtml": "html", ".epub": "epub",
}
# Images of text, read by text recognition.
FILE_TYPES_BY_EXTENSION |= dict.fromkeys((".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp"), "image")

_LOADERS: dict[str, Callable[[str, bytes], LoadedPages]] = {
    "txt": load_text,
    "md": load_text,
    "docx": load_docx,
    "pptx": load_pptx,
    "xlsx": load_xlsx,
    "csv": load_csv,
    "html": load_html,
    "epub": load_epub,
}


def load_document(
    filename: str, data: bytes, *, ocr: OcrOptions | None = None, on_page: PageProgress | None = None,
    password: str | None = None,
) -> LoadedDocument:
    """Load ``data`` uploaded as ``filename``; the result's filename is the base name only (no directories).
    ``on_page`` hears of each page recognised by OCR (pages done, pages to do). ``password`` opens a PDF that needs
    one; other files ignore it."""
    name = base_filename(filename)
    file_type = _file_type(name)
    if not data or data.isspace():
        raise UnreadableDocument(f"“{name}” is empty.", reason=UnreadableDocument.EMPTY, filename=name)
    # PDFs and images may need text recognition in their page images; only a PDF may need a password.
    if file_type in ("pdf", "image"):
        recogniser = Recogniser(name, ocr or OcrOptions(), on_page)
        loaded = load_pdf(name, data, recogniser, password=password) if file_type == "pdf" else load_image(
            name, data, recogniser
        )
    else:
        loaded = _LOADERS[file_type](name, data)
    return LoadedDocument(name, file_type, tuple(loaded.pages), loaded.page_count)


def base_filename(filename: str) -> str:
    """The last path component, whichever separator the client used, NFC, without control or format characters
    (which could hide the real extension, e.g. a right-to-left override)."""
    last_component = re.split(r"[\\/]", filename)[-1]
    visible = "".join(c for c in last_component if unicodedata.category(c) not in ("Cc", "Cf", "Cs"))
    return unicodedata.normalize("NFC", visible).strip()


def file_type_named(name: str) -> str | None:
    """The type a file's name (its extension) says it is; None for a type Axiom does not read."""
    return FILE_TYPES_BY_EXTENSION.get(PurePosixPath(name).suffix.lower())


def _file_type(name: str) -> str:
    file_type = file_type_named(name)
    if file_type is None:
        supported = ", ".join(FILE_TYPES_BY_EXTENSION)
        raise UnsupportedFileType(
            f"“{name}” is not a supported file type. Supported types: {supported}.",
            filename=name,
            supported_extensions=list(FILE_TYPES_BY_EXTENSION),
        )
    return file_type
