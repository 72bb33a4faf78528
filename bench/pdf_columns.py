"""Reading order of multi-column PDF pages: for each shared PDF, which pages backend/ingest/loaders/pdf_columns.py
reads column by column (their text changes), and the loader's CPU time per page with and without it. "words new / lost": distinct
words of the changed pages found only after / only before (a reordered page keeps its words); "split": pairs of
consecutive long lines before no longer consecutive after (a column torn apart, where pypdf read it right); chunks: how many
the default chunk sizes cut the document into. Text
recognition (OCR) is left out of both runs: it reads the same either way, and would only add its time.

Usage: .venv/bin/python bench/pdf_columns.py [--shared-data ../shared/data] [--show PDF:PAGE ...] [--chars 600]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import logging
import re
import time
from collections.abc import Iterable
from pathlib import Path
from unittest import mock

from backend.config import Settings
from backend.errors import AxiomError
from backend.ingest.chunker import ParentChildChunker
from backend.ingest.loaders import load_document
from backend.models import LoadedDocument


def _load(path: Path, columns: bool) -> tuple[LoadedDocument, float]:
    data = path.read_bytes()
    with contextlib.ExitStack() as patches:
        patches.enter_context(mock.patch("backend.ingest.loaders.pdf._recognise_pages_without_text", return_value={}))
        if not columns:
            patches.enter_context(mock.patch("backend.ingest.loaders.pdf._column_ordered_texts", return_value={}))
        started = time.process_time()
        document = load_document(path.name, data)
        return document, time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared-data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--show", nargs="*", default=[], help="pages to print before and after, as NAME:PAGE")
    parser.add_argument("--chars", type=int, default=600, help="how much of each shown page to print")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # pypdf's notes on damaged files
    load_document("warm-up.txt", b"imports and first calls before the clock")
    settings = Settings()
    chunker = ParentChildChunker(settings.parent_chunk_size, settings.parent_chunk_overlap,
                                 settings.child_chunk_size, settings.child_chunk_overlap)
    print(f"{'PDF':44} {'pages':>5} {'changed':>7} {'ms/page before':>14} {'after':>6} {'words new':>9} "
          f"{'lost':>5} {'split':>5} {'chunks before':>13} {'after':>5}  changed pages")
    shown = {tuple(spec.rsplit(":", 1)) for spec in args.show}
    for path in sorted((args.shared_data / "pdfs").glob("*.pdf")):
        try:
            before, before_s = _load(path, columns=False)
            after, after_s = _load(path, columns=True)
        except AxiomError:
            continue  # refused (encrypted, damaged, no text): nothing to order
        old = {page.number: page.text for page in before.pages}
        changed = [page.number for page in after.pages if old.get(page.number) != page.text]
        count = max(before.page_count, 1)
        old_words = _words(old[number] for number in changed)
        new_words = _words(page.text for page in after.pages if page.number in changed)
        print(f"{path.stem:44} {before.page_count:>5} {len(changed):>7} {1000 * before_s / count:>14.1f} "
              f"{1000 * after_s / count:>6.1f} {len(new_words - old_words):>9} {len(old_words - new_words):>5} "
              f"{sum(_split_pairs(old[page.number], page.text) for page in after.pages if page.number in changed):>5} "
              f"{len(chunker.chunk(before, 'bench')[1]):>13} {len(chunker.chunk(after, 'bench')[1]):>5}  "
              f"{_ranges(changed)}")
        for page in after.pages:
            if (path.stem, str(page.number)) in shown:
                print(f"--- {path.stem} page {page.number}, before:\n{old.get(page.number, '')[:args.chars]}")
                print(f"--- after:\n{page.text[:args.chars]}\n---")


def _words(texts: Iterable[str]) -> set[str]:
    """The distinct words of the changed pages: reordering keeps them, a different reading of the glyphs does not
    (a word split, or joined to its neighbour)."""
    return {word for text in texts for word in re.findall(r"\w+", text.lower())}


def _split_pairs(before: str, after: str, long: int = 40) -> int:
    """How many pairs of consecutive long lines (prose, not a table's cells) before are no longer consecutive
    after, both still there: where pypdf's order was right, a column's text torn apart."""
    lines = after.split("\n")
    following: dict[str, set[str]] = {}
    for line, next_line in itertools.pairwise(lines):
        following.setdefault(line, set()).add(next_line)
    old = before.split("\n")
    return sum(
        1 for line, next_line in itertools.pairwise(old)
        if min(len(line), len(next_line)) >= long and line in following and next_line in lines
        and next_line not in following[line]
    )


def _ranges(numbers: list[int]) -> str:
    """1,2,3,5 as "1-3,5"."""
    spans: list[list[int]] = []
    for number in numbers:
        if spans and spans[-1][1] == number - 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


if __name__ == "__main__":
    main()
