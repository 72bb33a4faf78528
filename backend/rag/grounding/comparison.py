"""Which of two options came first: decided from the years the sources give for each.

A choice question about time ("Which magazine was started first, A or B?", "Who is younger, A or B?") is
answered with one option's name, which every source about either option holds: no word-level check can tell
the right pick from the wrong one. The sources can: the first year after each option's name in the first
sentence naming it ("Arthur's Magazine (1844–1846) …", "Mary Ramsey (born 24 December 1963) …"). When both
options have a year and the years differ, the earlier one is the answer to "first / older / earlier / born
first", the later one to "younger / later / more recent / newer". Otherwise this rule decides nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from backend.rag.grounding.names import NAME
from backend.rag.grounding.support import Place
from backend.rag.text_terms import Term, analyse, english_stemmer

_OPTIONS = re.compile(rf"\b(?P<a>{NAME})\s*,?\s+or\s+(?P<b>{NAME})")
_EARLIER = re.compile(r"\b(?:first|earlier|earliest|older|oldest|elder|sooner|before)\b", re.IGNORECASE)
_LATER = re.compile(r"\b(?:younger|youngest|later|latest|newer|newest|more recent|most recent|last)\b",
                    re.IGNORECASE)
_YEAR = re.compile(r"(?<![\d,.])(?:1[0-9]{3}|20[0-9]{2})(?![\d,]|\s*BC)")


def _earlier_wins(question: str) -> bool | None:
    earlier, later = bool(_EARLIER.search(question)), bool(_LATER.search(question))
    return None if earlier == later else earlier


def _stems(text: str) -> frozenset[str]:
    return frozenset(t.stem for t in analyse(text, english_stemmer()).content)


def _year_of(option: frozenset[str], places: Sequence[Place]) -> int | None:
    """The first year after the option's name in the first place naming it."""
    for place in places:
        if option <= place.stems:
            last_word = max(i for i, term in enumerate(place.terms) if term.stem in option)
            after = " ".join(term.surface for term in place.terms[last_word + 1:])
            year = _YEAR.search(after) or _YEAR.search(place.text)
            return int(year.group()) if year else None
    return None


def picks_the_right_option(question: str, picked: Sequence[Term], places: Sequence[Place]) -> bool | None:
    """Whether an answer naming ``picked`` (its checked terms) picks the option the sources' years make first
    (or last) for a choice ``question`` about time; None when the rule cannot decide."""
    options = _OPTIONS.search(question)
    if not options:
        return None
    earlier_wins = _earlier_wins(question[:options.start()] + question[options.end():])
    if earlier_wins is None:
        return None
    a, b = _stems(options["a"]), _stems(options["b"])
    own_a, own_b = a - b, b - a
    picked_stems = {term.stem for term in picked}
    if not own_a or not own_b or bool(picked_stems & own_a) == bool(picked_stems & own_b):
        return None
    year_a, year_b = _year_of(a, places), _year_of(b, places)
    if year_a is None or year_b is None or year_a == year_b:
        return None
    a_wins = (year_a < year_b) == earlier_wins
    return a_wins == bool(picked_stems & own_a)
