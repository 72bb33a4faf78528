"""Relations a word-level check misses: whose agent the answer is, what it is set against, whether it is
the thing asked for, whether a quantity is given.

"… a 2007 film, directed by who?" (or "Who directed …?") answered "Neil Gaiman" from "directed by Robert
Zemeckis and written by Neil Gaiman": every word stands in the sentence, but the name follows "written by".
When the question (or the answer) names the relation as "<verb> by", the answer's name in the supporting
sentence must follow that "<verb> by", not another one, whenever the sentence has that "<verb> by" at all.

The same holds the other way round: "Lucy Gordon directed Serendipity" is contradicted by a sentence naming
Serendipity and "directed by Peter Chelsom".

"… goes by what alias?" answered "John Gourley is the lead singer of Portugal": the sources say "alias" only
in another sentence. When the sources use the noun the question asks for ("what alias", "which retailer"), a
sentence naming the answer must hold it, unless the answer does.

"What retailer is the second-largest …?" answered "Walmart" from "Target is the second-largest … retailer,
behind Walmart": a name standing after "behind", "than", "unlike", "except" or "instead of" is what the
sentence sets its subject against, not what it says the thing of. An answer named only so is not supported.

"How long / how many / how much / how old …?" and "what year …?" ask for a number: "… lasted for a long time"
names none and answers nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import Stemmer

from backend.rag.grounding.names import NAME
from backend.rag.grounding.sentences import FRAMING_STEMS
from backend.rag.grounding.support import Place
from backend.rag.text_terms import STOPWORDS, Term, analyse

# "… directed by who?", "Who directed …?", "Which company founded …?"
_ASKED_AGENT = re.compile(
    r"\b(?P<verb>[a-z]+)\s+by\s+(?:who|whom|what|which)\b|^\W*(?:who|which\s+\w+)\s+(?P<active>[a-z]+ed)\b",
    re.IGNORECASE,
)
_ASKS_NUMBER = re.compile(
    r"\bhow\s+(?:many|much|long|old|far|tall|high|big|large|heavy|deep|wide)\b|\b(?:what|which)\s+year\b",
    re.IGNORECASE,
)
_BY = "by"
_CONTRAST = re.compile(r"(?:^|\s)(?:behind|than|unlike|except|instead of|rather than)$")
# "What South Korean sitcom …", "Which American college …": the noun after the question word and its names.
_HEAD = re.compile(r"\b(?:what|which)\s+(?:(?:[A-Z][\w'’-]*|[a-z]+-[a-z]+)\s+)*(?P<noun>[a-z]+)\b")
_FRAME_NOUNS = frozenset(Stemmer.Stemmer("english").stemWords(
    ["name", "type", "kind", "sort", "form", "part", "year", "date", "day", "one"]
))
# "Lucy Gordon directed Serendipity": a name, then a verb in the past.
_ACTIVE = re.compile(rf"(?P<subject>{NAME})\s+(?P<verb>[a-z]+ed)\b")


def _verbs_before_by(terms: Sequence[Term]) -> list[tuple[int, str]]:
    """(position of "by", stem of the word before it) for each "<verb> by" in ``terms``."""
    return [(at, terms[at - 1].stem) for at in range(1, len(terms)) if terms[at].surface.casefold() == _BY]


def asked_relations(question: str | None, sentences: Sequence[str], new: Sequence[Term],
                    stemmer: Stemmer.Stemmer) -> set[str]:
    """The stems of the verbs the question asks the agent of ("directed by who?") or the answer names one of
    its ``new`` terms the agent of ("… was founded by X")."""
    verbs = {
        stemmer.stemWord((m["verb"] or m["active"]).casefold()) for m in _ASKED_AGENT.finditer(question or "")
    }
    new_stems = {t.stem for t in new}
    for sentence in sentences:
        terms = analyse(sentence, stemmer).terms
        verbs |= {
            verb for at, verb in _verbs_before_by(terms)
            if at + 1 < len(terms) and terms[at + 1].stem in new_stems
        }
    return verbs


def agent_of_another(verbs: set[str], answer: Sequence[Term], places: Sequence[Place]) -> str | None:
    """The verb whose agent the answer's name is in a place holding one of ``verbs`` with "by" too, when it
    is not one of ``verbs``; else None."""
    names = {t.stem for t in answer if t.surface[:1].isupper()}
    if not verbs or not names:
        return None
    for place in places:
        if not names <= place.stems:
            continue
        bys = _verbs_before_by(place.terms)
        if not any(verb in verbs for _, verb in bys):
            continue
        first = next(at for at, term in enumerate(place.terms) if term.stem in names)
        before = [(at, verb) for at, verb in bys if at < first]
        if before and before[-1][1] not in verbs:
            return place.terms[before[-1][0] - 1].surface
    return None


def other_agent(sentences: Sequence[str], places: Sequence[Place], stemmer: Stemmer.Stemmer) -> str | None:
    """For an answer sentence "<Name> <verb> <object>", the name a place holding the object gives as the agent
    of "<verb> by" when it is not the answer's name; else None."""
    for sentence in sentences:
        match = _ACTIVE.search(sentence)
        if not match:
            continue
        subject = frozenset(t.stem for t in analyse(match["subject"], stemmer).content)
        verb = stemmer.stemWord(match["verb"].casefold())
        objects = frozenset(t.stem for t in analyse(sentence[match.end():], stemmer).content)
        if not subject or not objects:
            continue
        for place in places:
            if not objects <= place.stems:
                continue
            for at, before in _verbs_before_by(place.terms):
                agent = place.terms[at + 1] if at + 1 < len(place.terms) else None
                if before == verb and agent is not None and agent.name and agent.stem not in subject:
                    return agent.surface
    return None


def head_noun(question: str | None, stemmer: Stemmer.Stemmer) -> str | None:
    """The stem of the noun a "what / which" question asks for ("What South Korean sitcom …" → sitcom), or
    None when it asks for a frame ("what name / type / year …") or is not of that shape."""
    match = _HEAD.search(question or "")
    if not match or match["noun"].casefold() in STOPWORDS:
        return None
    stem = stemmer.stemWord(match["noun"].casefold())
    return None if stem in FRAMING_STEMS or stem in _FRAME_NOUNS else stem


def lacks_the_noun(noun: str | None, answer: Sequence[Term], places: Sequence[Place]) -> bool:
    """Whether the sources use ``noun`` but no sentence naming the answer's name (its capitalised terms)
    holds it, nor the answer itself."""
    names = {t.stem for t in answer if t.surface[:1].isupper()}
    if noun is None or not names or noun in {t.stem for t in answer}:
        return False
    if not any(noun in place.stems for place in places):
        return False
    return not any(names <= place.stems and noun in place.stems for place in places)


def only_contrasted(answer: Sequence[Term], places: Sequence[Place]) -> bool:
    """Whether every place naming the answer's name (its capitalised terms) names it right after a word of
    contrast ("behind Walmart", "larger than Walmart")."""
    names = {t.stem for t in answer if t.surface[:1].isupper()}
    naming = [place for place in places if names and names <= place.stems]
    for place in naming:
        first = next(at for at, term in enumerate(place.terms) if term.stem in names)
        before = " ".join(term.surface.casefold() for term in place.terms[max(0, first - 2):first])
        if not _CONTRAST.search(before):
            return False
    return bool(naming)


def asks_for_a_number(question: str | None) -> bool:
    return bool(question and _ASKS_NUMBER.search(question))


def names_a_number(checked: Sequence[Term]) -> bool:
    return any(t.number or t.stem.isdigit() for t in checked)
