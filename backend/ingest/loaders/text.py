"""What every loader shares: its result, text normalisation, numbering pages, and the "damaged file" error."""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Callable, Iterable

from backend.errors import UnreadableDocument
from backend.models import Page


@dataclasses.dataclass(frozen=True, slots=True)
class LoadedPages:
    """A loader's result: the pages with text, and how many pages the document has (those without text too: a
    PDF's blank pages, an empty slide or sheet)."""

    pages: list[Page]
    page_count: int


# PDFs often draw "fi", "ff", … as one ligature glyph; NFC keeps it, and "ﬁnd" would then never match "find".
_LIGATURES = str.maketrans({"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"})
_LINE_BREAKS = re.compile(r"\r\n?|[\v\f\x1c-\x1e\x85\u2028\u2029]")
# C0/C1 controls except \t and \n, lone surrogates (unencodable, some PDFs yield them) and stray BOMs.
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufeff]")
_HORIZONTAL_WHITESPACE = re.compile(r"[^\S\n]+")
_SPACE_AROUND_NEWLINE = re.compile(r" ?\n ?")
_BLANK_LINES = re.compile(r"\n{3,}")


# A lowercase word split by a hyphen at the end of a line: typeset hyphenation, not a compound word; but a word
# holding a hyphen already ("left-to-\nright") is a compound broken at one of its own hyphens, which stays.
# Possessive, and anchored at a word's start: a long run of word characters is scanned once, not from each
# of its positions (quadratic on a file of one long token).
_HYPHENATED_LINE_BREAK = re.compile(r"(?<![\w-])(\w++(?:-\w++)*+)-\n([a-z]\w*+)")
_WORD = re.compile(r"\w++(?:-\w++)*+")


def normalise_text(text: str) -> str:
    """NFC, ligatures expanded, line breaks unified, control characters dropped, whitespace runs collapsed,
    words hyphenated across a line break rejoined (so "compre-\nhension" is found by a search for it)."""
    return _rejoined_lines(_cleaned(text), frozenset())


def _cleaned(text: str) -> str:
    text = unicodedata.normalize("NFC", text).translate(_LIGATURES)
    text = _LINE_BREAKS.sub("\n", text)
    text = _CONTROL_CHARACTERS.sub("", text)
    text = _HORIZONTAL_WHITESPACE.sub(" ", text)
    return _SPACE_AROUND_NEWLINE.sub("\n", text)


def _rejoined_lines(text: str, compounds: frozenset[str]) -> str:
    """``text`` with its hyphenated line breaks rejoined, but for the lowercase ``compounds`` ("sentence-level"),
    which keep their hyphen; its runs of blank lines made one."""

    def rejoined(broken: re.Match) -> str:
        word, rest = broken.groups()
        compound = f"{word}-{rest}"
        return compound if "-" in word or compound.lower() in compounds else word + rest

    return _BLANK_LINES.sub("\n\n", _HYPHENATED_LINE_BREAK.sub(rejoined, text)).strip()


def _compounds_written_whole(texts: list[str]) -> frozenset[str]:
    """The words the texts break at a hyphen at a line end ("sentence-\nlevel") that they also write whole with
    that hyphen ("sentence-level") and never closed up ("sentencelevel"): a typesetter broke a compound at its own
    hyphen there, where "docu-\nment" is a word hyphenated to fit the line. Lowercase."""
    broken = {
        f"{word}-{rest}".lower() for text in texts for word, rest in _HYPHENATED_LINE_BREAK.findall(text)
        if "-" not in word
    }
    if not broken:
        return frozenset()
    closed_up = {compound.replace("-", "") for compound in broken}
    written: set[str] = set()
    for text in texts:
        for token in _WORD.finditer(text):
            if (word := token[0].lower()) in broken or word in closed_up:
                written.add(word)
    return frozenset(
        compound for compound in broken if compound in written and compound.replace("-", "") not in written
    )


def pages_with_text(texts: Iterable[str]) -> list[Page]:
    """Normalised pages numbered by position from 1, dropping those left without text. A compound broken at its
    hyphen at a line end keeps the hyphen when the document writes it so elsewhere (_compounds_written_whole)."""
    cleaned = [_cleaned(text) for text in texts]
    compounds = _compounds_written_whole(cleaned)
    pages = (
        Page(number=number, text=_rejoined_lines(text, compounds)) for number, text in enumerate(cleaned, start=1)
    )
    return [page for page in pages if page.text]


def pages_or_no_text(
    name: str, texts: Iterable[str], message: str | None = None, reason: str = UnreadableDocument.NO_TEXT
) -> list[Page]:
    """``pages_with_text``, or the typed error when none has any. The default message is the packages' (DOCX, PPTX,
    EPUB): their words may all be in images, which text recognition does not read there."""
    pages = pages_with_text(texts)
    if not pages:
        raise UnreadableDocument(
            message or f"“{name}” contains no text (text inside images is not read).", reason=reason, filename=name
        )
    return pages


def labelled(pages: Iterable[Page], label_of: Callable[[int], str]) -> list[Page]:
    """The pages, each labelled for citations by ``label_of(its number)`` ("Slide 3")."""
    return [dataclasses.replace(page, label=label_of(page.number)) for page in pages]


def corrupt(name: str, kind: str) -> UnreadableDocument:
    return UnreadableDocument(
        f"“{name}” looks like a {kind} but is damaged and cannot be read. Open and save it again, then re-upload.",
        reason=UnreadableDocument.CORRUPT,
        filename=name,
    )
