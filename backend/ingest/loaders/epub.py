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
from backend.ingest.loaders.text import LoadedPages, corrupt, labelled, pages_or_no_text

_KIND = "book in EPUB format"
_CONTAINER_PART = "META-INF/container.xml"
_CONTAINER_NS = {"c": "urn:oasis:names:tc:opendocument:xmlns:container"}
_OPF_NS = {"opf": "http://www.idpf.org/2007/opf"}
_CHAPTER_TYPES = ("application/xhtml+xml", "text/html")
_MARKUP_SUFFIXES = (".xml", ".opf", ".xhtml", ".html", ".htm", ".ncx")
_NCX_TYPE = "application/x-dtbncx+xml"
_NCX_NS = {"n": "http://www.daisy.org/z3986/2005/ncx/"}
_NAV_NS = {"x": "http://www.w3.org/1999/xhtml", "e": "http://www.idpf.org/2007/ops"}
# A chapter's title cites it; a longer one is cut (a table of contents may hold a paragraph as an entry).
_MAX_TITLE_CHARS = 120
_XML_PARSER = etree.XMLParser(resolve_entities=False, no_network=True)
# Tables of contents written with HTML entities XML does not define (&nbsp;) are common; what can be read of them
# still names the chapters.
_LENIENT_XML_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, recover=True)


def load_epub(name: str, data: bytes) -> LoadedPages:
    if not data.startswith(ZIP_MAGIC):
        raise UnsupportedFileType(f"“{name}” is named .epub but is not a book in EPUB format.", filename=name)
    with open_package(name, data, _KIND, _CONTAINER_PART) as archive:
        markup = [part for part in archive.namelist() if part.endswith(_MARKUP_SUFFIXES)]
        check_element_count(name, _KIND, archive, markup, too_many="chapters and other parts")
        try:
            package_path, package = _package(archive)
            chapters = _reading_order(package_path, package)
            texts = [html_main_text(name, archive.read(chapter)) for chapter in chapters]
            labels = _chapter_labels(chapters, _table_of_contents(archive, package_path, package))
        except (etree.XMLSyntaxError, KeyError, zipfile.BadZipFile, OSError, EOFError) as error:
            raise corrupt(name, _KIND) from error
    return LoadedPages(labelled(pages_or_no_text(name, texts), lambda number: labels[number - 1]), len(texts))


def _package(archive: zipfile.ZipFile) -> tuple[str, etree._Element]:
    """The package document (the OPF: manifest and spine) and its path in the archive."""
    container = etree.fromstring(archive.read(_CONTAINER_PART), _XML_PARSER)
    package_path = container.xpath("string(//c:rootfile/@full-path)", namespaces=_CONTAINER_NS)
    return package_path, etree.fromstring(archive.read(package_path), _XML_PARSER)


def _reading_order(package_path: str, package: etree._Element) -> list[str]:
    """The archive paths of the spine's chapters, in reading order."""
    chapters = {
        item.get("id"): _archive_path(package_path, item.get("href", ""))
        for item in package.iterfind("opf:manifest/opf:item", _OPF_NS)
        if item.get("media-type") in _CHAPTER_TYPES
    }
    spine = package.iterfind("opf:spine/opf:itemref", _OPF_NS)
    return [chapters[ref.get("idref")] for ref in spine if ref.get("idref") in chapters]


def _archive_path(referrer: str, href: str) -> str:
    """Where ``href`` (relative to the part ``referrer``, perhaps with a #fragment) points in the archive."""
    target = unquote(href.partition("#")[0])
    return posixpath.normpath(posixpath.join(posixpath.dirname(referrer), target))


def _table_of_contents(archive: zipfile.ZipFile, package_path: str, package: etree._Element) -> dict[str, str]:
    """Each chapter's title by its archive path, from the EPUB 3 navigation document, else the EPUB 2 NCX; a
    chapter named by several entries keeps the first. Empty when the book has neither, or the manifest names one
    the archive lacks: the table of contents only names the chapters, the book reads without it."""
    manifest = list(package.iterfind("opf:manifest/opf:item", _OPF_NS))
    navigation = [item for item in manifest if "nav" in item.get("properties", "").split()]
    ncx = [item for item in manifest if item.get("media-type") == _NCX_TYPE]
    if not navigation and not ncx:
        return {}
    path = _archive_path(package_path, (navigation or ncx)[0].get("href", ""))
    if path not in archive.namelist():
        return {}
    document = etree.fromstring(archive.read(path), _LENIENT_XML_PARSER)
    if document is None:
        return {}
    titles: dict[str, str] = {}
    for href, title in _navigation_entries(document) if navigation else _ncx_entries(document):
        if title := " ".join(title.split())[:_MAX_TITLE_CHARS]:
            titles.setdefault(_archive_path(path, href), title)
    return titles


def _navigation_entries(document: etree._Element) -> list[tuple[str, str]]:
    """(href, title) of the links in the navigation document's table of contents (or its first nav)."""
    tocs = document.xpath("//x:nav[@e:type='toc']", namespaces=_NAV_NS)
    tocs = tocs or document.xpath("//x:nav", namespaces=_NAV_NS)
    links = tocs[0].iterfind(".//x:a", _NAV_NS) if tocs else ()
    return [(link.get("href", ""), link.xpath("string()")) for link in links]


def _ncx_entries(document: etree._Element) -> list[tuple[str, str]]:
    return [
        (point.xpath("string(n:content/@src)", namespaces=_NCX_NS),
         point.xpath("string(n:navLabel/n:text)", namespaces=_NCX_NS))
        for point in document.iterfind(".//n:navPoint", _NCX_NS)
    ]


def _chapter_labels(chapters: list[str], titles: dict[str, str]) -> list[str]:
    """Each chapter's title in the table of contents; a part the table does not name continues the chapter before
    it (a long chapter split into several files), and one before any named chapter is "Chapter N"."""
    labels: list[str] = []
    current: str | None = None
    for position, chapter in enumerate(chapters, start=1):
        current = titles.get(chapter, current)
        labels.append(current or f"Chapter {position}")
    return labels
