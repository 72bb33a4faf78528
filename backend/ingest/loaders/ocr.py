"""Text recognition (OCR): Tesseract, run as a program through pytesseract, on page images.

PDF pages are rendered with PDFium (pypdfium2) in greyscale at ``dpi``; a page or an image larger than
``max_megapixels`` is scaled down first (one shared scan is a 30-inch page: 81 Mpx at 300 dpi), which bounds both the
memory of this process and that of Tesseract. The shared two-column brochure scan measures 0.964 word accuracy at
300 dpi with English alone; adding French and German took 50-60 % longer for nothing (docs/benchmarks.md).

Tesseract reads anything as text in its languages: a chart, or Chinese with English data, comes out as junk
("SRAMBARAAFA (£0) APRA?"). Its own word confidences tell: on the shared scans, pages of text average 93-95, charts
and scripts it has no data for 31-42. A page averaging below ``_MIN_MEAN_CONFIDENCE`` is taken as showing no text.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

import pypdfium2
import pytesseract
from PIL import Image

from backend.errors import UnreadableDocument

# (pages recognised so far, pages to recognise in the file)
PageProgress = Callable[[int, int], None]

# Between the junk pages (31-42) and the text pages (93-95) of the shared scans; the lowest text page
# measured, 65, is a test pattern of a few large words ("9000x9000 pixels at 300 DPI").
_MIN_MEAN_CONFIDENCE = 55.0

# A list item as Tesseract reads its bullet: the glyph at a line's start, a space, then a capital letter.
_BULLET_LOOKALIKE = re.compile(r"^[^\S\n]*[¢©e•][^\S\n]+(?=[A-ZÀ-ÖØ-Þ])", re.MULTILINE)
_MIN_LIST_ITEMS = 2

_INSTALL_HINT = "scripts/install-tesseract.sh, or on Debian and Ubuntu: apt-get install tesseract-ocr tesseract-ocr-eng"


@dataclass(frozen=True, slots=True)
class OcrOptions:
    tesseract: str = "tesseract"  # the program's name (found on PATH) or its path
    languages: str = "eng"  # Tesseract's language codes joined by "+", e.g. "eng+fra"
    dpi: int = 300
    max_megapixels: float = 25.0
    page_seconds: float = 60.0  # one page taking longer is given up
    # Each page to recognise extends a file's time limit, so the pages themselves are bounded: a TIFF of
    # 100,000 one-pixel frames would otherwise keep a reader busy for hours. 1,000 pages take about an hour on
    # 2 cores.
    max_pages: int = 1000


class Recogniser:
    """Recognises the text of one file's page images, reporting each page done to ``on_page``."""

    def __init__(self, name: str, options: OcrOptions, on_page: PageProgress | None = None) -> None:
        self._name = name
        self._options = options
        self._on_page = on_page
        self._done = 0
        self._total = 0

    def expect(self, pages: int) -> None:
        """Announces how many pages will be recognised (a reader extends the file's time limit by them)."""
        if pages > self._options.max_pages:
            raise UnreadableDocument(
                f"“{self._name}” has {pages:,} pages to recognise (OCR), more than the {self._options.max_pages:,} "
                "one file may have. Split it into smaller documents and upload those.",
                reason=UnreadableDocument.TOO_COMPLEX, filename=self._name,
            )
        self._total = pages
        self._report()

    def render(self, page: pypdfium2.PdfPage) -> Image.Image:
        width, height = page.get_size()  # in points, 72 to the inch
        scale = self._options.dpi / 72 * _shrink_to_fit(width * height * (self._options.dpi / 72) ** 2, self._options)
        return page.render(scale=scale, grayscale=True).to_pil()

    def recognise(self, image: Image.Image) -> str:
        """The page's text, or "" when Tesseract is not confident it is text (see the module's docstring)."""
        shrink = _shrink_to_fit(image.width * image.height, self._options)
        if shrink < 1:
            image = image.resize((max(1, int(image.width * shrink)), max(1, int(image.height * shrink))))
        text, words = self._tesseract(image)
        self._done += 1
        self._report()
        confidences = _word_confidences(words)
        if not confidences or statistics.mean(confidences) < _MIN_MEAN_CONFIDENCE:
            return ""
        return restore_bullets(text)

    def _tesseract(self, image: Image.Image) -> tuple[str, str]:
        """The page's text, and its words with their confidences (Tesseract's TSV), from one run."""
        # Handed over as an uncompressed PGM: pytesseract would write a PNG, whose compression took 0.27 s of
        # a 2-3 s page (PGM: 0.03 s).
        with tempfile.NamedTemporaryFile(prefix="axiom-ocr-", suffix=".pgm") as page_file:
            (image if image.mode == "L" else image.convert("L")).save(page_file, format="PPM")
            page_file.flush()
            return self._run_tesseract(page_file.name)

    def _run_tesseract(self, image_path: str) -> tuple[str, str]:
        # Tesseract's OpenMP threads spin against each other on a busy machine: one page of the brochure took
        # 14.3 s with its default threads and 2.3 s with one, on 2 shared cores. A value set by the operator
        # is kept.
        os.environ.setdefault("OMP_THREAD_LIMIT", "1")
        # pytesseract reads the program from a module attribute; every call sets it, so each sees its own
        # options.
        pytesseract.pytesseract.tesseract_cmd = self._options.tesseract
        try:
            text, words = pytesseract.run_and_get_multiple_output(
                image_path, ["txt", "tsv"], lang=self._options.languages, timeout=self._options.page_seconds
            )
        except OSError as error:  # TesseractNotFoundError, or a path that is not a program
            raise _tesseract_missing(self._name, self._options.tesseract) from error
        except pytesseract.TesseractError as error:
            if "Failed loading language" in str(error.message) or "Error opening data file" in str(error.message):
                raise _languages_missing(self._name, self._options.languages) from error
            raise _recognition_failed(self._name, error.message) from error
        except (RuntimeError, subprocess.TimeoutExpired) as error:  # pytesseract's timeout is a RuntimeError
            raise UnreadableDocument(
                f"Recognising the text of a page of “{self._name}” took longer than {self._options.page_seconds:g} s "
                "and was given up. Scan it again at a lower resolution, or upload a version with selectable text.",
                reason=UnreadableDocument.TOO_COMPLEX, filename=self._name,
            ) from error
        return text, words

    def _report(self) -> None:
        if self._on_page is not None:
            self._on_page(self._done, self._total)


def restore_bullets(text: str) -> str:
    """Bullets Tesseract misread, restored: a line starting "¢ ", "© " or "e " before a capitalised word is a list
    item (the shared brochure scan reads its "•" so 22 times), but only where at least two lines of the page start
    so (or with a real "•"): a lone "© Springer Nature" is a copyright line and "e Roma" Italian for "and Rome"."""
    if len(_BULLET_LOOKALIKE.findall(text)) < _MIN_LIST_ITEMS:
        return text
    return _BULLET_LOOKALIKE.sub("• ", text)


def _word_confidences(tsv: str) -> list[float]:
    rows = csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE)
    return [float(row["conf"]) for row in rows if (row.get("text") or "").strip() and float(row["conf"]) >= 0]


def _shrink_to_fit(pixels: float, options: OcrOptions) -> float:
    """The factor (≤ 1) by which both sides must shrink for ``pixels`` to fit ``max_megapixels``."""
    limit = options.max_megapixels * 1_000_000
    return 1.0 if pixels <= limit else math.sqrt(limit / pixels)


def _tesseract_missing(name: str, program: str) -> UnreadableDocument:
    return UnreadableDocument(
        f"“{name}” needs text recognition (OCR): it has pages that are images of text. Tesseract, the program that "
        f"recognises text, is not installed on this server (looked for “{program}”). Install it ({_INSTALL_HINT}), "
        "or set AXIOM_OCR_TESSERACT_PATH to it, then upload the file again.",
        reason=UnreadableDocument.OCR_UNAVAILABLE, filename=name,
    )


def _languages_missing(name: str, languages: str) -> UnreadableDocument:
    packages = " ".join(f"tesseract-ocr-{language}" for language in languages.split("+"))
    return UnreadableDocument(
        f"“{name}” needs text recognition (OCR), but Tesseract has no data for the language(s) “{languages}” "
        f"(AXIOM_OCR_LANGUAGES). Install it (on Debian and Ubuntu: apt-get install {packages}) or choose installed "
        "languages, then upload the file again.",
        reason=UnreadableDocument.OCR_UNAVAILABLE, filename=name,
    )


def _recognition_failed(name: str, message: str) -> UnreadableDocument:
    return UnreadableDocument(
        f"Text recognition (OCR) failed on “{name}” ({message.strip()[:200]}). Open and save it again, then "
        "re-upload.",
        reason=UnreadableDocument.CORRUPT, filename=name,
    )
