"""XLSX (openpyxl, read-only): a sheet is a page, numbered by its position in the workbook; its rows are labelled
with their headers (sheet_text.py). Formulas are read as the values the spreadsheet last calculated; numbers, dates
and times as the spreadsheet shows them by their number formats ("12.5%", "$1,234.50", "15-Mar-23", not the
0.125, 1234.5 and 45000 it stores; number_format.py).

Before openpyxl reads a sheet, its XML is walked once in constant memory (loaders/package.py): a sheet declaring a
billion cells, more filled cells than a document may hold, or cells spread so wide that openpyxl's padding of every
row to its last column would take minutes, is refused first."""

from __future__ import annotations

import io
import zipfile

import openpyxl
from openpyxl.utils.cell import column_index_from_string, coordinate_from_string, range_boundaries

from backend.errors import AxiomError, UnsupportedFileType
from backend.ingest.loaders.number_format import displayed
from backend.ingest.loaders.package import (
    MAX_XML_ELEMENTS,
    ZIP_MAGIC,
    check_element_count,
    iter_part_elements,
    open_package,
    too_complex,
)
from backend.ingest.loaders.sheet_text import MAX_FILLED_CELLS, CellBudget, ShownNumber, sheet_text
from backend.ingest.loaders.text import LoadedPages, corrupt, labelled, pages_or_no_text

_KIND = "spreadsheet"
_WORKBOOK_PART = "xl/workbook.xml"
_SHARED_STRINGS_PART = "xl/sharedStrings.xml"
# openpyxl pads each row it returns to the row's last column; a sheet's rows times that width is what reading it
# costs, even where the cells are empty. 20 M is a second or two.
_MAX_SHEET_GRID = 20_000_000
# What a sheet's size is read from (in any namespace: transitional or strict OOXML). A cell's value, formula or
# inline text is inside its <c>, so counting cells bounds the rest.
_SHEET_TAGS = ("{*}c", "{*}row", "{*}dimension")


def load_xlsx(name: str, data: bytes) -> LoadedPages:
    if not data.startswith(ZIP_MAGIC):
        raise UnsupportedFileType(
            f"“{name}” is named .xlsx but is not an Excel workbook (older binary .xls files are not supported: "
            "save it as .xlsx first).",
            filename=name,
        )
    with open_package(name, data, _KIND, _WORKBOOK_PART) as archive:
        _check_workbook_size(name, archive)
    try:
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as error:  # openpyxl and its XML parsers raise many types for a damaged package
        raise corrupt(name, _KIND) from error
    budget = CellBudget(name)
    titles = workbook.sheetnames
    try:
        texts = [_sheet_text(workbook[title], budget) for title in titles]
    except AxiomError:
        raise
    except Exception as error:
        raise corrupt(name, _KIND) from error
    finally:
        workbook.close()
    pages = pages_or_no_text(name, texts, f"“{name}” contains no text: its sheets are empty.")
    return LoadedPages(labelled(pages, lambda number: f"Sheet “{titles[number - 1]}”"), len(texts))


def _sheet_text(sheet, budget: CellBudget) -> str:
    if not hasattr(sheet, "iter_rows"):  # a chart sheet
        return ""
    # The declared dimension was checked; rows are read as far as the sheet's cells really go (a dimension that
    # claims fewer rows than there are would cut the sheet short).
    sheet.reset_dimensions()
    text = sheet_text(([_shown_value(cell) for cell in row] for row in sheet.iter_rows()), budget)
    return f"Sheet: {sheet.title}\n{text}" if text else ""


def _shown_value(cell) -> object:
    """The cell's value as the sheet shows it: a question about "12.5%" or "$1,234.50" must find it."""
    value = cell.value
    shown = displayed(value, cell.number_format)
    if shown is None:
        return value
    return ShownNumber(shown) if isinstance(value, (int, float)) else shown


def _check_workbook_size(name: str, archive: zipfile.ZipFile) -> None:
    parts = archive.namelist()
    if _SHARED_STRINGS_PART in parts:  # openpyxl holds every shared string in memory
        check_element_count(name, _KIND, archive, [_SHARED_STRINGS_PART], too_many="distinct texts")
    elements = filled = 0
    for part in parts:
        if not (part.startswith("xl/worksheets/") and part.endswith(".xml")):
            continue
        grid = column = last_column = 0
        for element in iter_part_elements(name, _KIND, archive, part, tags=_SHEET_TAGS):
            elements += 1
            tag = element.tag.rpartition("}")[2]
            if tag == "c":
                reference = element.get("r")
                column = _column_index(reference) if reference else column + 1
                last_column = max(last_column, column)
                filled += len(element) > 0
            elif tag == "row":
                grid += last_column
                column = last_column = 0
            elif tag == "dimension":
                _check_declared_dimension(name, element.get("ref", ""))
            if elements > MAX_XML_ELEMENTS or filled > MAX_FILLED_CELLS:
                raise too_complex(
                    name, f"has more than {MAX_FILLED_CELLS:,} filled cells, more than Axiom reads in one document"
                )
            if grid > _MAX_SHEET_GRID:
                raise too_complex(name, "spreads its cells over more rows and columns than Axiom reads")


def _check_declared_dimension(name: str, reference: str) -> None:
    try:
        min_column, min_row, max_column, max_row = range_boundaries(reference)
    except (ValueError, TypeError):
        return  # no usable dimension: openpyxl then finds the extent from the cells
    declared = (max_row - min_row + 1) * (max_column - min_column + 1) if max_row and max_column else 0
    if declared > _MAX_SHEET_GRID:
        raise too_complex(name, f"declares a sheet of {declared:,} cells, more than Axiom reads")


def _column_index(reference: str) -> int:
    try:
        return column_index_from_string(coordinate_from_string(reference)[0])
    except ValueError:
        return 0
