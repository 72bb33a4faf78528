"""Another name listed beside the answer that fits the question better.

A source sentence often lists several names in one role: "founded by … Kamal Shalorus and … Matthew Granahan",
"covered by bands such as Racer X, Fu Manchu, The Smashing Pumpkins". Every one of them stands where the
question's terms are, so the sentence supports any of them as the answer to "Which … founded X?" The rest of
the question tells them apart ("Which *Lightweight division* mixed martial artist …", "What *southern
California based* band …"): those terms stand in another sentence naming only one of them. An answer is not
grounded when a name listed with it (joined by a comma, "and" or "or", no verb between) stands, over all the
sentences naming it, with more of the question's terms than the answer does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import Stemmer

from backend.rag.grounding.names import NAME
from backend.rag.grounding.support import Place
from backend.rag.text_terms import Term, analyse

_NAME = re.compile(rf"\b{NAME}")
# Between two names of one list: a comma, "and" or "or", at most this many words, and no verb of being.
_AND_OR = re.compile(r"\b(?:and|or)\b", re.IGNORECASE)
_COMMA_ONLY = re.compile(r"[\"”’']?\s*,\s*[\"“‘']?")
_NEXT_ITEM = re.compile(r"[\"”’']?\s*(?:,|\band\b|\bor\b)\s*[\"“‘']?[A-Z]")
_PREVIOUS_ITEM = re.compile(r"[a-z][\"”’']?\s*,\s*[\"“‘']?$")
_VERB = re.compile(r"\b(?:is|are|was|were|has|have|had|be|been)\b", re.IGNORECASE)
_LIST_GAP_WORDS = 15
# How many more of the question's terms a listed name must stand with to make the answer doubtful.
RIVAL_MARGIN = 2


def _names(place: Place, stemmer: Stemmer.Stemmer) -> Iterable[tuple[frozenset[str], int, int]]:
    for match in _NAME.finditer(place.text):
        stems = frozenset(t.stem for t in analyse(match.group(), stemmer).content)
        if stems:
            yield stems, match.start(), match.end()


def _listed_together(text: str, first: tuple[int, int], second: tuple[int, int]) -> bool:
    """Whether two names stand in one list: "A and B", "A or B", "A, B, C"; not "Deadwood, South Dakota"."""
    (_, end), (start, _) = sorted([first, second])
    between = text[end:start]
    if _AND_OR.search(between):
        return not _VERB.search(between) and len(between.split()) <= _LIST_GAP_WORDS
    # "A, B" alone may be a place and its region: a list has a third item after it, or before it.
    after, before = text[max(first[1], second[1]):], text[:min(first[0], second[0])]
    listed = _NEXT_ITEM.match(after) or _PREVIOUS_ITEM.search(before)
    return bool(_COMMA_ONLY.fullmatch(between)) and bool(listed)


def _coverage(name: frozenset[str], places: Sequence[Place], asked: frozenset[str]) -> int:
    """How many of the ``asked`` terms stand in the places naming ``name``."""
    covered: set[str] = set()
    for place in places:
        if name <= place.stems:
            covered |= place.stems & asked
    return len(covered)


def better_listed_name(checked: Sequence[Term], question_stems: frozenset[str], places: Sequence[Place],
                       stemmer: Stemmer.Stemmer) -> str | None:
    """A name listed beside the answer's name (the capitalised terms of ``checked``) that stands with more
    of the question's terms than the answer, or None."""
    answer = frozenset(t.stem for t in checked if t.surface[:1].isupper() and t.stem not in question_stems)
    if not answer:
        return None
    best: tuple[int, str] | None = None
    for place in places:
        if not answer <= place.stems:
            continue
        names = list(_names(place, stemmer))
        spans = [(start, end) for stems, start, end in names if answer & stems]
        if not spans:  # the answer's words stand here, but not capitalised as a name
            continue
        for stems, start, end in names:
            if stems & answer or stems <= question_stems:
                continue
            nearest = min(spans, key=lambda span: min(abs(span[0] - end), abs(start - span[1])))
            if not _listed_together(place.text, nearest, (start, end)):
                continue
            asked = question_stems - answer - stems
            margin = _coverage(stems, places, asked) - _coverage(answer, places, asked)
            if margin >= RIVAL_MARGIN and (best is None or margin > best[0]):
                best = (margin, place.text[start:end])
    return best[1] if best else None
