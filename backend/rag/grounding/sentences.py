"""The sentences of an answer or a source as the groundedness check reads them: citation markers,
attributions, list markers and hedges removed; sentences about the documents or the assistant dropped."""

from __future__ import annotations

import re

import Stemmer

from backend.rag.text_terms import AnalysedText, analyse, content_words

# "[Source 2]", "[Sources 1, 3]", "[source: report.pdf, p. 4]", "[3]", "[1-2]".
_CITATION = re.compile(
    r"[ \t]*(?:\[\s*(?:sources?|docs?|documents?)\b[^\]]*\]|\[\s*\d+(?:\s*[,;–-]\s*\d+)*\s*\])", re.IGNORECASE
)
# A trailing "Sources: ..." list, on its own line or after the last sentence.
_SOURCES_LINE = re.compile(
    r"(?:^|(?<=[.!?]))[ \t]*(?:sources?|references?|citations?)[ \t]*:.*$", re.IGNORECASE | re.MULTILINE
)
_ATTRIBUTION = re.compile(
    r"\b(?:based on|according to|as (?:stated|described|mentioned|shown) in)\s+(?:the\s+)?"
    r"(?:provided\s+|given\s+|available\s+|cited\s+|retrieved\s+)?"
    r"(?:documents?|sources?|context|information|excerpts?|passages?|texts?)\b\s*[,:]?",
    re.IGNORECASE,
)
LIST_MARKER = re.compile(r"^\s*(?:[-*•#>]+|\d{1,2}[.)])\s+", re.MULTILINE)
# Sentences about the documents or the assistant itself, not about the world.
_META_SENTENCE = re.compile(
    r"^\W*(?:i\s+(?:don'?t|do not|cannot|can'?t|could not|couldn'?t|am not|'m not|have no)\b"
    r"|(?:the|these|those|provided|given)\s+(?:provided\s+|given\s+)?"
    r"(?:documents?|sources?|context|excerpts?|passages?)\s+"
    r"(?:do(?:es)?\s+not|don'?t|doesn'?t|did not|didn'?t)\b"
    r"|there (?:is|are) no (?:information|mention|details?)\b"
    r"|sorry\b)",
    re.IGNORECASE,
)
# A hedge before a claim: "I'm not sure, but", "Sorry, I don't know; however", "I think that". What follows it
# is checked like any sentence; a hedge with nothing after it is a meta sentence.
_HEDGE = re.compile(
    r"^(?:\W*(?:(?:i['’]?m|i am)\s+(?:not\s+(?:sure|certain)|sorry)|sorry|i\s+(?:don['’]?t|do not)\s+know"
    r"|i\s+apologi[sz]e)\b[^,;:.]*?(?:[,;:]\s*(?:but|however)?\s*|\s+but\s+))+"
    r"|^\W*i\s+(?:think|believe|guess|suppose)\s+(?:that\s+)?",
    re.IGNORECASE,
)

# After . ! or ? (and a closing quote or bracket), before a capital or digit; or at a line break.
# A line break alone ends nothing: PDF text is hard-wrapped mid-sentence. A blank line or a list item does.
_SENTENCE_END = re.compile(
    r"(?:(?<=[.!?])|(?<=[.!?][\"'”’)\]]))\s+(?=[\"'“‘(\[]?[A-Z0-9])"
    r"|\s*\n\s*\n\s*"
    r"|\s*\n\s*(?=(?:[-*•]+|\d{1,2}[.)])\s)"
)
# Pasted-together paragraphs ("…in the 19th century.First for Women is…"): a sentence end without its space.
_MISSING_SPACE = re.compile(r"(?<=[a-z0-9)\"”]{2}[.!?])(?=[A-Z][a-z])")
_ABBREVIATIONS = frozenset(
    ["mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "etc", "e.g", "i.e", "inc", "ltd", "co", "corp", "no", "approx", "dept", "est", "gen", "col", "lt", "sgt", "rev", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"]
)
# Abbreviations that end no sentence only before their number ("Pub. 519", "Fig. 2"): elsewhere the word ends
# one ("They met at the pub. The night was long."). "No." stays one everywhere ("No. of employees").
_NUMBER_ABBREVIATIONS = frozenset(["pub", "fig"])
_INITIALISM = re.compile(r"(?:[A-Za-z]\.)*[A-Za-z]")

# Words that only frame an answer ("The answer is: …", "The person who … is X"); no source need hold them.
FRAMING_STEMS = frozenset(Stemmer.Stemmer("english").stemWords(
    ["answer", "question", "source", "sources", "document", "documents", "information",
     "person", "people", "place", "thing", "something", "someone", "way", "reason", "time", "number"]
))
_MIN_SUBSTANCE_WORDS = 2


def split_sentences(text: str) -> list[str]:
    """Sentences and list items. A period after an abbreviation or initial ("Dr.", "J.", "U.S.") ends none."""
    sentences: list[str] = []
    for piece in _SENTENCE_END.split(text):
        piece = piece.strip()
        if not piece:
            continue
        if sentences and _ends_with_abbreviation(sentences[-1], piece):
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return sentences


def _ends_with_abbreviation(sentence: str, next_piece: str) -> bool:
    if not sentence.endswith("."):
        return False
    last_word = sentence[:-1].rsplit(maxsplit=1)[-1].lstrip("\"'“‘([").casefold()
    if last_word in _NUMBER_ABBREVIATIONS:
        return next_piece[:1].isdigit()
    return last_word in _ABBREVIATIONS or bool(_INITIALISM.fullmatch(last_word))


def strip_citations(text: str) -> str:
    """``text`` without its citation markers ("[Source 2]", "[Sources 1, 3]", "[3]", …)."""
    return _CITATION.sub("", text)


def answer_claims(answer: str, stemmer: Stemmer.Stemmer) -> list[tuple[str, AnalysedText]]:
    """The answer's sentences that claim something, analysed: citation markers, attributions ("According to
    the documents,"), list markers and hedges ("I'm not sure, but") removed; meta sentences ("I don't know",
    "The documents do not say") dropped."""
    text = _ATTRIBUTION.sub(" ", _SOURCES_LINE.sub("", strip_citations(answer)))
    sentences = [_HEDGE.sub("", LIST_MARKER.sub("", sentence)) for sentence in split_sentences(text)]
    return [(s, analyse(s, stemmer)) for s in sentences if s and not _META_SENTENCE.match(s)]


def says_enough_to_check(answer: str) -> bool:
    """False for an answer with fewer than two content words besides its framing and citations ("The answer is:
    2640 [Source 5]", "4 [Source 1]"): a lone number or name is found in some source by chance, so the overlap
    check would call it grounded without it saying what it is about."""
    words = set(content_words(strip_citations(answer))) - FRAMING_STEMS
    return len(words) >= _MIN_SUBSTANCE_WORDS


def source_sentences(source: str) -> list[str]:
    """The sentences of a source, pasted-together paragraphs ("…century.First for Women is…") split too."""
    return split_sentences(_MISSING_SPACE.sub(" ", source))
