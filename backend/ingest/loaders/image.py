"""Images of text (PNG, JPEG, TIFF, WebP; Pillow decodes them): each frame is a page, recognised by Tesseract.

The content decides: any of the four formats is read whichever image extension it carries (a JPEG saved as .png is
still a photo of text), anything else is refused as not an image. A multi-page TIFF (a fax, a scanner's output) has
a page per frame.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator

from PIL import Image, ImageSequence, UnidentifiedImageError

from backend.errors import UnreadableDocument, UnsupportedFileType
from backend.ingest.loaders.ocr import Recogniser
from backend.ingest.loaders.text import LoadedPages, corrupt, labelled, pages_or_no_text
from backend.models import Page

IMAGE_FORMATS = ["PNG", "JPEG", "TIFF", "WEBP"]
# Pillow refuses images past twice this many pixels as decompression bombs; half of its default (178 Mpx) is
# still a 30-inch page at 300 dpi, and keeps the decoded frame inside a reader process's memory.
_MAX_IMAGE_PIXELS = 89_478_485


def load_image(name: str, data: bytes, recogniser: Recogniser) -> LoadedPages:
    image = _open_image(name, data)
    try:
        recogniser.expect(image_frames(image))
        # Frame by frame: a long TIFF is never decoded whole.
        texts = [recogniser.recognise(_greyscale(name, frame)) for frame in _frames(name, image)]
    finally:
        image.close()
    no_text = f"No text could be recognised in “{name}”. If it shows text, upload a sharper or larger image of it."
    pages = [Page(page.number, page.text, ocr=True) for page in pages_or_no_text(name, texts, no_text)]
    # A multi-page TIFF's frames are cited as frames; a single image as its page.
    if len(texts) > 1:
        pages = labelled(pages, lambda number: f"Frame {number}")
    return LoadedPages(pages, len(texts))


def image_frames(image: Image.Image) -> int:
    return getattr(image, "n_frames", 1)


def _frames(name: str, image: Image.Image) -> Iterator[Image.Image]:
    try:
        yield from ImageSequence.Iterator(image)
    except (OSError, ValueError, EOFError) as error:  # a frame after the first is damaged
        raise corrupt(name, "image") from error


def _open_image(name: str, data: bytes) -> Image.Image:
    try:
        return _decoder(data)
    except UnidentifiedImageError as error:
        raise UnsupportedFileType(
            f"“{name}” is named as an image but is not a PNG, JPEG, TIFF or WebP image.", filename=name
        ) from error
    except Image.DecompressionBombError as error:
        raise _too_large(name) from error
    except (OSError, ValueError) as error:
        raise corrupt(name, "image") from error


def _decoder(data: bytes) -> Image.Image:
    """Opens (reads the header of) an image in one of the accepted formats; pixels are decoded on first use."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            return Image.open(io.BytesIO(data), formats=IMAGE_FORMATS)
        except Image.DecompressionBombWarning as warning:
            raise Image.DecompressionBombError(str(warning)) from warning


def _greyscale(name: str, frame: Image.Image) -> Image.Image:
    if frame.width * frame.height > _MAX_IMAGE_PIXELS:
        raise _too_large(name)
    try:
        return frame.convert("L")
    except (OSError, ValueError, SyntaxError) as error:  # truncated or damaged pixel data
        raise corrupt(name, "image") from error


def _too_large(name: str) -> UnreadableDocument:
    return UnreadableDocument(
        f"“{name}” has more pixels than an image may have to be read ({_MAX_IMAGE_PIXELS // 1_000_000} megapixels). "
        "Scale it down and upload it again.",
        reason=UnreadableDocument.TOO_COMPLEX, filename=name,
    )
