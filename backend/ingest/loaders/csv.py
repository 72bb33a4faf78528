"""CSV and TSV: one page, its first row the header that labels every value below it (sheet_text.py). The encoding
is found as for TXT; the delimiter of a .csv is sniffed (comma, semicolon, tab or bar), a .tsv's is a tab."""

from __future__ import annotations

import csv
import io
import sys

from backend.errors import AxiomError, UnreadableDocument
from backend.ingest.loaders.plain import decode_text
from backend.ingest.loaders.sheet_text import CellBudget, sheet_text
from backend.ingest.loaders.text import LoadedPages, corrupt, pages_or_no_text

_SNIFFED_DELIMITERS = ",;\t|"
_SNIFF_SAMPLE_CHARS = 64 * 1024


def load_csv(name: str, data: bytes) -> LoadedPages:
    text = decode_text(name, data, kind="a CSV file")
    dialect = csv.excel_tab if name.lower().endswith(".tsv") else _sniffed_dialect(text)
    # A field may be as long as the file (the upload limit bounds it); the default limit of 128 KiB would refuse
    # a long quoted note as a broken file.
    csv.field_size_limit(sys.maxsize)
    try:
        rows = csv.reader(io.StringIO(text, newline=""), dialect)
        text = sheet_text(rows, CellBudget(name), header_row=True)
    except AxiomError:
        raise
    except csv.Error as error:
        raise corrupt(name, "CSV file") from error
    return LoadedPages(
        pages_or_no_text(name, [text], f"“{name}” contains no text.", UnreadableDocument.EMPTY), page_count=1
    )


def _sniffed_dialect(text: str) -> type[csv.Dialect]:
    sample = text[:_SNIFF_SAMPLE_CHARS]
    if "\n" in sample:  # a cut last line would mislead the sniffer
        sample = sample[: sample.rindex("\n")]
    try:
        return csv.Sniffer().sniff(sample, delimiters=_SNIFFED_DELIMITERS)
    except csv.Error:  # one column, or no consistent delimiter
        return csv.excel
