"""A known sentence, asked about after upload, is retrieved from the right file and cited on the right page: the
whole path from a real file through reading, chunking, both indexes and retrieval to the citation's source."""

from backend.rag.citations import passage_sources

BERT = "academic_2col_bert_1810.04805.pdf"
DISTRACTOR = "academic_2col_naacl06-shinyama.pdf"
# Minutes saved in Shift-JIS, as a Japanese Windows editor saves them.
JAPANESE_MINUTES = [
    "この文書は会議の議事録です。出席者は五名でした。",
    "これは東京都の天気について説明する文章です。明日は雨が降るでしょう。",
    "次回の会議は来週の月曜日に開かれます。",
]


def test_a_sentence_of_an_appendix_is_cited_on_its_pdf_page_with_its_printed_number(services, pdfs):
    """BERT's appendix restarts its printed page numbers: page 14 of the PDF prints "3"."""
    for name in (BERT, DISTRACTOR):
        services.ingestion.ingest("chat1", name, (pdfs / name).read_bytes())

    result = services.retriever.retrieve("chat1", "Which corpus was GPT trained on, compared with BERT?")

    best = result.relevant[0]
    assert "GPT is trained on the BooksCorpus" in best.parent.text
    source = passage_sources([best])[0]
    assert source["filename"] == BERT
    assert (source["page"], source["page_label"]) == (14, "Page 3 (PDF page 14)")


def test_a_japanese_sentence_is_found_by_the_words_of_a_question(services, pdfs):
    """Keyword search finds it although the question words it differently ("東京の天気" for "東京都の天気")."""
    services.ingestion.ingest("chat1", DISTRACTOR, (pdfs / DISTRACTOR).read_bytes())
    services.ingestion.ingest("chat1", "議事録.txt", "\n".join(JAPANESE_MINUTES).encode("shift_jis"))

    found = services.sparse.search("chat1", "東京の天気はどうですか", 3)

    assert found and found[0].chunk.filename == "議事録.txt" and "東京都の天気" in found[0].chunk.text
