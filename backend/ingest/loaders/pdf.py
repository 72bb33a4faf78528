"""PDF: the text layer (pypdf), and text recognition (OCR, ocr.py) for each page whose text layer is missing (a scan)
or garbled (fonts without a usable character map): only those pages are rendered and recognised. Pages keep their
real 1-based numbers even when pages without text are skipped. A page whose printed number (the PDF's page labels:
"iii" in a preface, "1" where the body starts after it) differs from its position is labelled with both, "Page iii
(PDF page 3)": either alone would send a reader to the wrong page, and a document may print "1" on several pages.
A page laid out in columns is read column by column (pdf_columns.py): its text layer may be drawn line by line
across them. Running headers and footers are kept only where they first appear (running_headers.py).

A PDF that needs a password to open is read with the one its uploader gave (``password``): it only ever opens the
file in this process, and is neither kept nor named in a log or an error."""

from __future__ import annotations

import contextlib
import io
import logging
import re
import stringprep
import unicodedata

import pypdfium2
from fontTools.agl import toUnicode
from pypdf import PageObject, PasswordType, PdfReader
from pypdf.errors import DependencyError, PyPdfError
from pypdf.generic import DictionaryObject, NameObject, NullObject, PdfObject

from backend.errors import UnreadableDocument, UnsupportedFileType
from backend.ingest.loaders.ocr import Recogniser
from backend.ingest.loaders.pdf_columns import column_ordered_text
from backend.ingest.loaders.running_headers import without_running_headers
from backend.ingest.loaders.text import LoadedPages, corrupt, pages_with_text
from backend.models import Page

log = logging.getLogger(__name__)
# pypdf warns when an AES-256 password cannot be normalised (SASLprep), naming the character that stopped it
# ("private use character U+E000"): a piece of the password, in a log. Its other warnings there name none, and its
# errors reach the caller as exceptions, so only warnings are given up, in every process that reads PDFs (a reader
# worker imports this module, as this one does).
logging.getLogger("pypdf._encryption").setLevel(logging.ERROR)

_PDF_MAGIC = b"%PDF-"
# Readers accept junk before the header as long as it starts within the first kilobyte (as Acrobat does).
_PDF_HEADER_WINDOW = 1024
# A page with fewer visible characters has no text layer to speak of (the shared corpus's SOURCE.md counts the
# same way): a scan, perhaps with a page number on it.
_MIN_TEXT_LAYER_CHARACTERS = 20
# A page label is a number with perhaps a prefix ("A-3"); a longer one is cut rather than flood a citation.
_MAX_PAGE_LABEL_CHARS = 40
# A page's text read column by column (by pdfium) replaces pypdf's only when it holds this share of its characters
# or more: the order is to change, not the words.
_MIN_COLUMN_TEXT_SHARE = 0.95
# What a glyph whose character is unknown reads as until its page is judged (a page of many is garbled).
_UNKNOWN_GLYPH = "\ufffd"


def load_pdf(name: str, data: bytes, recogniser: Recogniser, *, password: str | None = None) -> LoadedPages:
    if _PDF_MAGIC not in data[:_PDF_HEADER_WINDOW]:
        raise UnsupportedFileType(
            f"“{name}” is named .pdf but its content is not a PDF document.", filename=name
        )
    reader, opened_with = _open_pdf(name, data, password)
    texts = _pdf_page_texts(name, reader)
    # One pdfium document serves both: it renders the pages without text for OCR, and finds the others' columns.
    document = _pdfium_document(name, data, opened_with)
    try:
        recognised = _recognise_pages_without_text(name, document, texts, recogniser) if document else {}
        reordered = {**(_column_ordered_texts(name, document, texts) if document else {}), **recognised}
    finally:
        if document is not None:
            document.close()
    labels = _printed_page_labels(name, reader)
    pages = [
        Page(page.number, page.text, ocr=page.number in recognised, label=labels.get(page.number, ""))
        for page in pages_with_text(
            reordered.get(number, (text or "").replace(_UNKNOWN_GLYPH, ""))
            for number, text in enumerate(texts, start=1)
        )
    ]
    if not pages and None in texts:
        raise corrupt(name, "PDF")
    if not pages:
        raise UnreadableDocument(
            f"“{name}” has no readable text: its pages have no usable text layer, and text recognition (OCR) found "
            "none in them. If it is a scanned document, scan it again more sharply, or upload a version with "
            "selectable text.",
            reason=UnreadableDocument.NO_TEXT,
            filename=name,
        )
    if _looks_garbled("\n".join(page.text for page in pages)):
        raise UnreadableDocument(
            f"“{name}” has a text layer that does not decode to readable text (its fonts lack a usable character "
            "map). Export it again from the original, or upload a version with selectable text.",
            reason=UnreadableDocument.NO_TEXT,
            filename=name,
        )
    return LoadedPages(without_running_headers(pages), page_count=len(texts))


def _open_pdf(name: str, data: bytes, password: str | None) -> tuple[PdfReader, str | None]:
    """The PDF, decrypted, and the password that opened it (None: it needed none)."""
    try:
        reader = PdfReader(io.BytesIO(data))
        if not reader.is_encrypted or _opens_with(reader, ""):
            return reader, None  # a password given for a file that needs none is ignored
        opened = password is not None and _opens_with(reader, password)
    except Exception as error:  # pypdf reports broken files with many exception types, not only PdfReadError
        raise corrupt(name, "PDF") from error
    if opened:
        return reader, password
    if password is None:
        raise UnreadableDocument(
            f"“{name}” is password-protected. Enter its password to open it (the upload's “password” field), or "
            "remove the password (for example, save or print it as a new PDF without one) and upload it again.",
            reason=UnreadableDocument.ENCRYPTED,
            filename=name,
        )
    raise UnreadableDocument(
        f"The password given for “{name}” does not open it. Check the password and upload it again.",
        reason=UnreadableDocument.WRONG_PASSWORD,
        filename=name,
    )


def _opens_with(reader: PdfReader, password: str) -> bool:
    try:
        return reader.decrypt(password) != PasswordType.NOT_DECRYPTED
    except (PyPdfError, DependencyError, NotImplementedError):
        # An encryption scheme pypdf cannot handle locks the user out just like a password does.
        return False


def _pdf_page_texts(name: str, reader: PdfReader) -> list[str | None]:
    """Each page's raw text, ``None`` where the page itself is broken: one bad page must not cost the rest."""
    try:
        page_count = len(reader.pages)
    except Exception as error:
        raise corrupt(name, "PDF") from error
    if page_count == 0:
        raise corrupt(name, "PDF")
    texts: list[str | None] = []
    for index in range(page_count):
        try:
            texts.append(_page_text(name, index + 1, reader.pages[index]))
        except Exception:
            log.warning("page %d of %s could not be parsed; skipping it", index + 1, name, exc_info=True)
            texts.append(None)
    return texts


def _page_text(name: str, number: int, page: PageObject) -> str:
    """The page's text layer, each glyph its font names without saying which character it is marked unknown.
    Such a font (no ToUnicode map, glyph names outside the Adobe Glyph List: "g40", "SM590000") is read by pypdf
    as the glyph's name, "/g40/g81/g75" for "Enh": junk to search and quote. Marked, the glyphs make a page
    where they are many garbled (and recognised by OCR); elsewhere (a list's bullet) they are dropped."""
    text = page.extract_text()
    try:
        names = _unknown_glyph_names(page.get("/Resources"), set())
    except Exception:  # a damaged font or form costs the marking, not the page's text
        log.warning("the fonts of page %d of %s could not be inspected; its text is kept as read", number, name,
                    exc_info=True)
        return text
    if not names:
        return text
    return re.sub("|".join(map(re.escape, sorted(names, key=len, reverse=True))), _UNKNOWN_GLYPH, text)


def _unknown_glyph_names(resources: PdfObject | None, seen: set[int]) -> set[str]:
    """The glyph names ("/g40") outside the Adobe Glyph List in the encodings of the fonts of a page's
    resources, and of its forms' resources."""
    resources = resources.get_object() if resources is not None else DictionaryObject()
    if id(resources) in seen:
        return set()
    seen.add(id(resources))
    names: set[str] = set()
    for font in _resource_values(resources, "/Font"):
        encoding = font.get("/Encoding", NullObject()).get_object()
        if isinstance(encoding, DictionaryObject) and "/Differences" in encoding:
            differences = encoding["/Differences"].get_object()
            names |= {name for name in differences if isinstance(name, NameObject) and not toUnicode(name[1:])}
    for form in _resource_values(resources, "/XObject"):
        if form.get("/Subtype") == "/Form":
            names |= _unknown_glyph_names(form.get("/Resources"), seen)
    return names


def _resource_values(resources: DictionaryObject, kind: str) -> list[DictionaryObject]:
    return [value.get_object() for value in resources.get(kind, DictionaryObject()).get_object().values()]


def _printed_page_labels(name: str, reader: PdfReader) -> dict[int, str]:
    """The citation label of each page whose printed number differs from its position, by page number."""
    try:
        if "/PageLabels" not in reader.root_object:
            return {}
        printed = reader.page_labels
    except Exception:  # a damaged label tree costs the labels, not the document
        log.warning("the page labels of %s could not be read; its pages are cited by position", name, exc_info=True)
        return {}
    return {
        number: f"Page {label} (PDF page {number})"
        for number, label in enumerate((" ".join(label.split())[:_MAX_PAGE_LABEL_CHARS] for label in printed), 1)
        if label and label != str(number)
    }


def _pdfium_document(name: str, data: bytes, password: str | None) -> pypdfium2.PdfDocument | None:
    """The PDF opened by pdfium, or None when pdfium cannot open what pypdf could: its pages without text are then
    skipped, and the others read as drawn."""
    try:
        return pypdfium2.PdfDocument(data, password=password)
    except pypdfium2.PdfiumError:
        normalised = _saslprep_mapped(password) if password is not None else None
        if normalised != password:
            with contextlib.suppress(pypdfium2.PdfiumError):
                return pypdfium2.PdfDocument(data, password=normalised)
        log.warning("%s could not be opened by pdfium: its pages without text are skipped, the others read as drawn",
                    name, exc_info=True)
        return None


def _saslprep_mapped(password: str) -> str:
    """The password as pypdf tries an AES-256 PDF with it, and pdfium does not: mapped and normalised the way
    SASLprep does (RFC 4013 §2.1-2.2: "a\u200bb" is "ab", a no-break space a space, "ﬁ" "fi"). Where SASLprep
    then refuses it, pypdf uses it as given, which pdfium tried first."""
    mapped = "".join(" " if stringprep.in_table_c12(c) else c for c in password if not stringprep.in_table_b1(c))
    return unicodedata.normalize("NFKC", mapped)


def _recognise_pages_without_text(
    name: str, document: pypdfium2.PdfDocument, texts: list[str | None], recogniser: Recogniser
) -> dict[int, str]:
    """The recognised text of each page whose text layer is missing or garbled, by page number. Without Tesseract,
    a PDF with readable pages loads those (as before OCR existed), and one without any is refused saying why."""
    numbers = [number for number, text in enumerate(texts, start=1) if text is not None and _lacks_text(text)]
    if not numbers:
        return {}
    try:
        pages = {number: page for number in numbers if _has_content(page := document[number - 1])}
        recogniser.expect(len(pages))
        recognised = {number: recogniser.recognise(recogniser.render(page)) for number, page in pages.items()}
        # A garbled text layer is replaced by whatever was recognised; a short one (a date on a scan, a title
        # page's few words) only by more text than it has: Tesseract reads a script it has no data for as a
        # few Latin letters, and would replace an Arabic title with them.
        return {
            number: text for number, text in recognised.items()
            if _looks_garbled(layer := texts[number - 1] or "") or _visible_count(text) > _visible_count(layer)
        }
    except UnreadableDocument as error:
        readable = len(texts) - texts.count(None) - len(numbers)
        if error.reason != UnreadableDocument.OCR_UNAVAILABLE or not readable:
            raise
        log.warning("%s: %s; only the %d pages with a text layer are read", name, error.message, readable)
        return {}


def _column_ordered_texts(name: str, document: pypdfium2.PdfDocument, texts: list[str | None]) -> dict[int, str]:
    """The text of each page laid out in columns read column by column, by page number: pages with a readable
    text layer only, and only where pdfium reads as much of it as pypdf (its text stands in for pypdf's)."""
    numbers = [number for number, text in enumerate(texts, start=1) if text is not None and not _lacks_text(text)]
    if not numbers:
        return {}
    if len(document) != len(texts):
        # A damaged page tree the two readers mend differently: page N of one may not be page N of the other.
        log.warning("%s has %d pages to pdfium, %d to pypdf; its pages are read as drawn", name, len(document),
                    len(texts))
        return {}
    ordered: dict[int, str] = {}
    for number in numbers:
        try:
            page = document[number - 1]
            try:
                text = column_ordered_text(page)
            finally:
                page.close()
        except Exception:  # pdfium failing on a page costs its reading order, not its text
            log.warning("the columns of page %d of %s could not be read; it is read as drawn", number, name,
                        exc_info=True)
            continue
        layer = texts[number - 1] or ""
        if text is not None and _visible_count(text) >= _MIN_COLUMN_TEXT_SHARE * _visible_count(layer) and (
            not _looks_garbled(text)
        ):
            ordered[number] = text
    return ordered


def _lacks_text(text: str) -> bool:
    return _visible_count(text) < _MIN_TEXT_LAYER_CHARACTERS or _looks_garbled(text)


def _visible_count(text: str) -> int:
    """The characters that show text: a glyph naming no character does not (a page of them alone is read by OCR)."""
    return sum(1 for c in text if not c.isspace() and c != _UNKNOWN_GLYPH)


def _has_content(page: pypdfium2.PdfPage) -> bool:
    """False for a page with nothing drawn on it (recognising a blank page would only cost time)."""
    return pypdfium2.raw.FPDFPage_CountObjects(page.raw) > 0


# Below this many visible characters there is too little text to judge, so it is kept.
_GARBLE_MIN_CHARACTERS = 200
# Measured on the shared PDF corpus: real text has 0 % undefined/private-use characters (mojibake CJK: 11 %) and
# Latin text averages 4-7 characters per whitespace-separated token (a font with shifted codes and no spaces: 38).
_GARBLE_MAX_UNDEFINED_SHARE = 0.05
_GARBLE_MAX_LATIN_TOKEN_LENGTH = 20
_GARBLE_LATIN_SHARE = 0.9


def _looks_garbled(text: str) -> bool:
    """True when a text layer decodes to mojibake instead of words. Deliberately conservative: only two signals
    that real text in any script stays far away from."""
    visible = [c for c in text if not c.isspace()]
    if len(visible) < _GARBLE_MIN_CHARACTERS:
        return False
    undefined = sum(1 for c in visible if unicodedata.category(c) in ("Cn", "Co") or c == "\ufffd")
    if undefined > _GARBLE_MAX_UNDEFINED_SHARE * len(visible):
        return True
    # Latin-script languages separate words by spaces; CJK and Thai do not, so only Latin text is measured.
    letters = [c for c in visible if c.isalpha()]
    latin = sum(1 for c in letters if unicodedata.name(c, "").startswith("LATIN"))
    mean_token_length = len(visible) / len(text.split())
    return latin > _GARBLE_LATIN_SHARE * len(letters) and mean_token_length > _GARBLE_MAX_LATIN_TOKEN_LENGTH
