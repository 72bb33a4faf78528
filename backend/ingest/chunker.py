"""Parent-child chunking: small children are indexed for precise retrieval, their ~2000-char parents are what
the LLM reads. Chunks never cross a page boundary, so every citation's page is exact."""

from __future__ import annotations

from langchain_text_splitters import RecursiveCharacterTextSplitter

from backend.models import Chunk, LoadedDocument, Parent

SEPARATORS = ["\n\n", "\n", ". ", " ", ""]


def _splitter(size: int, overlap: int) -> RecursiveCharacterTextSplitter:
    # keep_separator="end" keeps a sentence's ". " with that sentence instead of starting the next chunk.
    return RecursiveCharacterTextSplitter(
        chunk_size=size, chunk_overlap=overlap, separators=SEPARATORS, keep_separator="end", strip_whitespace=True
    )


def parent_id(document_id: str, index: int) -> str:
    """The id of a document's ``index``-th parent (0: the one its text starts with)."""
    return f"{document_id}-p{index}"


class ParentChildChunker:
    def __init__(self, parent_size: int, parent_overlap: int, child_size: int, child_overlap: int) -> None:
        self._parents = _splitter(parent_size, parent_overlap)
        self._children = _splitter(child_size, child_overlap)

    def chunk(self, document: LoadedDocument, document_id: str) -> tuple[list[Parent], list[Chunk]]:
        parents: list[Parent] = []
        chunks: list[Chunk] = []
        for page in document.pages:
            for parent_text in self._parents.split_text(page.text):
                parent = Parent(
                    parent_id=parent_id(document_id, len(parents)),
                    document_id=document_id,
                    filename=document.filename,
                    page=page.number,
                    text=parent_text,
                    ocr=page.ocr,
                    label=page.label,
                )
                parents.append(parent)
                for child_index, child_text in enumerate(self._children.split_text(parent_text)):
                    chunks.append(
                        Chunk(
                            chunk_id=f"{parent.parent_id}-c{child_index}",
                            parent_id=parent.parent_id,
                            document_id=document_id,
                            filename=document.filename,
                            page=page.number,
                            text=child_text,
                            ocr=page.ocr,
                            label=page.label,
                        )
                    )
        return parents, chunks
