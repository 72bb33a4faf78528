"""Running headers and footers: the lines a document repeats at the top or bottom of its pages (a journal's
name, "Page 3 of 20", a confidentiality notice). Left in, every page's chunks carry them: keyword search finds
them everywhere, and answers and quotes repeat them. pypdf reads them as ordinary text: they are found here.

Lines are compared with every number read as "#", and a line is running when it stands among the first or last
few lines of pages in one of two ways:

- word for word the same on a third of the pages or more;
- numbering the pages: the same but for a number that is the page's number plus an offset ("Page 3 of 20" on
  page 3, "47701 Federal Register" on page 4), on a few pages and on most of those the line's shape is found
  on, where lines numbering the pages by that offset are found on a third of the pages between them (a book's
  header changes with its chapter: "56 3.3. ÜBERLAGERUNGEN" on the section's pages, "72 4.1. TOPOLOGIE" on the
  next). A line of the same shape off the sequence is passed over: a bare year "2019" atop a page, in a
  document whose pages end in their bare numbers "7", neither numbers its page nor stops the others from
  numbering theirs (nor from running the same, had every page begun with it).

A line repeating with the same numbers on a stretch of pages and other numbers on the next ("Exhibit
2.3.59-51" on the pages of one exhibit) names a section, not a page: it is kept, as is every line away from
the edges, a line found on few pages, and every line of a document of few pages. So is a line of a running
line's shape that does not repeat it: other text, or numbers that are not the page's by the running line's
offset (a table's "1995" near the bottom of a page, in a document whose pages end in their bare numbers "7").

Each running line stays where it first appears: the journal's name, the form's title or the notice are still
found once, quoted there and cited on their page; only the repetitions go. A page left without text is
dropped, as a blank page is (the document's page count still counts it)."""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from collections.abc import Sequence

from backend.ingest.loaders.text import normalise_text
from backend.models import Page

# Documents of fewer pages are left as they are: too few to tell a running line from a repeated one.
_MIN_PAGES = 4
# How far from the top or bottom of a page (in lines with text) a running line is looked for. A line numbering
# the pages deeper: a text layer's order is not always the page's (the 400-page manual's page header comes
# fourth from the bottom), and such a line is not body text. A line the same on every page only in the first
# and last two: deeper it is more likely body text, such as the column headings that the manual's tables
# repeat under their two-line titles on every page.
_PAGE_NUMBER_DEPTH = 4
_SAME_LINE_DEPTH = 2
# The share of the pages a line must run on: a third, so that headers alternating between left and right pages
# (the authors on one, the title on the other) are found; and on how many pages at least, whatever the share.
_MIN_SHARE = 1 / 3
_MIN_REPEATS = 3
_NUMBER = re.compile(r"\d+")


@dataclasses.dataclass(slots=True)
class _Candidate:
    """A line, numbers aside, as found near the edge of pages: its texts and depths there, by page number."""

    found: defaultdict[int, list[tuple[str, int]]] = dataclasses.field(
        default_factory=lambda: defaultdict(list)
    )

    def numbered_pages(self) -> dict[int, set[int]]:
        """The offsets by which one of its numbers is the page's number on most of the pages it is on (a few at
        least), each with those pages. A number off that sequence (a year atop one page) numbers no page but
        does not stop the others from numbering theirs."""
        pages_by_offset: defaultdict[int, set[int]] = defaultdict(set)
        for page, lines in self.found.items():
            for line, _ in lines:
                for number in _NUMBER.findall(line):
                    pages_by_offset[int(number) - page].add(page)
        return {
            offset: pages for offset, pages in pages_by_offset.items()
            if len(pages) >= _MIN_REPEATS and len(pages) > len(self.found) / 2
        }

    def same_at_edge(self, min_pages: float, numbering: frozenset[int]) -> str | None:
        """The line, word for word, at the very edge of enough pages (the first there on each); None if it is
        not the same there. A line numbering its page by one of the offsets ``numbering`` is passed over (a bare
        "7" above a running "2019")."""
        at_edge: list[str] = []
        for page, lines in self.found.items():
            at_edge.extend([
                line for line, depth in lines
                if depth < _SAME_LINE_DEPTH and not _numbers_page(line, page, numbering)
            ][:1])
        return at_edge[0] if len(at_edge) >= min_pages and len(set(at_edge)) == 1 else None


@dataclasses.dataclass(frozen=True, slots=True)
class _Running:
    """A running line: the page it is kept on, how deep it is removed from the others, and which lines of its
    pattern repeat it: those whose text is ``text``, or else those numbering the pages by one of ``offsets``
    (a table's "1995" or a total near the bottom of a page is not its bare page number "7")."""

    kept_on: int
    depth: int
    text: str | None = None
    offsets: frozenset[int] = frozenset()

    def repeated_by(self, line: str, page: int, depth: int) -> bool:
        if page <= self.kept_on or depth >= self.depth:
            return False
        if self.text is not None:
            return line == self.text
        return _numbers_page(line, page, self.offsets)


def without_running_headers(pages: Sequence[Page]) -> list[Page]:
    """The pages without the repetitions of their running headers and footers."""
    if len(pages) < _MIN_PAGES:
        return list(pages)
    candidates: defaultdict[str, _Candidate] = defaultdict(_Candidate)
    for page in pages:
        lines = page.text.split("\n")
        for index, depth in _near_edges(lines).items():
            candidates[_pattern(lines[index])].found[page.number].append((lines[index], depth))
    min_pages = max(_MIN_REPEATS, _MIN_SHARE * len(pages))
    numbering = _numbering_pages(candidates, min_pages)
    # A pattern may both number the pages and run the same on them: "#" for a bare "7" and a bare "2019".
    running: defaultdict[str, list[_Running]] = defaultdict(list)
    for pattern, candidate in candidates.items():
        if numbered := numbering.get(pattern):
            running[pattern].append(numbered)
        offsets = numbered.offsets if numbered else frozenset()
        if (text := candidate.same_at_edge(min_pages, offsets)) is not None:
            first = min(page for page, lines in candidate.found.items() if any(line == text for line, _ in lines))
            running[pattern].append(_Running(first, _SAME_LINE_DEPTH, text=text))
    kept = []
    for page in pages:
        lines = page.text.split("\n")
        repeated = {
            index for index, depth in _near_edges(lines).items()
            if any(
                line_running.repeated_by(lines[index], page.number, depth)
                for line_running in running.get(_pattern(lines[index]), ())
            )
        }
        text = normalise_text("\n".join(line for index, line in enumerate(lines) if index not in repeated))
        if text:
            kept.append(dataclasses.replace(page, text=text))
    return kept


def _numbering_pages(candidates: dict[str, _Candidate], min_pages: float) -> dict[str, _Running]:
    """The lines numbering the pages, each running from the first page it numbers by its offsets: those by which
    one of its numbers is the page's, and that such lines have on enough pages between them."""
    numbered_pages = {pattern: candidate.numbered_pages() for pattern, candidate in candidates.items()}
    pages_by_offset: defaultdict[int, set[int]] = defaultdict(set)
    for by_offset in numbered_pages.values():
        for offset, on_pages in by_offset.items():
            pages_by_offset[offset] |= on_pages
    numbered = {offset for offset, on_pages in pages_by_offset.items() if len(on_pages) >= min_pages}
    return {
        pattern: _Running(
            min(page for offset in offsets for page in by_offset[offset]), _PAGE_NUMBER_DEPTH,
            offsets=frozenset(offsets),
        )
        for pattern, by_offset in numbered_pages.items() if (offsets := by_offset.keys() & numbered)
    }


def _numbers_page(line: str, page: int, offsets: frozenset[int]) -> bool:
    """Whether one of the numbers of ``line`` is ``page``'s number plus one of ``offsets``."""
    return any(int(number) - page in offsets for number in _NUMBER.findall(line))


def _near_edges(lines: list[str]) -> dict[int, int]:
    """The indexes of the lines with text near the top or bottom, and their depth (0: the first and last)."""
    with_text = [index for index, line in enumerate(lines) if line]
    depths: dict[int, int] = {}
    top, bottom = with_text[:_PAGE_NUMBER_DEPTH], with_text[::-1][:_PAGE_NUMBER_DEPTH]
    for depth, (from_top, from_bottom) in enumerate(zip(top, bottom, strict=True)):
        depths.setdefault(from_top, depth)
        depths.setdefault(from_bottom, depth)
    return depths


def _pattern(line: str) -> str:
    return _NUMBER.sub("#", line)
