""""Both A and B are P": P must be said of each.

"Are both The New Pornographers and Kings of Leon American rock bands?" — "Yes" (or "Yes, both … are
American rock bands") repeats the question's words, which the sources hold: one sentence calls Kings of Leon
an American rock band, another calls The New Pornographers a Canadian one. The claim is two claims, one per
name, and each must stand in one sentence naming that name: the name's words and every word of P that the
sources hold. The names are read as the sources write them: of the ways to cut "A and B …" the one whose
both names a source holds word for word. "No" to whether both are P is wrong when a sentence says P of each.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import Stemmer

from backend.rag.grounding.sentences import split_sentences
from backend.rag.grounding.support import Place
from backend.rag.text_terms import analyse

_YES = re.compile(r"^\W*yes\b", re.IGNORECASE)
_AUXILIARY = r"(?:are|were|is|was|do|did|does|have|has|had)"
# "Are both A and B P?", "Yes, both A and B are P", "A and B are both P", "Are A and B both P?"
_LEAD = rf"^\W*(?:yes\W+|whether\s+)?(?:{_AUXILIARY}\s+)?"
_BOTH_FIRST = re.compile(rf"{_LEAD}both\s+(?P<rest>.+)$", re.IGNORECASE)
_BOTH_AFTER = re.compile(rf"{_LEAD}(?P<names>.+?)\s+(?:{_AUXILIARY}\s+)?both\b(?P<rest>.*)$", re.IGNORECASE)
_AND = re.compile(r"\s+and\s+", re.IGNORECASE)
# Where what is said of both ends: "A and B are both P, but only A is Q".
_CLAUSE_END = re.compile(r"\s*(?:[;:]|,?\s+\b(?:but|while|whereas|although)\b).*$", re.IGNORECASE)
# The answer says no: "No, …", "<question>: no".
_NO = re.compile(r"(?:^\W*|[:,]\s*)no\b", re.IGNORECASE)
_WORD_END = re.compile(r"\s+|$")
_BOTH = "both"


def _in_sources(name: str, sources: str) -> bool:
    return len(name) > 1 and re.search(rf"\b{re.escape(name.casefold())}\b", sources) is not None


def _split_names(text: str, sources: str) -> tuple[str, str, str] | None:
    """(A, B, the rest): the cut of ``text`` at an "and" whose sides the sources hold word for word, B the
    longest start of what follows that they hold."""
    for join in _AND.finditer(text):
        first, after = text[:join.start()].strip(" ,"), text[join.end():]
        if not _in_sources(first, sources):
            continue
        for end in reversed([m.start() for m in _WORD_END.finditer(after)]):
            second = after[:end].strip(" ,?.")
            if _in_sources(second, sources):
                return first, second, after[end:]
    return None


def _names_and_predicate(sentence: str, sources: str) -> tuple[str, str, str] | None:
    text = _CLAUSE_END.sub("", sentence.strip().rstrip("?.!"))
    if match := _BOTH_FIRST.match(text):
        return _split_names(match["rest"], sources)
    if match := _BOTH_AFTER.match(text):
        names = _split_names(match["names"], sources)
        return (names[0], names[1], f"{names[2]} {match['rest']}") if names else None
    return None


def _without(said: tuple[str, str, str], places: Sequence[Place], stemmer: Stemmer.Stemmer
             ) -> tuple[str | None, bool]:
    """(the name no place says P of or None, whether P has words to check)."""
    first, second, predicate = said
    stems = [frozenset(t.stem for t in analyse(text, stemmer).content) for text in (first, second, predicate)]
    # Words no source holds anywhere (a paraphrase's "located") are for the claim check, not for this rule.
    wanted = (stems[2] - {_BOTH} - stems[0] - stems[1]) & frozenset().union(*(p.stems for p in places))
    for name, name_stems in zip((first, second), stems[:2], strict=True):
        if wanted and not any(name_stems | wanted <= place.stems for place in places):
            return name, True
    return None, bool(wanted)


def mentions_both(answer: str, question: str | None) -> bool:
    """Whether the answer or its question says "both": this rule's only concern (a cheap test first)."""
    return _BOTH in f"{answer} {question or ''}".casefold()


def both_mismatch(answer: str, question: str | None, places: Sequence[Place], stemmer: Stemmer.Stemmer
                  ) -> str | None:
    """What is wrong when the answer says both A and B are P (or "yes" to whether both are) and a name has
    no sentence saying P of it, or says "no" to whether both are P and sentences say P of each; else None."""
    sources = " ".join(place.text for place in places).casefold()
    if _NO.search(answer):
        said = _names_and_predicate(question, sources) if question else None
        if said is None:
            return None
        lone, checkable = _without(said, places, stemmer)
        both = checkable and lone is None
        return f"the sources say it of both {said[0]!r} and {said[1]!r}" if both else None
    said = next(filter(None, (_names_and_predicate(s, sources) for s in split_sentences(answer))), None)
    if said is None and question and _YES.match(answer):
        said = _names_and_predicate(question, sources)
    lone = _without(said, places, stemmer)[0] if said else None
    return f"the answer says both are so; no source says it of {lone!r}" if lone else None
