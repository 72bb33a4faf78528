"""Plain data passed between the stages. No behaviour beyond trivial derived values."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Page:
    """Text of one page (PDF, image), slide (PPTX), sheet (XLSX), chapter (EPUB) or section (TXT, MD, DOCX, CSV,
    HTML); ``number`` is 1-based. ``ocr``: the text was recognised in the page's image (Tesseract), not read from a
    text layer."""

    number: int
    text: str
    ocr: bool = False
    # How a citation names it: "Slide 12", "Sheet “Q3 sales”", a chapter's title, "Frame 2"; empty: "Page N".
    label: str = ""


@dataclass(frozen=True, slots=True)
class LoadedDocument:
    filename: str
    file_type: str  # "pdf" | "txt" | "md" | "docx" | "pptx" | "xlsx" | "csv" | "html" | "epub" | "image"
    pages: tuple[Page, ...]  # those with text
    # All its pages, those without text too (a PDF's blank or unreadable pages, an empty slide); by default
    # the number of its last page with text.
    page_count: int = 0

    def __post_init__(self) -> None:
        if not self.page_count:
            object.__setattr__(self, "page_count", max((page.number for page in self.pages), default=0))


def cited_page(page: int, label: str = "") -> str:
    """How a citation names its page: the loader's label ("Slide 12"), else "Page N"."""
    return label or f"Page {page}"


@dataclass(frozen=True, slots=True)
class Parent:
    """A ~2000-char block handed to the LLM. Parents never cross a page, so a citation's page is exact."""

    parent_id: str
    document_id: str
    filename: str
    page: int
    text: str
    ocr: bool = False  # its page's text was recognised (OCR)
    label: str = ""  # its page's label (Page.label); empty without one, as in rows stored before labels

    @property
    def cited_page(self) -> str:
        return cited_page(self.page, self.label)


@dataclass(frozen=True, slots=True)
class Chunk:
    """A ~400-char child of a parent: the unit that is embedded and indexed."""

    chunk_id: str
    parent_id: str
    document_id: str
    filename: str
    page: int
    text: str
    ocr: bool = False  # its page's text was recognised (OCR)
    label: str = ""  # its page's label (Page.label)


@dataclass(frozen=True, slots=True)
class ScoredChunk:
    """A child chunk as ranked by one retriever or by fusion; higher score is better."""

    chunk: Chunk
    score: float


@dataclass(frozen=True, slots=True)
class Passage:
    """A parent reached through its retrieved children, after parent expansion."""

    parent: Parent
    best_chunk: Chunk
    score: float
    matched_chunks: tuple[Chunk, ...] = ()  # every retrieved child of this parent, best first
