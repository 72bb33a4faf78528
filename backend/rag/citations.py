"""Numbered source blocks for the prompt, and the sources an answer actually cites.

The model sees ``[Source N: file (Page p)]`` blocks (or the page's label: "Slide 3") and is told to cite ``[Source N]``. Small models forget to
cite, so a sentence without a citation gets the one source that supports it (if any). The caller receives only
the cited sources, in order of first citation, one entry per document with its pages and passages.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from backend.models import Passage, cited_page
from backend.rag.grounding import sentence_support, split_sentences

_CITATION = re.compile(r"\[\s*Sources?\s*(\d+(?:\s*(?:,|and)\s*\d+)*)\s*\]", re.IGNORECASE)
PREVIEW_CHARS = 200


def source_label(number: int, passage: Passage) -> str:
    return f"[Source {number}: {passage.parent.filename} ({passage.parent.cited_page})]"


def _window_around(text: str, anchor: str, max_chars: int) -> str:
    """At most ``max_chars`` of ``text``, centred on ``anchor`` (the child that matched) when it is found."""
    if len(text) <= max_chars:
        return text
    start = max(0, text.find(anchor[:60])) if anchor else 0
    start = max(0, min(start - (max_chars - len(anchor)) // 2, len(text) - max_chars))
    return text[start : start + max_chars]


def build_context(
    passages: Sequence[Passage], count_tokens: Callable[[str], int], budget_tokens: int
) -> tuple[str, list[Passage]]:
    """The numbered context and the passages it holds, fitted to ``budget_tokens``.

    Passages are taken best first; each is cut to an equal share of the budget around its matched child, so the
    best few passages are all seen rather than the first one alone.
    """
    if not passages:
        return "", []
    blocks: list[str] = []
    used: list[Passage] = []
    remaining = budget_tokens
    for index, passage in enumerate(passages):
        share = remaining // (len(passages) - index)
        label = source_label(len(used) + 1, passage)
        text = passage.parent.text
        # Characters per token is about 4 for English; shrink until the block fits its share.
        max_chars = max(200, share * 4)
        block = f"{label}\n{_window_around(text, passage.best_chunk.text, max_chars)}"
        while count_tokens(block) > share and max_chars > 200:
            max_chars = int(max_chars * 0.8)
            block = f"{label}\n{_window_around(text, passage.best_chunk.text, max_chars)}"
        cost = count_tokens(block)
        if cost > remaining:
            break
        blocks.append(block)
        used.append(passage)
        remaining -= cost
    return "\n---\n".join(blocks), used


def cited_numbers(answer: str) -> list[int]:
    """Source numbers in order of first citation."""
    numbers: list[int] = []
    for match in _CITATION.finditer(answer):
        for number in re.findall(r"\d+", match.group(1)):
            if int(number) not in numbers:
                numbers.append(int(number))
    return numbers


def add_missing_citations(answer: str, passages: Sequence[Passage]) -> str:
    """Drops citations of sources that do not exist (a small model invents numbers), then gives each uncited
    sentence that one source supports a ``[Source N]`` for that source."""
    valid = set(range(1, len(passages) + 1))

    def keep_if_valid(match: re.Match) -> str:
        return match.group(0) if {int(n) for n in re.findall(r"\d+", match.group(1))} <= valid else ""

    answer = _CITATION.sub(keep_if_valid, answer)
    texts = [p.parent.text for p in passages]
    sentences = []
    for sentence in split_sentences(answer):
        if not _CITATION.search(sentence):
            support = sentence_support(sentence, texts)
            if support and all(s.supported for s in support) and support[0].best_source_index is not None:
                citation = f" [Source {support[0].best_source_index + 1}]"
                body, end = (sentence[:-1], sentence[-1]) if sentence[-1] in ".!?" else (sentence, "")
                sentence = f"{body.rstrip()}{citation}{end}"
        sentences.append(sentence)
    return " ".join(sentences) if sentences else answer


def cited_sources(answer: str, passages: Sequence[Passage]) -> list[dict]:
    """One entry per cited document, in order of first citation, with every cited passage of it."""
    return _sources(cited_numbers(answer), passages)


def passage_sources(passages: Sequence[Passage]) -> list[dict]:
    """Every passage as a source, numbered as the prompt and the evidence number them."""
    return _sources(range(1, len(passages) + 1), passages)


def _sources(numbers: Iterable[int], passages: Sequence[Passage]) -> list[dict]:
    by_document: dict[str, dict] = {}
    for number in numbers:
        if not 1 <= number <= len(passages):
            continue
        passage = passages[number - 1]
        parent = passage.parent
        entry = by_document.setdefault(parent.document_id, {
            "document_id": parent.document_id,
            "filename": parent.filename,
            "page": parent.page,
            "page_label": parent.cited_page,
            "pages": [],
            "page_labels": [],
            "chunk_id": passage.best_chunk.chunk_id,
            "relevance_score": round(passage.score, 4),
            "content_preview": " ".join(passage.best_chunk.text.split())[:PREVIEW_CHARS],
            "source_numbers": [],
            "passages": [],
            "ocr": False,
        })
        if parent.page not in entry["pages"]:
            entry["pages"].append(parent.page)
            entry["page_labels"].append(parent.cited_page)
        entry["source_numbers"].append(number)
        entry["relevance_score"] = max(entry["relevance_score"], round(passage.score, 4))
        entry["ocr"] = entry["ocr"] or parent.ocr
        entry["passages"].append({
            "source_number": number,
            "parent_id": parent.parent_id,
            "page": parent.page,
            "page_label": parent.cited_page,
            "excerpt": " ".join(passage.best_chunk.text.split()),
            "ocr": parent.ocr,
        })
    return list(by_document.values())


def with_page_labels(sources: list[dict]) -> list[dict]:
    """Sources stored before pages had labels, as a source of today: every page read "Page N"."""
    return [
        {
            **source,
            "page_label": cited_page(source["page"], source.get("page_label", "")),
            "page_labels": source.get("page_labels") or [cited_page(page) for page in source.get("pages", [])],
            "passages": [
                {**passage, "page_label": cited_page(passage["page"], passage.get("page_label", ""))}
                for passage in source.get("passages", [])
            ],
        }
        for source in sources
    ]
