"""EPUB: a zip of XHTML chapters; each document of the reading order (the package's spine) is a page, its text
extracted as for a web page (html.py). The package's XML is counted before any of it is parsed whole."""

from __future__ import annotations

import posixpath
import zipfile
from urllib.parse import unquote

from lxml import etree

from backend.errors import UnsupportedFileType
from backend.ingest.loaders.html import html_main_text
from backend.ingest.loaders.package import ZIP_MAGIC, check_element_count, open_package
from backend.ingest.loaders.text import corrupt, pages_or_no_text
from backend.models import Page

_KIND = "book in EPUB format"
_CONTAINER_PART = "META-INF/container.xml"
_CONTAINER_NS = {"c": "urn:oasis:names:tc:opendocument:xmlns:container"}
_OPF_NS = {"opf": "http://www.idpf.org/2007/opf"}
_CHAPTER_TYPES = ("application/xhtml+xml", "text/html")
_XML_PARSER = etree.XMLParser(resolve_entities=False, no_network=True)


def load_epub(name: str, data: bytes) -> list[Page]:
    if not data.startswith(ZIP_MAGIC):
        raise UnsupportedFileType(f"“{name}” is named .epub but is not a book in EPUB format.", filename=name)
    with open_package(name, data, _KIND, _CONTAINER_PART) as archive:
        markup = [part for part in archive.namelist() if part.endswith((".xml", ".opf", ".xhtml", ".html", ".htm"))]
        check_element_count(name, _KIND, archive, markup, too_many="chapters and other parts")
        try:
            texts = [html_main_text(name, archive.read(chapter)) for chapter in _reading_order(archive)]
        except (etree.XMLSyntaxError, KeyError, zipfile.BadZipFile, OSError, EOFError) as error:
            raise corrupt(name, _KIND) from error
    return pages_or_no_text(name, texts)


def _reading_order(archive: zipfile.ZipFile) -> list[str]:
    """The archive paths of the spine's chapters, in reading order."""
    container = etree.fromstring(archive.read(_CONTAINER_PART), _XML_PARSER)
    package_path = container.xpath("string(//c:rootfile/@full-path)", namespaces=_CONTAINER_NS)
    package = etree.fromstring(archive.read(package_path), _XML_PARSER)
    base = posixpath.dirname(package_path)
    chapters = {
        item.get("id"): posixpath.normpath(posixpath.join(base, unquote(item.get("href", ""))))
        for item in package.iterfind("opf:manifest/opf:item", _OPF_NS)
        if item.get("media-type") in _CHAPTER_TYPES
    }
    spine = package.iterfind("opf:spine/opf:itemref", _OPF_NS)
    return [chapters[ref.get("idref")] for ref in spine if ref.get("idref") in chapters]
