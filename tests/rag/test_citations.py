"""Citations name each page as its document does: a slide, a sheet, a chapter; "Page N" otherwise."""

from backend.models import Chunk, Parent, Passage
from backend.rag.citations import build_context, passage_sources


def test_sources_and_the_prompt_name_each_page_by_its_label():
    slide = Parent("deck-p0", "deck", "deck.pptx", 2, "Axolotls were counted on the survey.", label="Slide 2")
    sheet = Parent("book-p0", "book", "book.xlsx", 3, "Region: North; Sales: 1200", label="Sheet “Q3 sales”")
    page = Parent("old-p0", "old", "old.pdf", 7, "Stored before labels.")  # cited as "Page 7"
    passages = [Passage(p, Chunk(f"{p.parent_id}-c0", p.parent_id, p.document_id, p.filename, p.page, p.text), 0.5)
                for p in (slide, sheet, page)]

    context, _ = build_context(passages, lambda text: len(text) // 4, budget_tokens=600)
    sources = passage_sources(passages)

    assert "[Source 1: deck.pptx (Slide 2)]" in context and "[Source 2: book.xlsx (Sheet “Q3 sales”)]" in context
    assert "[Source 3: old.pdf (Page 7)]" in context
    assert [(s["page"], s["page_label"], s["page_labels"]) for s in sources] == [
        (2, "Slide 2", ["Slide 2"]), (3, "Sheet “Q3 sales”", ["Sheet “Q3 sales”"]), (7, "Page 7", ["Page 7"]),
    ]
    assert [s["passages"][0]["page_label"] for s in sources] == ["Slide 2", "Sheet “Q3 sales”", "Page 7"]
