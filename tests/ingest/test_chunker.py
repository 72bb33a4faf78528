from backend.ingest.chunker import ParentChildChunker
from backend.models import LoadedDocument, Page

SENTENCE = "Retrieval augmented generation grounds answers in documents. "


def chunker() -> ParentChildChunker:
    return ParentChildChunker(parent_size=2000, parent_overlap=200, child_size=400, child_overlap=50)


def document(*pages: str) -> LoadedDocument:
    return LoadedDocument("report.pdf", "pdf", tuple(Page(i, text) for i, text in enumerate(pages, start=1)))


def test_sizes_stay_within_limits_and_children_come_from_their_parent():
    text = "\n\n".join(SENTENCE * 8 for _ in range(12))  # ~6000 chars in paragraphs
    parents, chunks = chunker().chunk(document(text), "d1")
    assert len(parents) >= 3
    assert all(len(p.text) <= 2000 for p in parents)
    assert all(len(c.text) <= 400 for c in chunks)
    by_id = {p.parent_id: p for p in parents}
    for chunk in chunks:
        assert chunk.text in by_id[chunk.parent_id].text


def test_children_overlap_and_sentences_end_with_their_period():
    _, chunks = chunker().chunk(document(SENTENCE * 20), "d1")
    assert len(chunks) >= 3
    assert chunks[0].text.endswith(".")  # ". " separator stays with its sentence
    assert chunks[0].text[-40:] in chunks[0].text + chunks[1].text  # sanity
    assert set(chunks[0].text.split(". ")) & set(chunks[1].text.split(". "))  # 50-char overlap repeats a sentence


def test_metadata_ids_and_pages_are_exact():
    parents, chunks = chunker().chunk(document("First page text. " * 30, "Second page text. " * 30), "doc42")
    assert {c.page for c in chunks} == {1, 2}
    assert all(c.document_id == "doc42" and c.filename == "report.pdf" for c in chunks)
    assert all(c.parent_id.startswith("doc42-p") and c.chunk_id.startswith(c.parent_id + "-c") for c in chunks)
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    # No chunk crosses the page boundary.
    assert all("Second" not in c.text for c in chunks if c.page == 1)
    assert all("First" not in c.text for c in chunks if c.page == 2)
    assert [p.page for p in parents] == sorted(p.page for p in parents)


def test_blank_pages_produce_nothing():
    parents, chunks = chunker().chunk(document("   \n\n  "), "d1")
    assert parents == [] and chunks == []


def test_a_recognised_page_marks_its_parents_and_chunks():
    pages = (Page(1, SENTENCE * 50), Page(2, SENTENCE * 50, ocr=True))
    parents, chunks = chunker().chunk(LoadedDocument("scan.pdf", "pdf", pages), "d1")

    assert {(p.page, p.ocr) for p in parents} == {(1, False), (2, True)}
    assert {(c.page, c.ocr) for c in chunks} == {(1, False), (2, True)}


def test_parents_and_chunks_carry_their_pages_label_and_are_cited_by_it():
    pages = (Page(1, SENTENCE * 50, label="Slide 1"), Page(2, SENTENCE * 50))
    parents, chunks = chunker().chunk(LoadedDocument("deck.pptx", "pptx", pages), "d1")

    assert {(p.page, p.label) for p in parents} == {(1, "Slide 1"), (2, "")}
    assert {(c.page, c.label) for c in chunks} == {(1, "Slide 1"), (2, "")}
    assert {p.cited_page for p in parents} == {"Slide 1", "Page 2"}  # a page without a label is "Page N"
