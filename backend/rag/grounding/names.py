"""Names as the sources write them: a name an answer gives must stand in its source sentence as one name.

"Rainbow Estate" is not supported by "Rainbow Terrace, now known as Lullwater Estate", nor "Lake Erie State
Park" by "Presque Isle State Park … into Lake Erie", though each word is there. A name's words must stand in
the supporting sentence in the same order, next to each other (one other word may stand between two of them,
a middle name: "Robert E. Howard" → "Robert Ervin Howard").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import Stemmer

from backend.rag.text_terms import Term, analyse

# A name: capitalised words, joined by lower-case particles ("First for Women", "Kings of Leon").
NAME_WORD = r"[A-Z][\w'’.&-]*"
NAME = rf"{NAME_WORD}(?:\s+(?:(?:of|the|for|de|da|del|du|la|le|van|von)\s+)*{NAME_WORD})*"
_NAME = re.compile(rf"\b{NAME}")
_BEFORE_TITLE = re.compile(r":\s+|\s(?:is|was|are|were)\s+")
_TITLE = re.compile(rf"[\"“]?{NAME_WORD}(?:\s+(?:(?:of|the|for|and|a|an|in|on|to|at)\s+)*{NAME_WORD})*[\"”]?")
# Words that may stand between two of a name's words in the source.
_GAP = 1
# Titles an answer may put before a name the source writes without them ("President Barack Obama").
_TITLES = frozenset(Stemmer.Stemmer("english").stemWords(
    ["president", "king", "queen", "prince", "princess", "sir", "dame", "saint", "st", "dr", "doctor",
     "general", "captain", "pope", "emperor", "professor", "mr", "mrs", "ms"]
))


def name_runs(text: str, stemmer: Stemmer.Stemmer) -> tuple[tuple[str, ...], ...]:
    """The names of ``text`` with two or more content words, each as its stems in order."""
    runs = (tuple(t.stem for t in analyse(m.group(), stemmer).content) for m in _NAME.finditer(text))
    return tuple(run for run in runs if len(run) > 1)


def title_run(text: str, stemmer: Stemmer.Stemmer) -> tuple[str, ...]:
    """The stems of the title ``text`` is or ends with after a colon or "is" ("The Singer and the Producer",
    "The sitcom is The Singer and the Producer"), else ()."""
    text = text.strip().rstrip(".")
    for title in (text, *(text[m.end():] for m in _BEFORE_TITLE.finditer(text))):
        if _TITLE.fullmatch(title):
            return tuple(t.stem for t in analyse(title, stemmer).content)
    return ()


def answer_name(run: tuple[str, ...], questions: Sequence[Sequence[Term]]) -> tuple[str, ...]:
    """``run`` without a leading title and without a name of the question at its ends when the rest is new:
    in "… created by Trey Parker and Matt Stone South Park" (a restated question without its colon) the
    answer's name is "South Park". A name the question writes whole is no name of the answer's (empty);
    two of its names run together ("Lake Erie State Park") are checked as one."""
    while run and run[0] in _TITLES:
        run = run[1:]
    if any(stands_together(run, terms, gap=0) for terms in questions):
        return ()
    asked = {t.stem for terms in questions for t in terms}
    # A single word of the question is cut only in front ("… in Tennessee Memphis International Airport"):
    # after a name it may be the name's own ("Lord Black of London").
    ends = [(run[:cut], run[cut:]) for cut in range(1, len(run))]
    ends += [(run[-cut:], run[:-cut]) for cut in range(2, len(run))]
    for name, rest in sorted(ends, key=lambda end: -len(end[0])):
        if not set(rest) <= asked and any(stands_together(name, terms, gap=0) for terms in questions):
            return answer_name(rest, questions)
    return run


def stands_together(run: Sequence[str], terms: Sequence[Term], gap: int = _GAP) -> bool:
    """Whether the stems of ``run`` stand in ``terms``' content words in order, at most ``gap`` apart."""
    if not run:
        return True
    stems = [t.stem for t in terms if t.content]
    for start, stem in enumerate(stems):
        if stem != run[0]:
            continue
        at = start
        for wanted in run[1:]:
            window = stems[at + 1 : at + 2 + gap]
            if wanted not in window:
                break
            at += 1 + window.index(wanted)
        else:
            return True
    return False
