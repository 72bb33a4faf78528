"""Spreadsheet rows (XLSX, CSV) as text whose every line stands alone.

The chunker splits a page at line breaks, so a chunk of a sheet is some run of lines. Each line is therefore one row
with every value labelled by its column's header ("Region: North; Sales: 1200"): any chunk still says what its
numbers are. A row too long for one line of a small chunk puts each labelled value on a line of its own instead.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence

from openpyxl.cell.cell import ERROR_CODES
from openpyxl.utils import get_column_letter

from backend.ingest.loaders.package import too_complex

# Rows longer than this are split by the chunker (children are 400 characters), so their values go one a line.
_ROW_LINE_MAX = 300
# Past this many filled cells a workbook is more data than text to chat with (500 k labelled cells are ~15 MB of
# text, over 40 000 chunks to embed).
MAX_FILLED_CELLS = 500_000


class ShownNumber(str):
    """A number as its sheet shows it ("$1,200.00", "15-Mar-23" is not one): text, but a number still when
    telling a header row from a row of data."""


class CellBudget:
    """Counts a document's filled cells across its sheets and refuses it past MAX_FILLED_CELLS."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._filled = 0

    def spend(self, cells: int) -> None:
        self._filled += cells
        if self._filled > MAX_FILLED_CELLS:
            raise too_complex(
                self._name, f"has more than {MAX_FILLED_CELLS:,} filled cells, more than Axiom reads in one document"
            )


def sheet_text(rows: Iterable[Sequence[object]], budget: CellBudget, header_row: bool | None = None) -> str:
    """The sheet's non-empty rows, one a line, each value labelled with its column's header. The first non-empty
    row is the header when ``header_row`` is True; when it is None, the first row of more than one value is, unless
    one of its values is a number (rows of one value above it are titles, kept as they are)."""
    lines: list[str] = []
    headers: list[str] | None = None
    for row in rows:
        values = [_cell_text(value) for value in row]
        filled = sum(1 for value in values if value)
        if not filled:
            continue
        budget.spend(filled)
        if headers is None and header_row is None and filled == 1:  # a title above the table, not its header
            lines.append(next(value for value in values if value))
            continue
        if headers is None:
            is_header = header_row if header_row is not None else not any(map(_is_number, values))
            headers = values if is_header else []
            if is_header:
                continue
        lines.append(_row_text(values, headers))
    if not lines and headers:  # a sheet of its header row alone
        lines.append("; ".join(header for header in headers if header))
    return "\n".join(lines)


def _is_number(value: str) -> bool:
    if isinstance(value, ShownNumber):
        return True
    return value.removesuffix("%").replace(".", "", 1).replace(",", "").removeprefix("-").isdigit()


def _row_text(values: Sequence[str], headers: Sequence[str]) -> str:
    labelled = [
        f"{_header(headers, index)}: {value}" for index, value in enumerate(values) if value
    ]
    line = "; ".join(labelled)
    return line if len(line) <= _ROW_LINE_MAX else "\n".join(labelled)


def _header(headers: Sequence[str], index: int) -> str:
    if index < len(headers) and headers[index]:
        return headers[index]
    return f"Column {get_column_letter(index + 1)}"


def _cell_text(value: object) -> str:
    """A cell's value as a person would read it; empty for no value (a formula never calculated) and for error
    values (#DIV/0!, #N/A…), which say nothing about the data."""
    if value is None or value in ERROR_CODES:
        return ""
    if isinstance(value, ShownNumber):
        return ShownNumber(" ".join(value.split()))
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime.datetime) and value.time() == datetime.time():
        return value.date().isoformat()
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ", timespec="minutes")
    return " ".join(str(value).split())
