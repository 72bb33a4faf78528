"""TXT and Markdown: the encoding found from a BOM, else UTF-8, else Windows-1252 or Latin-1 where they read as
Western text, else the encoding charset-normalizer finds (Shift-JIS, GBK, EUC-KR, Windows-1251…); binary data
refused."""

from __future__ import annotations

import codecs
import unicodedata

import charset_normalizer

from backend.errors import UnreadableDocument, UnsupportedFileType
from backend.ingest.loaders.text import LoadedPages, pages_with_text

# UTF-32 LE must be tried before UTF-16 LE: its BOM starts with the UTF-16 LE one.
_BOM_ENCODINGS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# Without a BOM: UTF-8 if it decodes, else the usual Western legacy encodings if they read as Western text, else
# whatever charset-normalizer finds, else Latin-1 (never fails). charset-normalizer is not asked first: on short
# French or German text it answers Windows-1250 or EBCDIC ("naďve", "êÁ>ZÁ"). UTF-16 without a BOM is not guessed:
# its NUL bytes make it look binary.
_WESTERN_ENCODINGS = ("cp1252", "latin-1")
# Western languages write a few letters in ten beyond ASCII at most (French about 4 %, German 2 %); GBK, EUC-KR,
# Shift-JIS or Windows-1251 read as Windows-1252 are almost all such letters ("ÕâÊÇÒ»¸ö", "Ýòî ðóññêèé").
_WESTERN_MAX_NON_ASCII_LETTER_SHARE = 0.3
# C1 control characters: text in Latin-1 has a stray one at most; Shift-JIS read as Latin-1 is a third of them.
_WESTERN_MAX_CONTROL_SHARE = 0.05
# How much of a file its encoding is judged by: enough lines for any script to show, and a 25 MB file is not read
# character by character once more (charset-normalizer takes 10 s over all of one).
_ENCODING_SAMPLE_BYTES = 256 * 1024
# Text has almost no control characters besides tab and newlines; random binary has about one in eight.
_BINARY_CONTROL_SHARE = 0.05
# Real text in any script has next to no replacement, unassigned or private-use characters (the shared PDF corpus:
# 0 %); bytes read in the wrong encoding are full of them.
_TEXT_MAX_UNREADABLE_SHARE = 0.05


def load_text(name: str, data: bytes) -> LoadedPages:
    text = decode_text(name, data)
    pages = pages_with_text([text])
    if not pages:
        raise UnreadableDocument(
            f"“{name}” contains no text.", reason=UnreadableDocument.EMPTY, filename=name
        )
    return LoadedPages(pages, page_count=1)


def decode_text(name: str, data: bytes, kind: str = "a text file") -> str:
    """``data`` as text (``kind`` names what the file claims to be when it turns out binary)."""
    text = _decode_by_bom(data)
    if text is None:
        text = "" if b"\x00" in data else _decode_without_bom(data)
        controls = sum(1 for c in text if unicodedata.category(c) == "Cc" and c not in "\t\n\r\f")
        if not text or controls > _BINARY_CONTROL_SHARE * len(text):
            raise UnsupportedFileType(
                f"“{name}” is named as {kind} but contains binary data, not text.", filename=name
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
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    sample = data[:_ENCODING_SAMPLE_BYTES]
    if len(data) > len(sample) and b"\n" in sample:  # a character cut in two would mislead the judgement
        sample = sample[: sample.rindex(b"\n")]
    for encoding in _WESTERN_ENCODINGS:
        # The sample is judged before the whole file is decoded: a file of another script is decoded once, by the
        # encoding found for it, not first in full by each Western encoding it fails.
        try:
            if _reads_as_western_text(sample.decode(encoding)):
                return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    found = charset_normalizer.from_bytes(sample).best()
    return data.decode(found.encoding, errors="replace") if found is not None else data.decode("latin-1")


def _reads_as_western_text(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    non_ascii = sum(1 for c in letters if not c.isascii())
    controls = sum(1 for c in text if "\x80" <= c <= "\x9f")
    return (
        non_ascii <= _WESTERN_MAX_NON_ASCII_LETTER_SHARE * len(letters)
        and controls <= _WESTERN_MAX_CONTROL_SHARE * len(text)
    )
