"""HTML (trafilatura): the page's main text as Markdown, headings and tables kept, navigation, scripts and other
boilerplate dropped; one page. Also reads an EPUB's chapters (epub.py).

trafilatura's time grows faster than linearly with the number of elements, and the parsed page takes ~35 times its
size in memory (measured here: 30 k paragraphs of 300 characters, 8.7 MB, 7 s and 316 MiB; 59 k, 17 MB,
24 s and 541 MiB). So a page is refused past 10 MB and 30 k elements, which keeps a read within seconds; a long
saved article has a few thousand elements once scripts, styles and drawings are removed."""

from __future__ import annotations

import codecs
import logging
import re

import lxml.html
import trafilatura
from lxml import etree

from backend.errors import UnsupportedFileType
from backend.ingest.loaders.package import too_complex
from backend.ingest.loaders.plain import decode_text
from backend.ingest.loaders.text import LoadedPages, pages_or_no_text

# trafilatura warns "discarding data: None" for every page too short to be an article, which is not news here.
logging.getLogger("trafilatura.core").setLevel(logging.ERROR)

MAX_HTML_BYTES = 10 * 1024 * 1024
MAX_HTML_ELEMENTS = 30_000
# What is never text to read: removed before elements are counted, so inline drawings do not count against a page.
_NOT_TEXT = ("script", "style", "noscript", "template", "svg", "math", "iframe", "object", "embed", "canvas")
_ANY_TAG = re.compile(
    r"<(?:!doctype\s+html|html|head|body|title|meta|p|div|span|h[1-6]|br|a|table|ul|article)\b", re.IGNORECASE
)
_DECLARED_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([\w.:-]+)", re.IGNORECASE)
_CHARSET_WINDOW = 4096
_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")


def load_html(name: str, data: bytes) -> LoadedPages:
    if len(data) > MAX_HTML_BYTES:
        raise too_complex(
            name, f"is a web page of more than {MAX_HTML_BYTES // 2**20} MB, more than Axiom reads"
        )
    text = _decode_html(name, data)
    no_text = f"“{name}” contains no readable text."
    return LoadedPages(pages_or_no_text(name, [html_main_text(name, text)], no_text), page_count=1)


def html_main_text(name: str, html: str | bytes) -> str:
    """The main text of an HTML document as Markdown (headings as ``#`` lines); "" if it has none. Bytes are
    decoded as their XML declaration or meta tag says."""
    if isinstance(html, str):  # lxml refuses text that still declares the encoding of its bytes
        html = _XML_DECLARATION.sub("", html, count=1)
    tree = _text_tree(html)
    if tree is None:
        return ""
    if sum(1 for _ in tree.iter()) > MAX_HTML_ELEMENTS:
        raise too_complex(
            name, f"has more than {MAX_HTML_ELEMENTS:,} HTML elements, too many to find its main text in good time"
        )
    title = " ".join(tree.xpath("string((//h1)[1])").split()) or " ".join(tree.xpath("string(//title)").split())
    extracted = trafilatura.extract(
        tree, output_format="markdown", include_tables=True, include_comments=False, favor_recall=True
    )
    # A short page can fall below what trafilatura calls an article; its whole text is then what there is, read
    # from the page parsed again (extract is not promised to leave the tree it is given whole): cheap for a short
    # page, and no copy of every page for the rare one.
    text = extracted or trafilatura.html2txt(_text_tree(html)) or ""
    # trafilatura can take a page's leading heading for its title and leave it out: a text that does not start
    # with a heading gets it back.
    return f"# {title}\n\n{text}" if text and title and not text.startswith("#") and title not in text else text


def _text_tree(html: str | bytes) -> lxml.html.HtmlElement | None:
    """The parsed page without what is never text to read; None for a page of nothing but comments or whitespace
    (browsers show an empty page)."""
    try:
        tree = lxml.html.document_fromstring(html)
    except etree.ParserError:
        return None
    etree.strip_elements(tree, *_NOT_TEXT, with_tail=False)
    return tree


def _decode_html(name: str, data: bytes) -> str:
    text = decode_text(name, data, kind="a web page")
    if not _ANY_TAG.search(text):
        raise UnsupportedFileType(f"“{name}” is named as a web page but contains no HTML.", filename=name)
    declared = _DECLARED_CHARSET.search(data[:_CHARSET_WINDOW])
    if declared is None or data.startswith(_BOMS) or _is_utf8(data):
        return text
    try:  # not UTF-8, so decode_text fell back to Windows-1252: the page's own declaration knows better
        return data.decode(declared.group(1).decode("ascii"), errors="replace")
    except (LookupError, UnicodeDecodeError):
        return text


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
