"""Running headers and footers: the lines a document repeats at the top or bottom of its pages (a journal's name,
"Page 3 of 20", a confidentiality notice). Left in, every page's chunks carry them: keyword search finds them
everywhere, and answers and quotes repeat them. pypdf extracts them as ordinary text, so they are found here.

A line is running when it stands among the first or last few lines of a large share of the document's pages, in
one of two ways: word for word the same, or the same but for numbers that grow from page to page (a page number:
"Page 3 of 20", "-3- Instructions for Form 1040NR"). Both are compared with every number read as "#". A line that
repeats with the same numbers on a stretch of pages and other numbers on the next stretch ("Exhibit 2.3.59-51" on
the pages of one exhibit) names a section: it is kept, as is every line away from the edges, a line found on few
pages, and every line of a short document.

Each running line stays where it first appears: the journal's name, the form's title or the notice are still found
once, quoted there and cited on their page; only the repetitions go. A page left without text is dropped, as a
blank page is (the document's page count still counts it)."""

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
# the pages deeper: a text layer's order is not always the page's (the 400-page manual's page header comes fourth
# from the bottom), and such a line is not body text. A line the same on every page only in the first and last
# two: deeper it is more likely body text, such as the column headings that the manual's tables repeat under their
# two-line titles on every page.
_PAGE_NUMBER_DEPTH = 4
_SAME_LINE_DEPTH = 2
# The share of the pages a line must run on: a third, so that headers alternating between left and right pages
# (the authors on one, the title on the other) are found.
_MIN_SHARE = 1 / 3
_MIN_REPEATS = 3
_NUMBER = re.compile(r"\d+")


@dataclasses.dataclass(slots=True)
class _Candidate:
    """A line, numbers aside, as found near the edge of pages: its text and depth there, by page number."""

    found: dict[int, tuple[str, int]] = dataclasses.field(default_factory=dict)

    def running_depth(self, min_pages: float) -> int:
        """How deep it runs on the pages: 0 if it does not run."""
        if len(self.found) >= min_pages and self._numbers_pages():
            return _PAGE_NUMBER_DEPTH
        at_edge = [line for line, depth in self.found.values() if depth < _SAME_LINE_DEPTH]
        return _SAME_LINE_DEPTH if len(at_edge) >= min_pages and len(set(at_edge)) == 1 else 0

    def _numbers_pages(self) -> bool:
        """One of its numbers is the page's number, give or take the same offset on every page it is on."""
        offsets = [
            [int(number) - page for number in _NUMBER.findall(line)] for page, (line, _) in self.found.items()
        ]
        return len(offsets) > 1 and any(len({each[i] for each in offsets}) == 1 for i in range(len(offsets[0])))


def without_running_headers(pages: Sequence[Page]) -> list[Page]:
    """The pages without the repetitions of their running headers and footers."""
    if len(pages) < _MIN_PAGES:
        return list(pages)
    candidates: defaultdict[str, _Candidate] = defaultdict(_Candidate)
    for page in pages:
        lines = page.text.split("\n")
        for index, depth in _near_edges(lines).items():
            candidates[_pattern(lines[index])].found.setdefault(page.number, (lines[index], depth))
    min_pages = max(_MIN_REPEATS, _MIN_SHARE * len(pages))
    running = {
        pattern: (min(candidate.found), depth)
        for pattern, candidate in candidates.items()
        if (depth := candidate.running_depth(min_pages))
    }
    kept = []
    for page in pages:
        lines = page.text.split("\n")
        repeated = {
            index for index, depth in _near_edges(lines).items()
            if (first_page_and_depth := running.get(_pattern(lines[index])))
            and first_page_and_depth[0] < page.number and depth < first_page_and_depth[1]
        }
        text = normalise_text("\n".join(line for index, line in enumerate(lines) if index not in repeated))
        if text:
            kept.append(dataclasses.replace(page, text=text))
    return kept


def _near_edges(lines: list[str]) -> dict[int, int]:
    """The indexes of the lines with text near the top or bottom, with their depth: 0 for the first and last."""
    with_text = [index for index, line in enumerate(lines) if line]
    depths: dict[int, int] = {}
    for depth in range(_PAGE_NUMBER_DEPTH):
        for index in with_text[depth : depth + 1] + with_text[len(with_text) - 1 - depth :][:1]:
            depths.setdefault(index, depth)
    return depths


def _pattern(line: str) -> str:
    return _NUMBER.sub("#", line)
