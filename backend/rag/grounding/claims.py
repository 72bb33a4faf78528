"""What an answer claims beyond its question: each sentence's new part (the terms the question does not
hold or holds fewer times, a negation it does not make), a restatement of the question, and the overlap of
the new part with all sources together (the fast path)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import Stemmer

from backend.rag.grounding.names import answer_name, name_runs, stands_together, title_run
from backend.rag.grounding.sentences import FRAMING_STEMS, answer_claims
from backend.rag.question_terms import QuestionForm, key_term_counts, question_form
from backend.rag.text_terms import AnalysedText, Term, analyse, english_stemmer

WORD_WEIGHT = 0.6
TRIGRAM_WEIGHT = 0.4
# An answer to a "wh" question adding nothing is a restatement when it repeats more than this share of the
# question's terms, and a pick from them ("Australia" for "… active in all of which country?") otherwise.
RESTATES_ABOVE = 0.5


@dataclass(frozen=True, slots=True)
class Question:
    """What the question already says: its terms (stem → occurrences), its form, whether it negates."""

    counts: Counter[str]
    form: QuestionForm | None  # None: no question was given
    negated: bool
    analysed: tuple[AnalysedText, ...] = ()  # the question and its rewrite: the names they write


def read_question(question: str | None, rewritten: str | None, stemmer: Stemmer.Stemmer) -> Question:
    analysed = tuple(analyse(q, stemmer) for q in (question, rewritten) if q)
    return Question(
        key_term_counts(question, rewritten),
        question_form(question) if question else None,
        any(a.negated for a in analysed),
        analysed,
    )


@dataclass(frozen=True, slots=True)
class Claim:
    """One sentence of the answer and the part of it to check against the sources."""

    sentence: str
    checked: tuple[Term, ...]  # the new terms, or for a pick ("B" for "A or B?") all of the sentence's terms
    given: frozenset[str]  # the question's terms the sentence repeats: where it says its new part applies
    new_negation: bool  # the sentence negates and the question does not
    trigrams: frozenset[tuple[str, str, str]]
    names: tuple[tuple[str, ...], ...] = ()  # the sentence's names holding a checked term, as stems in order

    @property
    def says_something(self) -> bool:
        return bool(self.checked) or self.new_negation


def _new_part(sentence: str, claim: AnalysedText, question: Question) -> Claim:
    """The terms of ``claim`` that it holds more often than its question does: a term the question holds
    is given, unless the sentence names it again ("Who was born first, A or B: B")."""
    counts = Counter(term.stem for term in claim.terms if term.content)
    new = tuple(
        t for t in claim.content if counts[t.stem] > question.counts[t.stem] and t.stem not in FRAMING_STEMS
    )
    new_stems = {t.stem for t in new}
    return Claim(
        sentence,
        new,
        frozenset(t.stem for t in claim.content if t.stem in question.counts),
        claim.negated and not question.negated,
        # A trigram is new when it holds a new word; one made of the question's words is the question.
        frozenset(tri for tri in claim.trigrams if new_stems.intersection(tri)),
        _names_holding(sentence, new_stems, question),
    )


def _as_pick(sentence: str, claim: AnalysedText, question: Question) -> Claim:
    """A sentence that adds nothing to its question, checked whole: an answer that picks from the question's
    own words ("B", "B was born first") must still be found where the question's other terms are."""
    words = tuple(t for t in claim.content if t.stem not in FRAMING_STEMS)
    return Claim(
        sentence, words, frozenset(), claim.negated and not question.negated, claim.trigrams,
        _names_holding(sentence, {t.stem for t in words}, question),
    )


def _names_holding(sentence: str, stems: set[str], question: Question) -> tuple[tuple[str, ...], ...]:
    """The answer's own names in ``sentence`` that hold one of ``stems``, without the question's names."""
    asked = [a.terms for a in question.analysed]
    stemmer = english_stemmer()
    title = title_run(sentence, stemmer)
    whole = [] if any(stands_together(title, terms, gap=0) for terms in asked) else [title]
    runs = [*whole, *(answer_name(run, asked) for run in name_runs(sentence, stemmer))]
    return tuple(run for run in runs if len(run) > 1 and stems.intersection(run))


def _restates(claims: Sequence[tuple[str, AnalysedText]], question: Question) -> bool:
    """Whether the answer repeats most of its question's terms: a restatement, not a pick from it."""
    repeated = {t.stem for _, claim in claims for t in claim.content} & set(question.counts)
    return len(repeated) > RESTATES_ABOVE * len(question.counts)


def parts_to_check(claims: Sequence[tuple[str, AnalysedText]], question: Question) -> list[Claim] | None:
    """The parts of the answer that need support, or None when the answer only restates a "wh" question."""
    parts = [_new_part(sentence, claim, question) for sentence, claim in claims]
    if any(part.says_something for part in parts) or question.form in (None, "yes_no"):
        return [part for part in parts if part.says_something]
    if question.form == "wh" and _restates(claims, question):
        return None
    return [part for sentence, claim in claims if (part := _as_pick(sentence, claim, question)).says_something]


def new_part_overlap(parts: Sequence[Claim], sources: Sequence[AnalysedText]) -> float:
    """0.6 · share of the new words found anywhere in the sources + 0.4 · share of the new trigrams."""
    words = list({term.stem: term for part in parts for term in part.checked}.values())
    if not words:
        return 1.0  # nothing checkable is claimed
    source_stems = frozenset().union(*(s.stems for s in sources))
    source_trigrams = frozenset().union(*(s.trigrams for s in sources))
    word_overlap = sum(term.stem in source_stems for term in words) / len(words)
    trigrams = frozenset().union(*(part.trigrams for part in parts))
    # One or two content words make no trigram; the word overlap then stands for both.
    trigram_overlap = len(trigrams & source_trigrams) / len(trigrams) if trigrams else word_overlap
    return WORD_WEIGHT * word_overlap + TRIGRAM_WEIGHT * trigram_overlap


def fast_score(answer: str, sources: Sequence[str], question: str | None = None) -> float:
    """0.6 · word overlap + 0.4 · trigram overlap of what the answer adds to ``question`` against all
    ``sources`` together."""
    stemmer = english_stemmer()
    parts = parts_to_check(answer_claims(answer, stemmer), read_question(question, None, stemmer)) or []
    return new_part_overlap(parts, [analyse(source, stemmer) for source in sources])

