"""Running headers and footers: how many lines backend/ingest/loaders/running_headers.py removes from each
shared PDF, and which (every number read as "#", most frequent first), to check by eye that nothing but
headers and footers goes. Each PDF is read by the real loader (scans recognised by OCR) with its running lines
left in, then they are removed as the loader removes them.

Usage: .venv/bin/python bench/running_headers.py [--shared-data ../shared/data] [--show 5]
"""

from __future__ import annotations

import argparse
import logging
import re
from collections import Counter
from pathlib import Path
from unittest import mock

from backend.errors import AxiomError
from backend.ingest.loaders import load_document
from backend.ingest.loaders.running_headers import without_running_headers
from backend.models import LoadedDocument, Page


def _with_running_lines(path: Path) -> LoadedDocument:
    with mock.patch("backend.ingest.loaders.pdf.without_running_headers", list):
        return load_document(path.name, path.read_bytes())


def _removed(before: list[Page], after: list[Page]) -> Counter[str]:
    kept = {page.number: Counter(page.text.split("\n")) for page in after}
    removed: Counter[str] = Counter()
    for page in before:
        left = kept.get(page.number, Counter())
        for line in page.text.split("\n"):
            if left[line]:
                left[line] -= 1
            elif line:
                removed[re.sub(r"\d+", "#", line)] += 1
    return removed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared-data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--show", type=int, default=5, help="how many of the removed lines to print per PDF")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # pypdf's notes on damaged files
    print(f"{'PDF':50} {'pages':>5} {'lines':>6} {'removed':>7}")
    for path in sorted((args.shared_data / "pdfs").glob("*.pdf")):
        try:
            pages = list(_with_running_lines(path).pages)
        except AxiomError:
            continue  # refused (encrypted, empty, damaged): nothing to remove from
        removed = _removed(pages, without_running_headers(pages))
        lines = sum(1 for page in pages for line in page.text.split("\n") if line)
        print(f"{path.name:50} {len(pages):>5} {lines:>6} {removed.total():>7}")
        for line, count in removed.most_common(args.show):
            print(f"{'':8}{count:>5}  {line[:100]}")


if __name__ == "__main__":
    main()
