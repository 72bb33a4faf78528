"""Where an answer's new part is supported: a single source sentence (with the one before it when it opens
with a pronoun) holding the new part whole and the question's terms the answer relates it to."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import Stemmer

from backend.rag.grounding.claims import Claim, Question
from backend.rag.grounding.names import NAME, stands_together
from backend.rag.grounding.sentences import answer_claims, source_sentences
from backend.rag.text_terms import AnalysedText, Term, analyse, english_stemmer

# Parameters chosen on records 1-250 of HaluEval QA in its three answer forms (backend/eval/groundedness.py).
# Share of a sentence's new content words that its answer-bearing place must hold.
SUPPORT_AT = 1.0
# Share of the question's terms a sentence repeats that must stand in that place too (at least one).
ANCHOR_AT = 1.0
# A sentence holding at least this share of its question's terms copies the question ("<question>: B").
COPIES_AT = 0.8
# A quoted title of a work, "Band of Brothers": its words name the work, they say nothing of their own.
_QUOTED = re.compile(r"[\"“][^\"“”]{1,80}[\"”]")
_LIST = re.compile(rf"{NAME}(?:\s*,\s*(?:and\s+)?{NAME}){{2,}}")
_PRONOUN_START = re.compile(r"^\W*(?:it|its|he|his|she|her|they|their|this|these|that|those)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class SentenceSupport:
    sentence: str
    supported: bool
    score: float  # share of the sentence's checked content words found in its best source (or place)
    best_source_index: int | None  # None when there are no sources
    missing: tuple[str, ...] = ()  # checked words, as written in the sentence, that the best source lacks
    hard: bool = False  # unsupported for a missing number, name, negation or key term, not for coverage alone



def _support(sentence: str, words: Sequence[Term], sources: Sequence[AnalysedText], support_at: float
             ) -> SentenceSupport:
    best: SentenceSupport | None = None
    for index, source in enumerate(sources):
        missing = [term for term in words if term.stem not in source.stems]
        score = 1 - len(missing) / len(words)
        supported = score >= support_at and not any(term.number or term.name for term in missing)
        candidate = SentenceSupport(sentence, supported, score, index, tuple(term.surface for term in missing))
        if best is None or (candidate.supported, candidate.score) > (best.supported, best.score):
            best = candidate
    return best or SentenceSupport(sentence, False, 0.0, None, tuple(term.surface for term in words))


def sentence_support(
    answer: str, sources: Sequence[str], support_at: float = SUPPORT_AT
) -> list[SentenceSupport]:
    """Each factual sentence of ``answer`` against each source on its own: supported when one source holds at
    least ``support_at`` of its content words and every one of its numbers and proper names. Used to find the
    source an uncited sentence comes from."""
    stemmer = english_stemmer()
    analysed = [analyse(source, stemmer) for source in sources]
    return [
        _support(sentence, claim.content, analysed, support_at)
        for sentence, claim in answer_claims(answer, stemmer) if claim.content
    ]


@dataclass(frozen=True, slots=True)
class Place:
    """A source sentence, with the sentence before it when it opens with a pronoun ("It was designed by …")
    and that sentence lists no three names: where an answer's new part must be found whole."""

    source_index: int
    stems: frozenset[str]
    negated: bool
    text: str
    terms: tuple[Term, ...]  # in order: where a name's words stand and what stands next to the answer
    outside_titles: frozenset[str]  # the stems outside quoted titles: "brother" is not in "Band of Brothers"


def source_places(sources: Sequence[str], stemmer: Stemmer.Stemmer) -> list[Place]:
    places = []
    for index, source in enumerate(sources):
        sentences = source_sentences(source)
        analysed = [analyse(sentence, stemmer) for sentence in sentences]
        for at, sentence in enumerate(analysed):
            # "It was founded in 1874" after "… are A, B, C and D": the pronoun picks none of them out.
            follows = at and _PRONOUN_START.match(sentences[at]) and not _LIST.search(sentences[at - 1])
            around = [analysed[at - 1], sentence] if follows else [sentence]
            text = " ".join(sentences[at - len(around) + 1 : at + 1])
            stems = frozenset().union(*(s.stems for s in around))
            places.append(Place(
                index, stems, any(s.negated for s in around),
                text, tuple(t for s in around for t in s.terms),
                analyse(_QUOTED.sub(" ", text), stemmer).stems if _QUOTED.search(text) else stems,
            ))
    return places


def claim_support(part: Claim, places: Sequence[Place], anchor: frozenset[str], needed: int,
                   support_at: float) -> SentenceSupport:
    """``part``'s checked terms in their best place: one that holds ``needed`` of the ``anchor`` terms (the
    question's terms the sentence relates its new part to), the negation if the part adds one, every checked
    number and name, and ``support_at`` of its checked words."""
    best: SentenceSupport | None = None
    checked_stems = {term.stem for term in part.checked}
    for place in places:
        missing = [
            term for term in part.checked
            if term.stem not in (place.outside_titles if term.surface[:1].islower() else place.stems)
        ]
        score = 1 - len(missing) / len(part.checked) if part.checked else 1.0
        hard = (
            any(term.number or term.name for term in missing)
            or (part.new_negation and not place.negated)
            or len(anchor & place.stems) < needed
            or not all(
                stands_together(run, place.terms)
                for run in part.names if checked_stems & set(run) <= place.stems
            )
        )
        candidate = SentenceSupport(
            part.sentence, score >= support_at and not hard, score, place.source_index,
            tuple(term.surface for term in missing), hard,
        )
        if best is None or _rank(candidate) > _rank(best):
            best = candidate
    return best or SentenceSupport(
        part.sentence, False, 0.0, None, tuple(term.surface for term in part.checked), hard=True
    )


def anchor_terms(part: Claim, question: Question, source_stems: frozenset[str], anchor_at: float
            ) -> tuple[frozenset[str], int]:
    """The question's terms that must stand next to ``part``, and how many of them. A sentence that repeats
    a few of them ("X is owned by Time Inc") asserts its new part of those: ``anchor_at`` of them must be
    there. A bare answer ("Delhi") or one that copies most of its question ("… has a head office in the city
    Delhi") picks no relation out: one of the question's terms will do, as a multi-part question's terms
    stand in several sentences. Only terms the sources hold at all count."""
    checked = {term.stem for term in part.checked}
    repeated = (part.given - checked) & source_stems
    if repeated and len(part.given) < COPIES_AT * len(question.counts):
        return repeated, max(1, math.ceil(anchor_at * len(repeated)))
    anchor = (frozenset(question.counts) - checked) & source_stems
    return anchor, min(1, len(anchor))


def _rank(support: SentenceSupport) -> tuple[bool, bool, float]:
    return support.supported, not support.hard, support.score


def describe(support: SentenceSupport) -> str:
    missing = f" (missing: {', '.join(support.missing)})" if support.missing else ""
    return f"not supported where the sources answer the question: {support.sentence!r}{missing}"

