"""Zip packages (DOCX, PPTX, XLSX, EPUB): the archive is checked from its directory before anything is inflated,
and a part's XML is walked with a streaming reader before a library builds it in memory, so a small upload that
expands to gigabytes is refused quickly instead of meeting the reader process's memory limit."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Iterator, Sequence

from lxml import etree

from backend.errors import UnreadableDocument, UnsupportedFileType
from backend.ingest.loaders.text import corrupt

ZIP_MAGIC = b"PK\x03\x04"
# The libraries inflate parts in memory (python-pptx every part at once). Python's zipfile never inflates a member
# past the size the directory declares for it (a member that lies fails its CRC check), so the declared sizes bound
# what reading the package can cost.
MAX_EXPANDED_BYTES = 512 * 1024 * 1024
# A whole part's XML as an lxml tree costs ~120 bytes a node: past this many nodes a package is refused before a
# library builds its trees (a 400-page report has a few hundred thousand).
MAX_XML_ELEMENTS = 2_000_000


def open_package(name: str, data: bytes, kind: str, required_part: str) -> zipfile.ZipFile:
    """The package as an open archive, once it is known to be a ``kind`` (it has ``required_part``) whose members
    together expand to at most MAX_EXPANDED_BYTES."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise corrupt(name, kind) from error
    members = archive.infolist()
    if required_part not in {member.filename for member in members}:
        raise UnsupportedFileType(
            f"“{name}” is a zip archive but not a {kind} (it has no {required_part}).", filename=name
        )
    if sum(member.file_size for member in members) > MAX_EXPANDED_BYTES:
        raise too_complex(
            name, f"expands to more than {MAX_EXPANDED_BYTES // 2**20} MB when unpacked, more than a document may hold"
        )
    return archive


def iter_part_elements(
    name: str, kind: str, archive: zipfile.ZipFile, part: str, tags: Sequence[str] | None = None,
    recover: bool = False,
) -> Iterator[etree._Element]:
    """Each element of ``part`` (of ``tags`` only, when given: lxml then skips the others without a Python call) as
    its end tag is read, with its attributes and children, then dropped: memory stays constant however large the
    part is. Entities are not expanded. ``recover`` reads past what is not well-formed XML."""
    try:
        with archive.open(part) as stream:
            elements = etree.iterparse(
                stream, events=("end",), tag=tags, resolve_entities=False, no_network=True, recover=recover
            )
            for _, element in elements:
                yield element
                element.clear(keep_tail=True)
                while element.getprevious() is not None:  # drop finished siblings, or the tree still grows
                    del element.getparent()[0]
    except (etree.XMLSyntaxError, zipfile.BadZipFile, OSError, EOFError, KeyError) as error:
        raise corrupt(name, kind) from error


def check_element_count(name: str, kind: str, archive: zipfile.ZipFile, parts: Iterable[str], too_many: str) -> None:
    """Refuses the package when ``parts`` together hold more than MAX_XML_ELEMENTS elements; ``too_many`` names
    what there is too much of, e.g. "paragraphs and other parts"."""
    elements = 0
    for part in parts:
        # Counting is about size, not validity: each format's reader judges the markup (an EPUB's XHTML is read
        # leniently, and often holds HTML entities such as &nbsp; that XML does not define).
        for _ in iter_part_elements(name, kind, archive, part, recover=True):
            elements += 1
            if elements > MAX_XML_ELEMENTS:
                raise too_complex(name, f"has too many {too_many} to read safely (more than {MAX_XML_ELEMENTS:,})")


def too_complex(name: str, what: str) -> UnreadableDocument:
    return UnreadableDocument(
        f"“{name}” {what}. Split it into smaller documents and upload those.",
        reason=UnreadableDocument.TOO_COMPLEX, filename=name,
    )
