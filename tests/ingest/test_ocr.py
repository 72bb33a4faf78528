"""Text recognition (OCR) with the real Tesseract: the shared scans, and images rendered here from them.

Tesseract is installed by scripts/install-tesseract.sh (run by `make test`). Its absence is simulated by pointing
the program's path at a file that does not exist.
"""

from __future__ import annotations

import io
import struct
import threading
import zlib
from pathlib import Path

import pypdfium2
import pytest
from PIL import Image

from backend.errors import TooLongForRequest, UnreadableDocument, UnsupportedFileType
from backend.ingest.loaders import OcrOptions, load_document
from backend.ingest.reader import DocumentReader, Patience, ReaderLimits

LINN = "scanned_linn_two-column_brochure.pdf"
MIXED = "scanned_multipage_mixed.pdf"
HUCK_FINN = "scanned_c02-22_huckfinn_page.pdf"
LINN_PHRASE = "Each of the 100 sequences contains 32 simultaneous, polyphonic tracks."
HUCK_FINN_PHRASE = "went tip-toeing along a path amongst"
NO_TESSERACT = OcrOptions(tesseract="/nonexistent/tesseract")


def _squashed(text: str) -> str:
    return " ".join(text.split())


def _page_image(pdf: Path, scale: float = 200 / 72) -> Image.Image:
    document = pypdfium2.PdfDocument(pdf)
    try:
        return document[0].render(scale=scale, grayscale=True).to_pil()
    finally:
        document.close()


def _encoded(image: Image.Image, image_format: str, **options) -> bytes:
    output = io.BytesIO()
    image.save(output, format=image_format, **options)
    return output.getvalue()


# --- scanned PDFs -------------------------------------------------------------------------------------------------


def test_a_scanned_pdf_is_recognised_and_marked_ocr(pdfs):
    document = load_document(LINN, (pdfs / LINN).read_bytes())

    (page,) = document.pages
    assert page.number == 1 and page.ocr
    assert LINN_PHRASE in _squashed(page.text)
    # Its list's bullets, which Tesseract reads as "¢", "©" or "e", are bullets again.
    assert "• Optional remote control." in page.text.splitlines()
    assert not [line for line in page.text.splitlines() if line.startswith(("¢ ", "© ", "e "))]


def test_a_mixed_pdf_recognises_only_the_pages_without_a_text_layer(pdfs):
    reported: list[tuple[int, int]] = []

    document = load_document(MIXED, (pdfs / MIXED).read_bytes(), on_page=lambda *done: reported.append(done))

    by_number = {page.number: page for page in document.pages}
    # Page 4 has a text layer and is read from it; page 3 is a chart Tesseract is not confident shows text.
    assert sorted(by_number) == [1, 2, 4, 5, 6]
    assert [number for number, page in by_number.items() if page.ocr] == [1, 2, 5, 6]
    assert "Percentage" in by_number[4].text and not by_number[4].ocr
    assert HUCK_FINN_PHRASE in by_number[1].text
    assert "It was the year of Our Lord one thousand" in _squashed(by_number[5].text)
    assert reported == [(done, 5) for done in range(6)]


def test_a_garbled_text_layer_is_recognised_instead(pdfs):
    name = "garbled_textlayer_sbert_2page_excerpt.pdf"

    document = load_document(name, (pdfs / name).read_bytes())

    assert [(page.number, page.ocr) for page in document.pages] == [(1, True), (2, True)]
    assert "Sentence Embeddings using Siamese BERT-Networks" in document.pages[0].text


# --- images -------------------------------------------------------------------------------------------------------


def test_a_short_text_layer_stays_when_recognition_reads_less_of_the_page(pdfs):
    """The page's whole text layer is the title "حَبيبي habibi حَبيبي" (under 20 characters, so it is recognised);
    Tesseract, without Arabic data, reads only "habibi", which must not replace the Arabic."""
    document = load_document("habibi.pdf", (pdfs / "nonenglish_ar_habibi.pdf").read_bytes())

    (page,) = document.pages
    assert not page.ocr
    assert page.text.count("حَبيبي") == 2 and "habibi" in page.text


@pytest.mark.parametrize(
    ("filename", "image_format", "options"),
    [("page.png", "PNG", {}), ("page.jpg", "JPEG", {"quality": 85}), ("page.tiff", "TIFF", {"compression": "tiff_lzw"}),
     ("page.webp", "WEBP", {"quality": 85})],
)
def test_an_image_of_a_page_is_recognised(pdfs, filename, image_format, options):
    data = _encoded(_page_image(pdfs / HUCK_FINN), image_format, **options)

    document = load_document(filename, data)

    assert document.file_type == "image" and document.filename == filename
    (page,) = document.pages
    assert page.number == 1 and page.ocr and page.label == ""  # cited as "Page 1"
    assert HUCK_FINN_PHRASE in page.text


def test_the_content_decides_which_image_format_it_is(pdfs):
    jpeg = _encoded(_page_image(pdfs / HUCK_FINN), "JPEG")

    assert HUCK_FINN_PHRASE in load_document("saved-as.png", jpeg).pages[0].text


def test_each_frame_of_a_multipage_tiff_is_a_page(pdfs):
    frames = [_page_image(pdfs / HUCK_FINN), _page_image(pdfs / LINN, scale=150 / 72)]
    data = _encoded(frames[0], "TIFF", save_all=True, append_images=frames[1:])
    reported: list[tuple[int, int]] = []

    document = load_document("fax.tif", data, on_page=lambda *done: reported.append(done))

    assert [(page.number, page.label) for page in document.pages] == [(1, "Frame 1"), (2, "Frame 2")]
    assert HUCK_FINN_PHRASE in document.pages[0].text
    assert "LinnSequencer" in document.pages[1].text
    assert reported == [(0, 2), (1, 2), (2, 2)]


def test_an_image_without_text_is_no_text():
    blank = _encoded(Image.new("L", (800, 600), color=255), "PNG")

    with pytest.raises(UnreadableDocument) as raised:
        load_document("blank.png", blank)
    assert raised.value.reason == UnreadableDocument.NO_TEXT and "blank.png" in raised.value.message


def test_something_else_named_as_an_image_is_unsupported():
    with pytest.raises(UnsupportedFileType, match="not a PNG, JPEG, TIFF or WebP image"):
        load_document("photo.png", b"%PDF-1.4 a PDF named like a photo")


def test_a_truncated_image_is_corrupt(pdfs):
    png = _encoded(_page_image(pdfs / HUCK_FINN), "PNG")

    with pytest.raises(UnreadableDocument) as raised:
        load_document("cut.png", png[: len(png) // 2])
    assert raised.value.reason == UnreadableDocument.CORRUPT


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG that declares ``width`` × ``height`` pixels (its pixel data is never reached)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    chunk = struct.pack(">I", len(header)) + b"IHDR" + header + struct.pack(">I", zlib.crc32(b"IHDR" + header))
    return b"\x89PNG\r\n\x1a\n" + chunk + struct.pack(">I", 0) + b"IEND" + struct.pack(">I", zlib.crc32(b"IEND"))


@pytest.mark.parametrize(("width", "height"), [(20_000, 20_000), (10_000, 10_000)], ids=["bomb", "over-the-limit"])
def test_an_image_with_too_many_pixels_is_refused_before_it_is_decoded(width, height):
    with pytest.raises(UnreadableDocument) as raised:
        load_document("huge.png", _png_header_only(width, height))
    assert raised.value.reason == UnreadableDocument.TOO_COMPLEX and "megapixels" in raised.value.message


def test_a_file_with_too_many_pages_to_recognise_is_refused(pdfs):
    with pytest.raises(UnreadableDocument) as raised:
        load_document(MIXED, (pdfs / MIXED).read_bytes(), ocr=OcrOptions(max_pages=4))
    assert raised.value.reason == UnreadableDocument.TOO_COMPLEX and "5 pages to recognise" in raised.value.message


# --- without Tesseract ----------------------------------------------------------------------------------------------


def test_without_tesseract_a_scan_is_refused_saying_how_to_install_it(pdfs):
    with pytest.raises(UnreadableDocument) as raised:
        load_document(LINN, (pdfs / LINN).read_bytes(), ocr=NO_TESSERACT)

    refusal = raised.value
    assert refusal.reason == UnreadableDocument.OCR_UNAVAILABLE
    assert "Tesseract" in refusal.message and "not installed" in refusal.message
    assert "apt-get install tesseract-ocr" in refusal.message and "AXIOM_OCR_TESSERACT_PATH" in refusal.message


def test_without_tesseract_an_image_is_refused_the_same_way(pdfs):
    png = _encoded(_page_image(pdfs / HUCK_FINN), "PNG")

    with pytest.raises(UnreadableDocument) as raised:
        load_document("page.png", png, ocr=NO_TESSERACT)
    assert raised.value.reason == UnreadableDocument.OCR_UNAVAILABLE


def test_without_tesseract_a_mixed_pdf_still_loads_its_text_layer(pdfs):
    document = load_document(MIXED, (pdfs / MIXED).read_bytes(), ocr=NO_TESSERACT)

    assert [(page.number, page.ocr) for page in document.pages] == [(4, False)]


def test_a_language_without_data_is_refused_naming_its_package(pdfs):
    with pytest.raises(UnreadableDocument) as raised:
        load_document(LINN, (pdfs / LINN).read_bytes(), ocr=OcrOptions(languages="xyz"))

    assert raised.value.reason == UnreadableDocument.OCR_UNAVAILABLE
    assert "tesseract-ocr-xyz" in raised.value.message


def test_a_page_that_takes_too_long_to_recognise_is_given_up(pdfs):
    with pytest.raises(UnreadableDocument) as raised:
        load_document(LINN, (pdfs / LINN).read_bytes(), ocr=OcrOptions(page_seconds=0.01))

    assert raised.value.reason == UnreadableDocument.TOO_COMPLEX


# --- in the reader's worker process -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tight_reader():
    """A reader whose time limit for a file is far below what recognising the mixed scan takes (5 pages, about 2 s
    each): it reads it only because each page to recognise extends the limit."""
    reader = DocumentReader(ReaderLimits(seconds=3.0))
    yield reader
    reader.close()


def test_the_reader_reports_each_recognised_page_and_extends_its_time_limit(pdfs, tight_reader):
    reported: list[tuple[int, int]] = []

    document = tight_reader.read(
        MIXED, (pdfs / MIXED).read_bytes(), threading.Event(), lambda *done: reported.append(done)
    )

    assert [page.number for page in document.pages if page.ocr] == [1, 2, 5, 6]
    assert reported and reported[-1][1] == 5 and all(total == 5 for _, total in reported)
    assert [done for done, _ in reported] == sorted(done for done, _ in reported)


def test_a_read_within_a_request_stops_before_recognising_more_pages_than_it_may(pdfs, tight_reader):
    with pytest.raises(TooLongForRequest):
        tight_reader.read(MIXED, (pdfs / MIXED).read_bytes(), patience=Patience(600, pages_to_recognise=1))
    # One page to recognise is within it, and the worker that stopped reads on.
    document = tight_reader.read(LINN, (pdfs / LINN).read_bytes(), patience=Patience(600, pages_to_recognise=1))
    assert document.pages[0].ocr


def test_the_reader_carries_the_missing_tesseract_error(pdfs, tight_reader):
    with pytest.raises(UnreadableDocument) as raised:
        tight_reader.read(LINN, (pdfs / LINN).read_bytes(), ocr=NO_TESSERACT)
    assert raised.value.reason == UnreadableDocument.OCR_UNAVAILABLE
