"""Turn an uploaded file's bytes into pages of clean text.

The extension decides which type a file may be (.pdf, .txt, .md, .markdown, .docx, any case); the content decides
whether it really is that type. Every failure is a typed, user-readable error:

- unknown extension, or content of another kind than the extension claims (a PNG named .pdf, a zip without
  ``word/document.xml`` named .docx, binary data named .txt) → ``UnsupportedFileType``: whatever its name says,
  the file is not one of the types Axiom reads;
- content of the claimed kind that cannot be parsed (starts like a PDF but is broken, a truncated .docx)
  → ``UnreadableDocument(reason=CORRUPT)``;
- 0 bytes or only whitespace → ``EMPTY``; needs a password to open → ``ENCRYPTED`` (a PDF that opens with the empty
  user password, i.e. one only restricted by an owner password, loads);
- parses but yields no readable text (scanned pages; a PDF text layer that decodes to mojibake) → ``NO_TEXT``.

PDF pages keep their real 1-based numbers even when pages without text are skipped. A DOCX has no fixed pages, so
its "pages" are the stretches between explicit page breaks and page-starting section breaks.
"""

from __future__ import annotations

import codecs
import io
import itertools
import logging
import re
import unicodedata
import zipfile
from collections.abc import Callable, Iterable
from pathlib import PurePosixPath

import docx
from docx.oxml.ns import qn
from docx.oxml.xmlchemy import BaseOxmlElement
from lxml import etree
from pypdf import PasswordType, PdfReader
from pypdf.errors import DependencyError, PyPdfError

from backend.errors import UnreadableDocument, UnsupportedFileType
from backend.models import LoadedDocument, Page

log = logging.getLogger(__name__)

FILE_TYPES_BY_EXTENSION = {".pdf": "pdf", ".txt": "txt", ".md": "md", ".markdown": "md", ".docx": "docx"}

# PDFs often draw "fi", "ff", … as one ligature glyph; NFC keeps it, and "ﬁnd" would then never match "find".
_LIGATURES = str.maketrans({"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"})
_LINE_BREAKS = re.compile(r"\r\n?|[\v\f\x1c-\x1e\x85\u2028\u2029]")
# C0/C1 controls except \t and \n, lone surrogates (unencodable, some PDFs yield them) and stray BOMs.
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufeff]")
_HORIZONTAL_WHITESPACE = re.compile(r"[^\S\n]+")
_SPACE_AROUND_NEWLINE = re.compile(r" ?\n ?")
_BLANK_LINES = re.compile(r"\n{3,}")


def load_document(filename: str, data: bytes) -> LoadedDocument:
    """Load ``data`` uploaded as ``filename``; the result's filename is the base name only (no directories)."""
    name = base_filename(filename)
    file_type = _file_type(name)
    if not data or data.isspace():
        raise UnreadableDocument(f"“{name}” is empty.", reason=UnreadableDocument.EMPTY, filename=name)
    pages = _LOADERS[file_type](name, data)
    return LoadedDocument(filename=name, file_type=file_type, pages=tuple(pages))


def base_filename(filename: str) -> str:
    """The last path component, whichever separator the client used, NFC, without control or format characters
    (which could hide the real extension, e.g. a right-to-left override)."""
    last_component = re.split(r"[\\/]", filename)[-1]
    visible = "".join(c for c in last_component if unicodedata.category(c) not in ("Cc", "Cf", "Cs"))
    return unicodedata.normalize("NFC", visible).strip()


# A lowercase word split by a hyphen at the end of a line: typeset hyphenation, not a compound word.
_HYPHENATED_LINE_BREAK = re.compile(r"(\w)-\n([a-z])")


def normalise_text(text: str) -> str:
    """NFC, ligatures expanded, line breaks unified, control characters dropped, whitespace runs collapsed,
    words hyphenated across a line break rejoined (so "compre-\nhension" is found by a search for it)."""
    text = unicodedata.normalize("NFC", text).translate(_LIGATURES)
    text = _LINE_BREAKS.sub("\n", text)
    text = _CONTROL_CHARACTERS.sub("", text)
    text = _HORIZONTAL_WHITESPACE.sub(" ", text)
    text = _SPACE_AROUND_NEWLINE.sub("\n", text)
    text = _HYPHENATED_LINE_BREAK.sub(r"\1\2", text)
    return _BLANK_LINES.sub("\n\n", text).strip()


def _file_type(name: str) -> str:
    extension = PurePosixPath(name).suffix.lower()
    if extension not in FILE_TYPES_BY_EXTENSION:
        supported = ", ".join(FILE_TYPES_BY_EXTENSION)
        raise UnsupportedFileType(
            f"“{name}” is not a supported file type. Supported types: {supported}.",
            filename=name,
            supported_extensions=list(FILE_TYPES_BY_EXTENSION),
        )
    return FILE_TYPES_BY_EXTENSION[extension]


def _pages_with_text(texts: Iterable[str]) -> list[Page]:
    """Normalised pages numbered by position from 1, dropping those left without text."""
    pages = (Page(number=number, text=normalise_text(text)) for number, text in enumerate(texts, start=1))
    return [page for page in pages if page.text]


def _corrupt(name: str, kind: str) -> UnreadableDocument:
    return UnreadableDocument(
        f"“{name}” looks like a {kind} but is damaged and cannot be read. Open and save it again, then re-upload.",
        reason=UnreadableDocument.CORRUPT,
        filename=name,
    )


# --- PDF -----------------------------------------------------------------------------------------------------------

_PDF_MAGIC = b"%PDF-"
# Readers accept junk before the header as long as it starts within the first kilobyte (as Acrobat does).
_PDF_HEADER_WINDOW = 1024


def load_pdf(name: str, data: bytes) -> list[Page]:
    if _PDF_MAGIC not in data[:_PDF_HEADER_WINDOW]:
        raise UnsupportedFileType(
            f"“{name}” is named .pdf but its content is not a PDF document.", filename=name
        )
    reader = _open_pdf(name, data)
    texts = _pdf_page_texts(name, reader)
    pages = _pages_with_text(text or "" for text in texts)
    if not pages and None in texts:
        raise _corrupt(name, "PDF")
    if not pages:
        raise UnreadableDocument(
            f"“{name}” has no text layer: it looks like a scanned document. Text recognition (OCR) is not "
            "supported; run it through an OCR tool first, or upload a version with selectable text.",
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
    return pages


def _open_pdf(name: str, data: bytes) -> PdfReader:
    try:
        reader = PdfReader(io.BytesIO(data))
        locked = reader.is_encrypted and not _opens_without_password(reader)
    except Exception as error:  # pypdf reports broken files with many exception types, not only PdfReadError
        raise _corrupt(name, "PDF") from error
    if locked:
        raise UnreadableDocument(
            f"“{name}” is password-protected. Remove the password (for example, save or print it as a new PDF "
            "without one) and upload it again.",
            reason=UnreadableDocument.ENCRYPTED,
            filename=name,
        )
    return reader


def _opens_without_password(reader: PdfReader) -> bool:
    try:
        return reader.decrypt("") != PasswordType.NOT_DECRYPTED
    except (PyPdfError, DependencyError, NotImplementedError):
        # An encryption scheme pypdf cannot handle locks the user out just like a password does.
        return False


def _pdf_page_texts(name: str, reader: PdfReader) -> list[str | None]:
    """Each page's raw text, ``None`` where the page itself is broken: one bad page must not cost the rest."""
    try:
        page_count = len(reader.pages)
    except Exception as error:
        raise _corrupt(name, "PDF") from error
    if page_count == 0:
        raise _corrupt(name, "PDF")
    texts: list[str | None] = []
    for index in range(page_count):
        try:
            texts.append(reader.pages[index].extract_text())
        except Exception:
            log.warning("page %d of %s could not be parsed; skipping it", index + 1, name, exc_info=True)
            texts.append(None)
    return texts


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


# --- TXT and Markdown ----------------------------------------------------------------------------------------------

# UTF-32 LE must be tried before UTF-16 LE: its BOM starts with the UTF-16 LE one.
_BOM_ENCODINGS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# Without a BOM: UTF-8 if it decodes, else Windows-1252 (the usual legacy encoding), else Latin-1 (never fails).
# UTF-16 without a BOM is not guessed: its NUL bytes make it look binary.
_FALLBACK_ENCODINGS = ("utf-8", "cp1252")
# Text has almost no control characters besides tab and newlines; random binary has about one in eight.
_BINARY_CONTROL_SHARE = 0.05
# Real text in any script has next to no replacement, unassigned or private-use characters (the shared PDF corpus:
# 0 %); bytes read in the wrong encoding are full of them.
_TEXT_MAX_UNREADABLE_SHARE = 0.05


def load_text(name: str, data: bytes) -> list[Page]:
    text = _decode_text(name, data)
    pages = _pages_with_text([text])
    if not pages:
        raise UnreadableDocument(
            f"“{name}” contains no text.", reason=UnreadableDocument.EMPTY, filename=name
        )
    return pages


def _decode_text(name: str, data: bytes) -> str:
    text = _decode_by_bom(data)
    if text is None:
        text = "" if b"\x00" in data else _decode_without_bom(data)
        controls = sum(1 for c in text if unicodedata.category(c) == "Cc" and c not in "\t\n\r\f")
        if not text or controls > _BINARY_CONTROL_SHARE * len(text):
            raise UnsupportedFileType(
                f"“{name}” is named as a text file but contains binary data, not text.", filename=name
            )
    if _unreadable_share(text) > _TEXT_MAX_UNREADABLE_SHARE:
        raise UnreadableDocument(
            f"“{name}” does not decode to readable text (its bytes do not match the encoding it declares). Save it "
            "again as UTF-8 and re-upload it.",
            reason=UnreadableDocument.NO_TEXT, filename=name,
        )
    return text


def _decode_by_bom(data: bytes) -> str | None:
    for bom, encoding in _BOM_ENCODINGS:
        if data.startswith(bom):
            return data.decode(encoding, errors="replace")
    return None


def _unreadable_share(text: str) -> float:
    """The share of characters no text is made of: replacement characters, unassigned, private-use, surrogate and
    format code points, and control characters other than tab and line breaks."""
    visible = [c for c in text if not c.isspace()]
    if not visible:
        return 0.0
    unreadable = sum(
        1 for c in visible if c == "\ufffd" or unicodedata.category(c) in ("Cc", "Cf", "Cn", "Co", "Cs")
    )
    return unreadable / len(visible)


def _decode_without_bom(data: bytes) -> str:
    for encoding in _FALLBACK_ENCODINGS:
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


# --- DOCX ----------------------------------------------------------------------------------------------------------

_ZIP_MAGIC = b"PK\x03\x04"
_DOCX_MAIN_PART = "word/document.xml"
# python-docx inflates every part in memory; a small zip that expands to gigabytes must not take the server down.
_DOCX_MAX_EXPANDED_BYTES = 512 * 1024 * 1024
# python-docx holds the whole body as an lxml tree (~120 bytes a node): 64 MB of empty paragraphs is 11 M nodes and
# 1.35 GB. A 400-page report has a few hundred thousand nodes; past this many the body is refused before it is built.
_DOCX_MAX_BODY_ELEMENTS = 2_000_000
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
    if not data.startswith(_ZIP_MAGIC):
        raise UnsupportedFileType(
            f"“{name}” is named .docx but is not a Word document (older binary .doc files are not supported: "
            "save it as .docx first).",
            filename=name,
        )
    _check_docx_archive(name, data)
    _check_docx_body_size(name, data)
    try:
        body = docx.Document(io.BytesIO(data)).element.body
    except Exception as error:  # python-docx and lxml raise many types for a damaged package
        raise _corrupt(name, "Word document") from error
    pages = _pages_with_text(_document_text(body).split(_PAGE_BREAK))
    if not pages:
        raise UnreadableDocument(
            f"“{name}” contains no text (text inside images is not read).",
            reason=UnreadableDocument.NO_TEXT,
            filename=name,
        )
    return pages


def _check_docx_archive(name: str, data: bytes) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise _corrupt(name, "Word document") from error
    if _DOCX_MAIN_PART not in {member.filename for member in members}:
        raise UnsupportedFileType(
            f"“{name}” is a zip archive but not a Word document (it has no {_DOCX_MAIN_PART}).", filename=name
        )
    if sum(member.file_size for member in members) > _DOCX_MAX_EXPANDED_BYTES:
        raise _corrupt(name, "Word document")


def _check_docx_body_size(name: str, data: bytes) -> None:
    """Counts the main part's elements with a streaming reader that keeps none of them, so a body too large to
    hold is refused in constant memory."""
    elements = 0
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive, archive.open(_DOCX_MAIN_PART) as part:
            for _, element in etree.iterparse(part, events=("end",), resolve_entities=False, no_network=True):
                elements += 1
                if elements > _DOCX_MAX_BODY_ELEMENTS:
                    raise UnreadableDocument(
                        f"“{name}” has too many paragraphs and other parts to read safely (more than "
                        f"{_DOCX_MAX_BODY_ELEMENTS:,}). Split it into smaller documents and upload those.",
                        reason=UnreadableDocument.TOO_COMPLEX, filename=name,
                    )
                element.clear(keep_tail=True)
                while element.getprevious() is not None:  # drop finished siblings, or the tree still grows
                    del element.getparent()[0]
    except (etree.XMLSyntaxError, zipfile.BadZipFile, OSError, EOFError) as error:
        raise _corrupt(name, "Word document") from error


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


_LOADERS: dict[str, Callable[[str, bytes], list[Page]]] = {
    "pdf": load_pdf,
    "txt": load_text,
    "md": load_text,
    "docx": load_docx,
}
