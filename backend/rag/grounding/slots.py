"""Answer-slot alignment: the answer should stand where the question's words point, not a rival beside it.

The answer-window scoring of early TREC QA systems: in the sentence that supports an answer, the candidates of
the answer's kind (names for a name, numbers and dates for a number) compete for the slot the question word
stands for, and the one whose nearby words are the question's words fills it. "Who edited Night Harbor?"
answered "Paul Brenner" from "Night Harbor, produced by Paul Brenner and edited by Clara Voss": both names
stand in the sentence with "Night Harbor", but "edited" stands next to Clara Voss. A candidate's context is
the words within ``window`` words either side of it (bracketed asides left out); its score, how many of the
question's terms (other than the answer's and its own) that context holds. The answer is not the
best-supported one when, in every place that names it beside the question's terms, a rival of its kind scores
``margin`` or more above it. An answer opening a sentence is what the sentence is about: all of it is its
context, and it holds its slot. A capitalised word qualifying the noun after it ("an American author") and
one that is capitalised only because it opens a sentence are no rivals. Words match by their stems, so an
irregular verb's forms ("wrote", "written") do not match each other.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import Stemmer

from backend.rag.grounding.sentences import source_sentences
from backend.rag.grounding.support import Place
from backend.rag.text_terms import Term, analyse, english_stemmer

# Chosen on records 1-250 of HaluEval QA (docs/benchmarks.md, "Answer-slot alignment").
WINDOW = 3
MARGIN = 1
# Lower-case words inside a name: "Kings of Leon", "Lake of the Woods".
_PARTICLES = frozenset(["of", "the", "de", "da", "del", "du", "la", "le", "van", "von", "for"])
# A bracket interrupts the sentence ("Jaime Meline (born March 2, 1975), better known as …"): not context.
_BRACKETED = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")
# A month is part of a date, not a name.
_MONTHS = frozenset(english_stemmer().stemWords(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"]
))


@dataclass(frozen=True, slots=True)
class _Candidate:
    start: int
    end: int  # exclusive
    stems: frozenset[str]
    surface: str


def _is_number(term: Term) -> bool:
    return term.number or term.stem.isdigit()


def _is_capitalised(term: Term) -> bool:
    return term.content and not _is_number(term) and term.surface[:1].isupper() and term.stem not in _MONTHS


def _is_month(term: Term) -> bool:
    return term.stem in _MONTHS and term.surface[:1].isupper()


def _is_date_part(term: Term) -> bool:
    return _is_number(term) or _is_month(term)


def _name_candidates(terms: Sequence[Term]) -> Iterator[_Candidate]:
    """Runs of capitalised words (lower-case particles between two of them allowed)."""
    at = 0
    while at < len(terms):
        if not _is_capitalised(terms[at]):
            at += 1
            continue
        end = at + 1
        while end < len(terms):
            if _is_capitalised(terms[end]):
                end += 1
                continue
            particles = end
            while particles < len(terms) and terms[particles].surface in _PARTICLES:
                particles += 1
            if particles > end and particles < len(terms) and _is_capitalised(terms[particles]):
                end = particles
                continue
            break
        run = terms[at:end]
        yield _Candidate(at, end, frozenset(t.stem for t in run if t.content),
                         " ".join(t.surface for t in run))
        at = end


def _number_candidates(terms: Sequence[Term]) -> Iterator[_Candidate]:
    """Numbers, each on its own ("66.1 75.8" in a table row are two), and a date with its month as one
    ("15 June 1972", "February 5, 1953")."""
    at = 0
    while at < len(terms):
        if not _is_date_part(terms[at]):
            at += 1
            continue
        end = at + 1
        while end < len(terms) and _is_date_part(terms[end]) and _is_month(terms[end - 1]) != _is_month(terms[end]):
            end += 1
        run = terms[at:end]
        if any(_is_number(t) for t in run):
            yield _Candidate(at, end, frozenset(t.stem for t in run), " ".join(t.surface for t in run))
        at = end


def _could_answer(candidate: _Candidate, terms: Sequence[Term]) -> bool:
    """False for one capitalised word opening a sentence ("Directed by …"), a name only by its position, and
    for one qualifying the noun after it ("an American author", "the NBC series"): not a noun phrase's head."""
    if candidate.end - candidate.start > 1 or _is_number(terms[candidate.start]):
        return True
    after = terms[candidate.end] if candidate.end < len(terms) else None
    qualifier = after is not None and after.content and after.surface[:1].islower()
    return terms[candidate.start].name and not qualifier


def _sentence_terms(text: str, stemmer: Stemmer.Stemmer) -> tuple[list[Term], set[int]]:
    """The terms of ``text`` without its bracketed asides, and where each sentence's first content word is."""
    terms: list[Term] = []
    subjects: set[int] = set()
    for sentence in source_sentences(_BRACKETED.sub(" ", text)):
        analysed = analyse(sentence, stemmer).terms
        first = next((at for at, term in enumerate(analysed) if term.content), None)
        if first is not None:
            subjects.add(len(terms) + first)
        terms.extend(analysed)
    return terms, subjects


def _score(candidate: _Candidate, terms: Sequence[Term], asked: frozenset[str], window: int) -> int:
    around = [*terms[max(0, candidate.start - window):candidate.start], *terms[candidate.end:candidate.end + window]]
    return len({t.stem for t in around if t.content} & (asked - candidate.stems))


def _answer_kind(checked: Sequence[Term], question_stems: frozenset[str]
                 ) -> tuple[frozenset[str], bool] | None:
    """(the answer's own stems, whether they are a name rather than a number), or None for neither."""
    names = frozenset(t.stem for t in checked if _is_capitalised(t) and t.stem not in question_stems)
    if names:
        return names, True
    numbers = frozenset(t.stem for t in checked if _is_number(t) and t.stem not in question_stems)
    return (numbers, False) if numbers else None


def better_slot_filler(checked: Sequence[Term], question_stems: frozenset[str], places: Sequence[Place],
                       window: int = WINDOW, margin: int = MARGIN) -> str | None:
    """A candidate of the answer's kind standing with ``margin`` more of the question's terms than the answer
    in every place naming the answer beside a question term, or None."""
    kind = _answer_kind(checked, question_stems)
    if kind is None:
        return None
    answer, is_name = kind
    asked = question_stems - answer
    stemmer = english_stemmer()
    rival_seen: str | None = None
    for place in places:
        if not answer <= place.stems or not asked & place.stems:
            continue
        terms, subjects = _sentence_terms(place.text, stemmer)
        candidates = list((_name_candidates if is_name else _number_candidates)(terms))
        own = [c for c in candidates if c.stems & answer]
        if not own:
            continue
        if any(c.start in subjects for c in own):
            return None  # a sentence about the answer: all of it is the answer's context
        rivals = [
            c for c in candidates
            if not c.stems & answer and not c.stems <= question_stems and _could_answer(c, terms)
        ]
        answer_score = max(_score(c, terms, asked, window) for c in own)
        scored = [(_score(c, terms, asked, window), c.surface) for c in rivals]
        best = max(scored, default=None)
        if best is None or best[0] < answer_score + margin:
            return None  # somewhere the answer holds its slot
        rival_seen = best[1]
    return rival_seen
