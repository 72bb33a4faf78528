"""The evidence: the sentences of the retrieved passages closest to the question, quoted with their citations.

It is shown as soon as retrieval is done, before the model's turn comes, and it is the answer itself when the
written answer fails the groundedness check or the model is too busy to write one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from backend.embeddings import Embedder
from backend.models import Passage
from backend.rag.grounding import split_sentences

_EVIDENCE_SENTENCES = 3
_MIN_SENTENCE_CHARS, _MAX_SENTENCE_CHARS = 30, 400
_SENTENCE_CLOSE = re.compile(r"[.!?…:;][\"'”’)\]]*$")


def quote_evidence(
    question: str, passages: Sequence[Passage], embedder: Embedder, answering: str | None = None
) -> str:
    """Up to three quoted sentences, one per line ("- “…” [Source N]"), in document order; the best passage's
    matched text when no whole sentence of a usable length is found. ``answering``, the sentence the answerability
    decision found to answer, is always among them: the closest in meaning need not hold the answer."""
    candidates = [
        (index, position, sentence)
        for index, passage in enumerate(passages)
        for position, sentence in enumerate(_whole_sentences(passage.parent.text))
        if _MIN_SENTENCE_CHARS <= len(sentence) <= _MAX_SENTENCE_CHARS
    ]
    if not candidates:
        return "\n".join(f"- “{' '.join(p.best_chunk.text.split())}” [Source {n}]" for n, p in enumerate(passages[:1], 1))
    query = embedder.embed_query(question)
    scores = embedder.embed_documents([c[2] for c in candidates]) @ query
    ranked = sorted(range(len(candidates)), key=lambda i: (candidates[i][2] != answering, -scores[i]))
    best = sorted(_distinct(ranked, [c[2] for c in candidates]), key=lambda i: candidates[i][:2])
    return "\n".join(f"- “{' '.join(candidates[i][2].split())}” [Source {candidates[i][0] + 1}]" for i in best)


def _whole_sentences(text: str) -> list[str]:
    """A passage's sentences without the last one when the passage was cut in the middle of it."""
    sentences = split_sentences(text)
    if sentences and not _SENTENCE_CLOSE.search(sentences[-1]):
        sentences.pop()
    return sentences


def _distinct(ranked: list[int], sentences: list[str]) -> list[int]:
    """The best-ranked sentences, skipping any that repeats one already taken: overlapping passages hold the same
    sentence twice, once cut off at a passage's end."""
    taken: list[int] = []
    for index in ranked:
        words = sentences[index].split()
        if not any(_repeats(words, sentences[other].split()) for other in taken):
            taken.append(index)
        if len(taken) == _EVIDENCE_SENTENCES:
            break
    return taken


def _repeats(words: list[str], other: list[str]) -> bool:
    shorter, longer = sorted((words, other), key=len)
    return " ".join(shorter) in " ".join(longer) or len(set(words) & set(other)) >= 0.8 * len(set(shorter))
