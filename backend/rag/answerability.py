"""Answerability: do the passages that passed grading answer the question, or are they only about its topic?

Two tests, both read from the evidence and neither from a language model:

1. **The relevance threshold, per query.** A fixed cosine lets almost everything through (issue 11: 4.98 of 5
   passages passed over 40 questions), because every passage of an on-topic document is close to a question
   about that topic. What separates the passages that may answer is how close they are *compared with this
   query's best*: a passage is kept when its relevance is within ``relevance_margin`` of the best one.
2. **An answer-bearing sentence.** Some sentence of the kept passages must carry the question's key terms
   (weighted by how rare each is among the passages' sentences, so the topic words every passage shares count
   little and a word no passage holds counts most) and, for a typed question, hold a candidate of the type
   asked for that the question does not already contain (a name for "who", a date for "when", a number for
   "how many"). A key term the sentence itself carries counts fully; one only the sentence before it carries
   (which often names what the sentence's "it" or "this" refers to) counts ``context_weight``, and one only
   its document's title carries counts ``title_weight``: an answer often does not repeat the subject of its
   study ("Of 10,808 adult patients (49% male), 274 (2.5%) were admitted for HF" under the title "Heart
   failure admissions in adults with congenital heart disease"), while context must not stand in for the
   sentence's own words. An abbreviation the passages define carries the words of its long form.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from backend.embeddings import Embedder
from backend.ingest.chunker import parent_id
from backend.models import Passage
from backend.rag.answer_type import (
    AnswerType,
    abbreviations,
    carries,
    expected_answer_type,
    holds_answer,
    key_terms,
    question_parts,
    text_terms,
    with_closed_compounds,
)
from backend.rag.passage_sentences import passage_sentences

# The question's cosine similarity with each of the given sentences (the bundled embedder's, in [-1, 1]).
Similarity = Callable[[Sequence[str]], Sequence[float]]


@dataclass(frozen=True)
class AnswerabilityPolicy:
    """Chosen on the dev and test2 splits of bench/data/answerability.jsonl together (docs/benchmarks.md)."""

    min_coverage: float = 0.7  # share of the key terms' weight an answer-bearing sentence carries
    min_similarity: float = 0.65  # or half that share, and this close in meaning to the question
    relevance_margin: float = 0.2  # a passage is on topic within this much of the query's best relevance
    context_weight: float = 0.75  # a key term only the sentence before carries counts this much
    title_weight: float = 0.5  # a key term only the document's title carries counts this much


@dataclass(frozen=True)
class Verdict:
    answerable: bool
    answer_type: AnswerType
    coverage: float  # the chosen sentence's share of the key terms' weight (1.0 when the question has none)
    similarity: float | None  # the chosen sentence's similarity to the question, when it was needed
    sentence: str | None  # the answer-bearing sentence, or the closest candidate when none answers


def similarity_to(question: str, embedder: Embedder) -> Similarity:
    """The question's similarity to sentences, by the bundled embedder (sentences come from its cache when the
    evidence quoted them already)."""

    def similarity(sentences: Sequence[str]) -> list[float]:
        if not sentences:
            return []
        return (embedder.embed_documents(list(sentences)) @ embedder.embed_query(question)).tolist()

    return similarity


def closest_passages(passages: Sequence[Passage], margin: float) -> list[Passage]:
    """The graded passages within ``margin`` of this query's best relevance: the threshold, calibrated per query."""
    if not passages:
        return []
    best = max(p.score for p in passages)
    return [p for p in passages if p.score >= best - margin]


def judge(
    question: str, passages: Sequence[Passage], policy: AnswerabilityPolicy, similarity: Similarity
) -> Verdict:
    """Whether some sentence of the passages answers the question, or one part of a compound question (the
    written answer then says what the documents do answer)."""
    verdicts = [_judge_part(part, passages, policy, similarity) for part in question_parts(question) or [question]]
    return next((v for v in verdicts if v.answerable), verdicts[0])


def _judge_part(
    question: str, passages: Sequence[Passage], policy: AnswerabilityPolicy, similarity: Similarity
) -> Verdict:
    """A sentence that holds the type asked for answers when it carries ``min_coverage`` of the key terms, or half
    of that and is ``min_similarity`` close in meaning: the question's words paraphrased ("corpora" for
    "BooksCorpus and Wikipedia") are found by meaning, while the meaning alone never answers (every on-topic
    sentence is close)."""
    kind = expected_answer_type(question)
    typed = _typed_sentence_coverage(question, kind, passages, policy)
    candidates = sorted(((coverage, sentence) for sentence, coverage in typed), key=lambda pair: -pair[0])
    if not candidates:
        return Verdict(False, kind, 0.0, None, None)
    coverage, sentence = candidates[0]
    if coverage >= policy.min_coverage:
        return Verdict(True, kind, coverage, None, sentence)
    near = [pair for pair in candidates if pair[0] >= policy.min_coverage / 2]
    if not near:
        return Verdict(False, kind, coverage, None, sentence)
    similarities = similarity([_without_asides(s) for _, s in near])
    best = max(range(len(near)), key=lambda i: similarities[i])
    closeness = float(similarities[best])
    return Verdict(closeness >= policy.min_similarity, kind, near[best][0], closeness, near[best][1])


_OPENING, _CLOSING = "([", ")]"
_MIN_ASIDE_CHARS = 25


def _without_asides(sentence: str) -> str:
    """The sentence without its asides in brackets of more than a few words ("(mean age, 57.1 years [SD, 10.6];
    men, 395 (62.7%); …)"): what the sentence says without them is what is compared in meaning with the question,
    while a short one ("(92%)") stays."""
    kept: list[str] = []
    opened: list[int] = []  # where each open bracket's text starts in ``kept``
    for char in sentence:
        if char in _OPENING:
            opened.append(len(kept))
        elif char in _CLOSING and opened:
            start = opened.pop()
            if len(kept) - start >= _MIN_ASIDE_CHARS:
                del kept[start:]
                continue
        kept.append(char)
    return re.sub(r"\s+(?=[,;.:])", "", " ".join("".join(kept).split()))


class _Words(NamedTuple):
    """A text as key terms are matched against it (``carries``)."""

    terms: frozenset[str]
    folded: str


def _typed_sentence_coverage(
    question: str, kind: AnswerType, passages: Sequence[Passage], policy: AnswerabilityPolicy
) -> list[tuple[str, float]]:
    """Each sentence holding a candidate of the type asked for, with its key-term coverage (the sentence's own
    terms in full, the sentence before's and its document's title's at their lower weights)."""
    each_passages_sentences = [passage_sentences(p.parent.text) for p in passages]
    located = [(p.parent.document_id, s) for p, its in zip(passages, each_passages_sentences) for s in its]
    headings = _headings(each_passages_sentences)
    defined = abbreviations(" ".join(p.parent.text for p in passages))

    def words(text: str) -> _Words:
        folded = _with_long_forms(with_closed_compounds(_fold(text)), defined)
        return _Words(text_terms(folded), folded)

    sentences = [words(sentence) for _, sentence in located]
    titles = {document: words(title) for document, title in document_titles(passages).items()}
    key = key_terms(question)
    weights = _term_weights(key, sentences)
    # A number the question gives ("in 2013", "the 140 mg dose") restricts what it asks: a sentence that
    # answers carries it, or its context does ("almost 5000 data breaches have occurred since 2005" is no
    # answer to "How many data breaches happened in 2013?").
    numbers = [term for term in key if term.isdigit()]
    typed = []
    for index, (document, sentence) in enumerate(located):
        if holds_answer(sentence, kind, question):
            sources = [(sentences[index], 1.0), (sentences[max(index - 1, 0)], policy.context_weight)]
            if document in titles:
                sources.append((titles[document], policy.title_weight))
            if headings[index] is not None:
                sources.append((sentences[headings[index]], policy.title_weight))
            if all(any(carries(number, *words) for words, _ in sources) for number in numbers):
                typed.append((sentence, _coverage(weights, sources)))
    return typed


def _headings(passages_sentences: Sequence[Sequence[str]]) -> list[int | None]:
    """For each sentence (numbered across the passages), the last heading before it in its passage: a
    section's heading names what its sentences are about ("Restoring RRR Tax Modules to Master File" above
    "Weekly cut-off time for BMFOLB requests is 5:00 pm Wednesday ET."), and counts like a title."""
    found: list[int | None] = []
    for sentences in passages_sentences:
        heading = None
        for sentence in sentences:
            found.append(heading)
            if _HEADING.fullmatch(sentence) and not re.search(r"\d", _NUMBERING.sub("", sentence)):
                heading = len(found) - 1
    return found


# A heading: a few words, most capitalised, no sentence punctuation at its end, no number but its numbering.
# Possessive: numbering such as "2.3.59.5 (01-16-2020)" is all non-letters, read once (a long run of them
# would otherwise be tried from each of its positions).
_NUMBERING = re.compile(r"^[\W\d]*+")
_HEADING = re.compile(r"[\W\d]*+"
                      r"(?:[A-Z][\w'’&/-]*\s+(?:(?:of|to|and|the|for|in|on|a|an)\s+)?){1,10}[A-Z][\w'’&/)-]*")


def document_titles(passages: Sequence[Passage]) -> dict[str, str]:
    """Each document's title as far as the passages show it: the first line of a document's first parent (a title
    alone on its page's first lines may be a parent of its own), when short enough to be a title. A title found at
    ingestion and carried by the passages would plug in here, for every passage of a document."""
    titles = {}
    for passage in passages:
        parent = passage.parent
        first_line = parent.text.strip().partition("\n")[0].strip()
        if parent.parent_id == parent_id(parent.document_id, 0) and 0 < len(first_line) <= _MAX_TITLE_CHARS:
            titles[parent.document_id] = first_line
    return titles


_MAX_TITLE_CHARS = 200


def _term_weights(key: frozenset[str], sentences: Sequence[_Words]) -> dict[str, float]:
    """Inverse sentence frequency among the passages: a term in every sentence weighs little, one in none most."""
    count = len(sentences)
    return {
        term: math.log((count + 1) / (sum(carries(term, *words) for words in sentences) + 0.5))
        for term in key
    }


def _fold(sentence: str) -> str:
    """Casefolded, on one line, with words hyphenated across a line break joined again ("pre-\ntraining")."""
    return " ".join(sentence.replace("-\n", "").split()).casefold()


def _with_long_forms(folded_sentence: str, defined: dict[str, str]) -> str:
    """The sentence followed by the long form of each abbreviation it uses, so "mTEC" carries "medullary"."""
    used = [long for short, long in defined.items() if re.search(rf"(?<!\w){re.escape(short)}(?!\w)", folded_sentence)]
    return " ".join([folded_sentence, *used])


def _coverage(weights: dict[str, float], sources: Sequence[tuple[_Words, float]]) -> float:
    """The share of the key terms' weight carried, each at the highest weight of a text carrying it."""
    total = sum(weights.values())
    if total <= 0:
        return 1.0  # no key terms: the type test alone decides
    carried = (max((factor for words, factor in sources if carries(term, *words)), default=0.0) * weight
               for term, weight in weights.items())
    return sum(carried) / total
