"""The terms of a text as the groundedness check compares them: content words stemmed, numbers as digits,
proper names and negations marked.

Shared by the answer check (backend/rag/grounding/) and the question's key terms
(backend/rag/question_terms.py), so an answer word and a question word match exactly when their stems do.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import Stemmer

from backend.retrieval.tokenize import ENGLISH_STOPWORDS

# Answer filler on top of the retrieval stopwords: discourse words and yes/no carry no checkable fact.
STOPWORDS: frozenset[str] = ENGLISH_STOPWORDS | frozenset(
    ["also", "yes", "however", "therefore", "thus", "hence", "although", "though", "whereas", "either", "neither", "may", "might", "must", "shall", "us", "upon", "via", "etc", "instead", "well", "yet", "still", "even", "rather", "another", "whether"]
)

# Spelled-out numbers match digits ("two" = "2"). "one" is left out: mostly a pronoun ("one of the founders").
_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
    )
    if word != "one"
}

_TOKEN = re.compile(r"(?P<number>\d+(?:[.,]\d+)*)|(?P<word>[^\W\d_]+)")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
# "not", "never", "n't", "no" before a word ("no evidence"); a bare "No," answering a yes/no question is not one.
_NEGATION = re.compile(
    r"\b(?:not|never|none|nobody|nothing|neither|nor|cannot)\b|n[’']t\b|\bno\b(?!\s*(?:[,.;:!?]|$))",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Term:
    stem: str
    surface: str
    content: bool
    number: bool
    name: bool  # capitalised inside a sentence: a proper name


@dataclass(frozen=True, slots=True)
class AnalysedText:
    """One analysed text: its terms in order, the stems it contains, its content trigrams, whether it negates."""

    terms: tuple[Term, ...]
    stems: frozenset[str]
    trigrams: frozenset[tuple[str, str, str]]
    negated: bool

    @property
    def content(self) -> list[Term]:
        """Distinct content terms, in order of first appearance."""
        return list({term.stem: term for term in self.terms if term.content}.values())


def analyse(text: str, stemmer: Stemmer.Stemmer) -> AnalysedText:
    text = _THOUSANDS.sub("", unicodedata.normalize("NFKC", text))
    terms: list[Term] = []
    for position, match in enumerate(_TOKEN.finditer(text)):
        if match["number"]:
            number = match["number"]
            terms.append(Term(number, number, content=True, number=True, name=False))
            continue
        surface = match["word"]
        folded = surface.casefold()
        if folded in _NUMBER_WORDS:
            terms.append(Term(_NUMBER_WORDS[folded], surface, content=True, number=False, name=False))
            continue
        content = folded not in STOPWORDS and len(folded) > 1
        name = content and position > 0 and surface[0].isupper()
        terms.append(Term(stemmer.stemWord(folded), surface, content=content, number=False, name=name))
    return AnalysedText(
        tuple(terms),
        frozenset(t.stem for t in terms),
        frozenset(_content_trigrams(terms)),
        negated=bool(_NEGATION.search(text)),
    )


def _content_trigrams(terms: Sequence[Term]) -> Iterable[tuple[str, str, str]]:
    for window in zip(terms, terms[1:], terms[2:]):
        if sum(term.content for term in window) >= 2:
            yield (window[0].stem, window[1].stem, window[2].stem)


def english_stemmer() -> Stemmer.Stemmer:
    """A fresh English stemmer: each check makes its own rather than sharing one between request threads."""
    return Stemmer.Stemmer("english")


def content_words(text: str) -> list[str]:
    """Distinct content words of ``text``, normalised (case-folded, stemmed, numbers as digits), in order."""
    return [term.stem for term in analyse(text, english_stemmer()).content]


def content_trigrams(text: str) -> set[tuple[str, str, str]]:
    """Normalised word trigrams of ``text`` with at least two content words."""
    return set(analyse(text, english_stemmer()).trigrams)
