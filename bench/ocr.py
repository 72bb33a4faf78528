"""Text recognition (OCR): seconds per recognised page on the shared scans, and word accuracy on the one scan that
has a ground-truth transcription (scanned_linn_two-column_brochure.pdf).

Word accuracy = 1 - word error rate = 1 - (substituted + deleted + inserted words) / words in the ground truth, the
edit distance between the two word sequences, after normalising both the same way: Unicode NFKC, case folded,
every run of characters that are not letters or digits a word break ("state—of—the-art" is four words).

Each configuration reads every scan through the real loader (PDFium rendering + Tesseract in this process, one
OpenMP thread as the reader's workers run it), so the seconds include rendering and the text-layer check.

Then the first page of three non-English PDFs that do have a text layer is rendered and recognised, with English
alone and with its own language, and compared with that text layer the same way (the languages setup installs).

Usage: .venv/bin/python bench/ocr.py [--configs 300:eng 200:eng 300:eng+fra+deu]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import unicodedata
from pathlib import Path

import pypdfium2
from pypdf import PdfReader
from rapidfuzz.distance import Levenshtein

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import shared_data

from backend.errors import UnreadableDocument
from backend.ingest.loaders import OcrOptions, load_document
from backend.ingest.loaders.ocr import Recogniser

SCANS = [
    "scanned_linn_two-column_brochure.pdf",
    "scanned_c02-22_huckfinn_page.pdf",
    "scanned_docling_ocr_test.pdf",
    "scanned_multipage_mixed.pdf",
    "garbled_textlayer_sbert_2page_excerpt.pdf",
]
GROUND_TRUTH = {"scanned_linn_two-column_brochure.pdf": "scanned_linn_two-column_brochure.groundtruth.txt"}
TEXT_LAYER_PAGES = {
    "nonenglish_fr_olap_paper.pdf": "fra",
    "nonenglish_ko_text-with-tables.pdf": "kor",
    "nonenglish_ar_rtl_word.pdf": "ara",
}


def words(text: str) -> list[str]:
    return re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", text).casefold()).split()


def word_accuracy(reference: str, recognised: str) -> float:
    expected = words(reference)
    return 1.0 - Levenshtein.distance(expected, words(recognised)) / len(expected)


def recognise_against_text_layer(path: Path, languages: list[str]) -> None:
    reference = PdfReader(path).pages[0].extract_text()
    document = pypdfium2.PdfDocument(path)
    try:
        for language in languages:
            recogniser = Recogniser(path.name, OcrOptions(languages=language))
            started = time.perf_counter()
            text = recogniser.recognise(recogniser.render(document[0]))
            seconds = time.perf_counter() - started
            kept = "kept" if text else "dropped (not confident it is text)"
            print(f"{path.name} with {language}: {seconds:.1f} s, {kept}, word accuracy against the text layer "
                  f"{word_accuracy(reference, text):.3f}")
    finally:
        document.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=["300:eng", "200:eng", "300:eng+fra+deu"],
                        help="DPI:LANGUAGES pairs to measure")
    args = parser.parse_args()
    pdfs = shared_data() / "pdfs"
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    print(f"load average before: {' '.join(f'{load:.2f}' for load in os.getloadavg())} on {os.cpu_count()} CPUs")
    for config in args.configs:
        dpi, languages = config.split(":")
        options = OcrOptions(languages=languages, dpi=int(dpi))
        print(f"\n== {dpi} dpi, languages {languages}")
        total_seconds, total_pages = 0.0, 0
        for name in SCANS:
            pages: list[int] = []
            started = time.perf_counter()
            try:
                document = load_document(name, (pdfs / name).read_bytes(), ocr=options,
                                         on_page=lambda done, total, seen=pages: seen.append(total))
            except UnreadableDocument as error:
                print(f"{name}: refused ({error.reason})")
                continue
            seconds = time.perf_counter() - started
            recognised = pages[-1] if pages else 0
            total_seconds, total_pages = total_seconds + seconds, total_pages + recognised
            line = (f"{name}: {recognised} pages recognised in {seconds:.1f} s "
                    f"({seconds / max(recognised, 1):.2f} s/page), pages with text "
                    f"{[page.number for page in document.pages]}")
            if name in GROUND_TRUTH:
                text = "\n".join(page.text for page in document.pages)
                reference = (pdfs / GROUND_TRUTH[name]).read_text(encoding="utf-8")
                line += f", word accuracy {word_accuracy(reference, text):.3f} ({len(words(reference))} words)"
            print(line)
        print(f"all: {total_pages} pages in {total_seconds:.1f} s = {total_seconds / total_pages:.2f} s/page")
    print("\n== page 1 of PDFs with a text layer, rendered at 300 dpi and recognised, against that text layer")
    for name, language in TEXT_LAYER_PAGES.items():
        recognise_against_text_layer(pdfs / name, ["eng", language])
    print(f"\nload average after: {' '.join(f'{load:.2f}' for load in os.getloadavg())}")


if __name__ == "__main__":
    main()
