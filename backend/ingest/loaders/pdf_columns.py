"""Reading order of a PDF page laid out in columns. A text layer lists its characters in the order they were
drawn, and a typesetter may draw a page line by line across its columns (the IRS's instructions do): read in
that order, a sentence of one column is spliced with the lines beside it. Here the page's characters and their
boxes (pdfium's text page) are grouped into runs along a line, and a gutter is a vertical strip of the page no
run crosses but a few, with runs of text on either side. The runs crossing it (a title, a full-width table's
rows, a page number centred under it) cut the page into bands, each read column by column, in place between
them; a band whose strips do not separate columns of prose (a table's columns, a form's fields) is read as drawn.
A page without columns across its height is cut where it is blank across, and each part looked at alike (three
columns above a worksheet spanning two of them). A page where no columns are found has none: its text is left as
the loader read it (pypdf)."""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
import re
import statistics

import pypdfium2
import pypdfium2.raw as pdfium_c

# Characters that separate runs rather than belong to them (pdfium generates the line breaks).
_BLANKS = frozenset(map(ord, " \t\r\n\u00a0"))
# pdfium's codes for a hyphen it judged to end a line (a word broken there): it is still a hyphen.
_HYPHENS = str.maketrans({"\x02": "-", "\ufffe": "-"})
# A line break pdfium generated, and how close characters touch (share of their height) to be read as one word.
_RUN_LINE_BREAK = re.compile("\r\n")
_TOUCHING = 0.15
# A character turned further than this (its angle's sine) is not on a horizontal line.
_MAX_UPRIGHT_SINE = 0.1
# Two characters of a line belong to one run while the space between them is narrower than this share of the
# line's height: wider than a justified line's widest word space, narrower than the narrowest gutter measured on
# the shared PDFs (the IRS's three columns: 13 pt beside 11 pt lines).
_MAX_GAP_IN_RUN = 0.5
# A gutter is at least this share of the line height wide, and at most this share of the text's width: a wider
# empty strip is the space between a table's columns, or a margin.
_MIN_GUTTER_WIDTH = 0.5
_MAX_GUTTER_SHARE = 0.1
# Runs that may cross a gutter: this share of the page's runs, or at least a few (titles, a page number).
_CROSSING_SHARE = 0.05
_MIN_CROSSING = 3
# A run wider than this share of the text's width is not inside any column.
_WIDE_RUN_SHARE = 0.6
# A column is at least this share of the text's width (a table's columns are narrow, or hold short cells).
_MIN_COLUMN_SHARE = 0.2
# A column holds prose: at least this many lines, their median width this share of the column's (a table's cells
# are short, most of its column empty), and their height this share of the column's (a manual's margin of
# headings beside its text is no column: few lines far apart, each belonging with the text beside it).
_MIN_COLUMN_LINES = 4
_MIN_LINE_FILL = 0.6
_MIN_LINE_DENSITY = 0.4
# A region without columns is cut at blank strips across it this share of a line high, that many times at most.
_MIN_ZONE_GAP = 1.0
_MAX_DEPTH = 3
# More columns than this side by side are a table's.
_MAX_COLUMNS = 4


@dataclasses.dataclass(slots=True)
class _Run:
    """Characters ``first``..``last`` of the text page, drawn one after the other along a line."""

    first: int
    last: int
    left: float
    bottom: float
    right: float
    top: float
    # Turned text (a production stamp up a margin): placed, but no part of the page's geometry.
    upright: bool = True

    @property
    def height(self) -> float:
        return self.top - self.bottom

    @property
    def middle(self) -> float:
        return (self.bottom + self.top) / 2


@dataclasses.dataclass(frozen=True, slots=True)
class _Gutter:
    left: float
    right: float


def column_ordered_text(page: pypdfium2.PdfPage) -> str | None:
    """The page's text read column by column, or ``None`` when the page is not laid out in columns."""
    if page.get_rotation():
        return None  # the boxes are in the unrotated page's space, where its columns would be rows
    left, _, right, _ = page.get_cropbox()
    text_page = page.get_textpage()
    try:
        runs = _runs(text_page)
        # Text outside the page's width is not seen, and would stretch the strips searched for gutters.
        lined = [run for run in runs if run.upright and run.right > left and run.left < right]
        order = _region_order(lined, depth=0)
        if order is None:
            return None
        # Turned text stands apart from the lines (a stamp up the margin): read after them, as drawn.
        order.append(([run for run in runs if not run.upright or not (run.right > left and run.left < right)],
                      False))
        return "\n".join(
            _lines_text(text_page, group) if by_line else _drawn_text(text_page, group) for group, by_line in order
            if group
        )
    finally:
        text_page.close()


def _runs(text_page: pypdfium2.PdfTextPage) -> list[_Run]:
    """The page's runs, in the order drawn. A character continues the run before it when it is on its line
    (overlapping half its height) and close after it; it may overlap it: the letters of a ligature ("fi") share
    its box. Turned text runs up or down the page: its characters are not beside each other, each starts a run.
    (The loop is written for speed: it runs once for each character of every page.)"""
    runs: list[_Run] = []
    raw = text_page.raw
    unicode_of, loose_box = pdfium_c.FPDFText_GetUnicode, pdfium_c.FPDFText_GetLooseCharBox
    box = pdfium_c.FS_RECTF()
    run: _Run | None = None
    for index in range(pdfium_c.FPDFText_CountChars(raw)):
        # The loose box spans the font's height, the same for every character of a line (a comma's is not low).
        if unicode_of(raw, index) in _BLANKS or not loose_box(raw, index, box) or box.right <= box.left:
            continue
        left, bottom, right, top = box.left, box.bottom, box.right, box.top
        if run is not None and run.upright and run.left <= left:
            height, run_height = top - bottom, run.top - run.bottom
            if (
                min(run.top, top) - max(run.bottom, bottom) > 0.5 * min(run_height, height)
                and left <= run.right + _MAX_GAP_IN_RUN * max(run_height, height)
            ):
                run.last = index
                run.right = max(run.right, right)
                run.bottom, run.top = min(run.bottom, bottom), max(run.top, top)
                continue
        upright = abs(math.sin(pdfium_c.FPDFText_GetCharAngle(raw, index))) < _MAX_UPRIGHT_SINE
        run = _Run(index, index, left, bottom, right, top, upright)
        runs.append(run)
    return runs


def _gutters(runs: list[_Run]) -> list[_Gutter]:
    """The vertical strips of the page that few runs cross, with text on either side."""
    if len(runs) < 2 * _MIN_COLUMN_LINES:
        return []
    start, end = min(run.left for run in runs), max(run.right for run in runs)
    width = end - start
    line_height = statistics.median(run.height for run in runs)
    narrow = [run for run in runs if run.right - run.left <= _WIDE_RUN_SHARE * width]
    crossing_allowed = max(_MIN_CROSSING, _CROSSING_SHARE * len(runs))
    # How many narrow runs cover each point (1 pt steps) across the text's width.
    changes = [0] * (int(width) + 2)
    for run in narrow:
        changes[int(run.left - start)] += 1
        changes[int(run.right - start) + 1] -= 1
    cover = list(itertools.accumulate(changes))
    gutters: list[_Gutter] = []
    for low, points in itertools.groupby(range(len(cover)), key=lambda x: cover[x] <= crossing_allowed):
        strip = list(points)
        if not low or strip[0] == 0 or strip[-1] >= int(width):
            continue  # text, or the margin beside it
        # The gutter is where fewest cross: the lines of a column reaching into the strip are not crossing it.
        fewest = min(cover[x] for x in strip)
        core = max((list(xs) for is_core, xs in itertools.groupby(strip, key=lambda x: cover[x] == fewest)
                    if is_core), key=len)
        if _MIN_GUTTER_WIDTH * line_height <= len(strip) <= _MAX_GUTTER_SHARE * width:
            gutters.append(_Gutter(start + core[0], start + core[-1] + 1))
    return gutters if len(gutters) < _MAX_COLUMNS else []


def _region_order(runs: list[_Run], depth: int) -> list[tuple[list[_Run], bool]] | None:
    """The runs of a region of the page in reading order, in groups to read by line (``True``: a column, a line
    across the gutters) or as drawn (``False``: not columns of prose); ``None`` when no columns are found in it.
    A region without columns across its whole height is cut where it is blank across its width, and each part
    looked at alike: columns beside a table spanning two of three columns are found above it."""
    if len(runs) < 2 * _MIN_COLUMN_LINES:
        return None
    gutters = _gutters(runs)
    order = _columns_order(runs, gutters, depth) if gutters else None
    if order is not None or depth >= _MAX_DEPTH:
        return order
    zones = _zones(runs)
    if len(zones) == 1:
        return None
    orders = [_region_order(zone, depth + 1) for zone in zones]
    if all(order is None for order in orders):
        return None
    return [group for zone, order in zip(zones, orders, strict=True) for group in order or [(zone, False)]]


def _columns_order(runs: list[_Run], gutters: list[_Gutter], depth: int) -> list[tuple[list[_Run], bool]] | None:
    """The runs of a region cut into bands by the lines crossing its gutters, each band read column by column
    if it holds columns of prose, else as drawn; ``None`` if no band does."""
    start, end = min(run.left for run in runs), max(run.right for run in runs)
    edges = [start, *(edge for gutter in gutters for edge in (gutter.left, gutter.right)), end]
    column_widths = [edges[2 * i + 1] - edges[2 * i] for i in range(len(gutters) + 1)]
    if min(column_widths) < _MIN_COLUMN_SHARE * (end - start):
        return None
    crossing = [run for run in runs if any(run.left < g.right and run.right > g.left for g in gutters)]
    # A line crossing a gutter, with the rest of it (a table's row, a title beside its number), cuts the page.
    spanning = [run for run in runs if any(other.bottom < run.middle < other.top for other in crossing)]
    cuts = sorted(_lines(spanning), key=lambda line: -line[0].middle)
    cut_heights = [-line[0].middle for line in cuts]
    spanning_ids = {id(run) for run in spanning}
    bands: list[list[list[_Run]]] = [[[] for _ in column_widths] for _ in range(len(cuts) + 1)]
    for run in runs:
        if id(run) not in spanning_ids:
            band = bisect.bisect_left(cut_heights, -run.middle)  # the cuts above it
            bands[band][sum(1 for gutter in gutters if run.left >= gutter.right)].append(run)
    order: list[tuple[list[_Run], bool]] = []
    has_columns = False
    for index, columns in enumerate(bands):
        if _are_columns(columns, column_widths):
            has_columns = True
            # A column may hold columns of its own (two of three columns, beside the third).
            order.extend(
                group for column in columns for group in _region_order(column, depth + 1) or [(column, True)]
            )
        else:
            order.append(([run for column in columns for run in column], False))
        if index < len(cuts):
            order.append((cuts[index], True))
    return order if has_columns else None


def _zones(runs: list[_Run]) -> list[list[_Run]]:
    """The runs split, top to bottom, where a strip across the region is blank (no run in it)."""
    line_height = statistics.median(run.height for run in runs)
    zones: list[list[_Run]] = []
    floor = math.inf
    for run in sorted(runs, key=lambda run: -run.top):
        if not zones or run.top < floor - _MIN_ZONE_GAP * line_height:
            zones.append([])
        zones[-1].append(run)
        floor = min(floor, run.bottom) if len(zones[-1]) > 1 else run.bottom
    return zones


def _are_columns(columns: list[list[_Run]], widths: list[float]) -> bool:
    """Two columns of a band or more hold lines of prose, and the others none or lines filling them: not a
    table's cells, nor a heading beside a table."""
    lines = [_lines(column) for column in columns]
    return sum(1 for column_lines in lines if len(column_lines) >= _MIN_COLUMN_LINES) >= 2 and all(
        not column_lines or (
            statistics.median(line[-1].right - line[0].left for line in column_lines) >= _MIN_LINE_FILL * width
            and sum(max(run.height for run in line) for line in column_lines)
            >= _MIN_LINE_DENSITY * (column_lines[0][0].top - column_lines[-1][0].bottom)
        )
        for column_lines, width in zip(lines, widths, strict=True)
    )


def _lines(runs: list[_Run]) -> list[list[_Run]]:
    """The runs by line, top to bottom, each line's from left to right (a line's runs are split at a wide space,
    a superscript is a run of its own)."""
    lines: list[list[_Run]] = []
    for run in sorted(runs, key=lambda run: -run.top):
        if lines and lines[-1][0].bottom < run.middle < lines[-1][0].top:
            lines[-1].append(run)
        else:
            lines.append([run])
    return [sorted(line, key=lambda run: run.left) for line in lines]


def _lines_text(text_page: pypdfium2.PdfTextPage, runs: list[_Run]) -> str:
    return "\n".join(
        "".join(
            _run_text(text_page, run) if index == 0 else _between(text_page, line[index - 1], run, " ") + _run_text(
                text_page, run)
            for index, run in enumerate(line)
        )
        for line in _lines(runs)
    )


def _drawn_text(text_page: pypdfium2.PdfTextPage, runs: list[_Run]) -> str:
    """The runs' text in the order drawn, a line break where the next run starts another line."""
    parts: list[str] = []
    previous: _Run | None = None
    for run in sorted(runs, key=lambda run: run.first):
        if previous is not None:
            same_line = previous.bottom < run.middle < previous.top and run.left >= previous.right
            parts.append(_between(text_page, previous, run, " " if same_line else "\n"))
        parts.append(_run_text(text_page, run))
        previous = run
    return "".join(parts)


def _between(text_page: pypdfium2.PdfTextPage, previous: _Run, run: _Run, otherwise: str) -> str:
    """What separates two runs: pdfium's own space or line break (or nothing: "70" and a raised "1/2") where
    they were drawn one after the other, else ``otherwise`` (a space, or a line break to another line)."""
    if run.first <= previous.last:
        return otherwise
    between = text_page.get_text_range(previous.last + 1, run.first - previous.last - 1)
    # pdfium joins a word hyphenated at a line's end to its end on the next line: the lines stay apart here.
    # Turned text has no lines here: its characters, one run each, are joined as pdfium joins them.
    same_kind = ("\n" in between) == ("\n" in otherwise) or not run.upright
    return between if not between.strip() and same_kind else otherwise


def _run_text(text_page: pypdfium2.PdfTextPage, run: _Run) -> str:
    text = text_page.get_text_range(run.first, run.last - run.first + 1).translate(_HYPHENS)
    # A line break pdfium put inside a run (before a raised "/2" after "70 1") is a space, or nothing where the
    # characters touch.
    return _RUN_LINE_BREAK.sub(lambda found: _joint(text_page, run.first + found.start()), text)


def _joint(text_page: pypdfium2.PdfTextPage, index: int) -> str:
    before, after = text_page.get_charbox(index - 1), text_page.get_charbox(index + 2)
    return "" if after[0] - before[2] < _TOUCHING * (before[3] - before[1]) else " "
