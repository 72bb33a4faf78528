"""Reading order of a PDF page laid out in columns. A text layer lists its characters in the order they were
drawn, and a typesetter may draw a page line by line across its columns (the IRS's instructions do): read in
that order, a sentence of one column is spliced with the lines beside it. Here the page's characters and their
boxes (pdfium's text page) are grouped into runs along a line, and a gutter is a vertical strip of the page no
run crosses but a few, with runs of text on either side. The runs crossing it (a title, a full-width table's
rows, a page number centred under it) cut the page into bands, each read column by column, in place between
them. A page whose strip does not separate columns of prose (a table's columns, a form's fields) has no
columns: its text is left as it was read."""

from __future__ import annotations

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
# Columns of prose are about as wide as each other, the narrowest this share of the widest (a manual's margin of
# headings beside its text is no column: each heading belongs with the text beside it), and at least this share
# of the text's width (a table's columns are narrow, or hold short cells).
_MIN_WIDTH_RATIO = 0.6
_MIN_COLUMN_SHARE = 0.2
# A column holds prose: at least this many lines, their median width this share of the column's (a table's cells
# are short, most of its column empty).
_MIN_COLUMN_LINES = 4
_MIN_LINE_FILL = 0.6
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
    text_page = page.get_textpage()
    try:
        runs = _runs(text_page)
        gutters = _gutters([run for run in runs if run.upright])
        if not gutters:
            return None
        order = _reading_order(runs, gutters)
        if order is None:
            return None
        return "\n".join(
            _lines_text(text_page, group) if by_line else _drawn_text(text_page, group) for group, by_line in order
            if group
        )
    finally:
        text_page.close()


def _runs(text_page: pypdfium2.PdfTextPage) -> list[_Run]:
    runs: list[_Run] = []
    box = pdfium_c.FS_RECTF()
    for index in range(text_page.count_chars()):
        if pdfium_c.FPDFText_GetUnicode(text_page, index) in _BLANKS:
            continue
        # The loose box spans the font's height, the same for every character of a line (a comma's is not low).
        if not pdfium_c.FPDFText_GetLooseCharBox(text_page, index, box) or box.right <= box.left:
            continue
        left, bottom, right, top = box.left, box.bottom, box.right, box.top
        run = runs[-1] if runs else None
        # Turned text runs up or down the page: its characters are not beside each other, each starts a run.
        if run is not None and run.upright and _continues(run, left, bottom, top):
            run.last, run.right = index, max(run.right, right)
            run.bottom, run.top = min(run.bottom, bottom), max(run.top, top)
        else:
            upright = abs(math.sin(pdfium_c.FPDFText_GetCharAngle(text_page, index))) < _MAX_UPRIGHT_SINE
            runs.append(_Run(index, index, left, bottom, right, top, upright))
    return runs


def _continues(run: _Run, left: float, bottom: float, top: float) -> bool:
    """Whether a character drawn next is on the run's line and close after it. It may overlap the run: the
    letters of a ligature ("fi") share its box."""
    height = max(run.height, top - bottom)
    overlap = min(run.top, top) - max(run.bottom, bottom)
    return overlap > 0.5 * min(run.height, top - bottom) and run.left <= left <= run.right + _MAX_GAP_IN_RUN * height


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
        if _MIN_GUTTER_WIDTH * line_height <= len(core) and len(strip) <= _MAX_GUTTER_SHARE * width:
            gutters.append(_Gutter(start + core[0], start + core[-1] + 1))
    return gutters if len(gutters) < _MAX_COLUMNS else []


def _reading_order(runs: list[_Run], gutters: list[_Gutter]) -> list[tuple[list[_Run], bool]] | None:
    """The runs in reading order, in groups to read by line (``True``: a column, a line across the gutters) or
    as drawn (``False``: a band that is not columns of prose). ``None`` when no band holds columns of prose."""
    upright = [run for run in runs if run.upright]
    start, end = min(run.left for run in upright), max(run.right for run in upright)
    edges = [start, *(edge for gutter in gutters for edge in (gutter.left, gutter.right)), end]
    column_widths = [edges[2 * i + 1] - edges[2 * i] for i in range(len(gutters) + 1)]
    if min(column_widths) < max(_MIN_COLUMN_SHARE * (end - start), _MIN_WIDTH_RATIO * max(column_widths)):
        return None
    crossing = [run for run in upright if any(run.left < g.right and run.right > g.left for g in gutters)]
    # A line crossing a gutter, with the rest of it (a table's row, a title beside its number), cuts the page.
    spanning = [run for run in upright if any(other.bottom < run.middle < other.top for other in crossing)]
    cuts = _lines(spanning)
    spanning_ids = {id(run) for run in spanning}
    bands: list[list[list[_Run]]] = [[[] for _ in column_widths] for _ in range(len(cuts) + 1)]
    for run in upright:
        if id(run) not in spanning_ids:
            band = sum(1 for line in cuts if line[0].middle > run.middle)
            bands[band][sum(1 for gutter in gutters if run.left >= gutter.right)].append(run)
    order: list[tuple[list[_Run], bool]] = []
    has_columns = False
    for index, columns in enumerate(bands):
        if _are_columns(columns, column_widths):
            has_columns = True
            order.extend((column, True) for column in columns)
        else:
            order.append(([run for column in columns for run in column], False))
        if index < len(cuts):
            order.append((cuts[index], True))
    # Turned text stands apart from the lines (a stamp up the margin): read after them, as drawn.
    order.append(([run for run in runs if not run.upright], False))
    return order if has_columns else None


def _are_columns(columns: list[list[_Run]], widths: list[float]) -> bool:
    """Two columns of a band or more hold lines of prose, and the others none or lines filling them: not a
    table's cells, nor a heading beside a table."""
    lines = [_lines(column) for column in columns]
    return sum(1 for column_lines in lines if len(column_lines) >= _MIN_COLUMN_LINES) >= 2 and all(
        not column_lines
        or statistics.median(line[-1].right - line[0].left for line in column_lines) >= _MIN_LINE_FILL * width
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
    they were drawn one after the other, else ``otherwise``."""
    if run.first <= previous.last:
        return otherwise
    between = text_page.get_text_range(previous.last + 1, run.first - previous.last - 1)
    return between if not between.strip() and ("\n" not in between or otherwise == "\n") else otherwise


def _run_text(text_page: pypdfium2.PdfTextPage, run: _Run) -> str:
    text = text_page.get_text_range(run.first, run.last - run.first + 1).translate(_HYPHENS)
    # A line break pdfium put inside a run (before a raised "/2" after "70 1") is a space, or nothing where the
    # characters touch.
    return _RUN_LINE_BREAK.sub(lambda found: _joint(text_page, run.first + found.start()), text)


def _joint(text_page: pypdfium2.PdfTextPage, index: int) -> str:
    before, after = text_page.get_charbox(index - 1), text_page.get_charbox(index + 2)
    return "" if after[0] - before[2] < _TOUCHING * (before[3] - before[1]) else " "
