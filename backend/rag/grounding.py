"""Is an answer grounded in the sources it cites? The two layers of the architecture's §9.

Layer 1 is deterministic overlap: score = 0.6 · (answer content words found in the sources)
+ 0.4 · (answer content trigrams found in the sources). At or above ``grounded_at`` the answer is grounded,
below ``ungrounded_below`` it is not. In between, a capable LLM (an injected ``verifier``) is asked; without
one, or when it fails, every factual sentence must be supported by one source on its own
(``sentence_support``).

The bundled LLM is too small to judge grounding, so the sentence check is the default decider; it was tuned
with ``axiom eval groundedness`` on HaluEval QA (see backend/eval/groundedness.py for the caveats).
Numbers and proper names are hard evidence: a wrong number or name is the classic hallucination, and overlap
alone would forgive one wrong token in a long answer. So the grounded shortcut of layer 1 is not taken when a
number or a mid-sentence capitalised word of the answer is missing from the sources, and a sentence is
unsupported when its source lacks one of them. The price: an answer that names what its source only calls
"he" or "it" is flagged.
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import Stemmer

from backend.retrieval.tokenize import ENGLISH_STOPWORDS

log = logging.getLogger(__name__)

WORD_WEIGHT = 0.6
TRIGRAM_WEIGHT = 0.4
# Share of a sentence's content words that one source must hold. On the first half of HaluEval QA (answers as
# given and prefixed by their question) every value from 0.7 to 0.85 scores within a point; 0.8 is the middle.
SENTENCE_SUPPORT_AT = 0.8

Verifier = Callable[[str, Sequence[str]], str]
Method = Literal["fast", "llm", "sentences"]

# Answer filler on top of the retrieval stopwords: discourse words and yes/no carry no checkable fact.
STOPWORDS: frozenset[str] = ENGLISH_STOPWORDS | frozenset(
    ["also", "yes", "however", "therefore", "thus", "hence", "although", "though", "whereas", "either", "neither", "may", "might", "must", "shall", "us", "upon", "via", "etc", "instead", "well", "yet", "still", "even", "rather", "another"]
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
_LIST_MARKER = re.compile(r"^\s*(?:[-*•#>]+|\d{1,2}[.)])\s+", re.MULTILINE)
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

# After . ! or ? (and a closing quote or bracket), before a capital or digit; or at a line break.
# A line break alone ends nothing: PDF text is hard-wrapped mid-sentence. A blank line or a list item does.
_SENTENCE_END = re.compile(
    r"(?:(?<=[.!?])|(?<=[.!?][\"'”’)\]]))\s+(?=[\"'“‘(\[]?[A-Z0-9])"
    r"|\s*\n\s*\n\s*"
    r"|\s*\n\s*(?=(?:[-*•]+|\d{1,2}[.)])\s)"
)
_ABBREVIATIONS = frozenset(
    ["mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "etc", "e.g", "i.e", "inc", "ltd", "co", "corp", "no", "fig", "approx", "dept", "est", "gen", "col", "lt", "sgt", "rev", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"]
)
_INITIALISM = re.compile(r"(?:[A-Za-z]\.)*[A-Za-z]")


@dataclass(frozen=True, slots=True)
class _Term:
    stem: str
    surface: str
    content: bool
    number: bool
    name: bool  # capitalised inside a sentence: a proper name


@dataclass(frozen=True, slots=True)
class _Text:
    """One analysed text: its terms in order, the stems it contains and its content trigrams."""

    terms: tuple[_Term, ...]
    stems: frozenset[str]
    trigrams: frozenset[tuple[str, str, str]]

    @property
    def content(self) -> list[_Term]:
        return list({term.stem: term for term in self.terms if term.content}.values())


@dataclass(frozen=True, slots=True)
class SentenceSupport:
    sentence: str
    supported: bool
    score: float  # share of the sentence's content words found in its best source
    best_source_index: int | None  # None when there are no sources
    missing: tuple[str, ...] = ()  # content words, as written in the sentence, that the best source lacks


@dataclass(frozen=True, slots=True)
class LLMVerdict:
    grounded: bool | None
    score: float | None
    issues: list[str] = field(default_factory=list)

    @property
    def usable(self) -> bool:
        return self.grounded is not None or self.score is not None


@dataclass(frozen=True, slots=True)
class GroundednessVerdict:
    is_grounded: bool
    score: float
    fast_score: float
    method: Method
    issues: list[str] = field(default_factory=list)
    unsupported_sentences: list[str] = field(default_factory=list)


HALLUCINATION_CHECK_PROMPT = """You check whether an ANSWER is fully supported by the SOURCES.
A claim is supported only if the SOURCES state it; names, numbers and dates must match exactly.
Do not use outside knowledge.

SOURCES:
{sources}

ANSWER:
{answer}

Reply in exactly this format:
GROUNDED: YES or NO
SCORE: a number from 0 to 1 (the share of the answer's claims that the sources support)
ISSUES: the unsupported claims, one per line, or NONE"""


def format_check_prompt(answer: str, sources: Sequence[str]) -> str:
    """The layer-2 prompt a verifier sends to its LLM."""
    numbered = "\n\n".join(f"[Source {index}]\n{text}" for index, text in enumerate(sources, start=1))
    return HALLUCINATION_CHECK_PROMPT.format(sources=numbered, answer=answer)


def split_sentences(text: str) -> list[str]:
    """Sentences and list items. A period after an abbreviation or initial ("Dr.", "J.", "U.S.") ends none."""
    sentences: list[str] = []
    for piece in _SENTENCE_END.split(text):
        piece = piece.strip()
        if not piece:
            continue
        if sentences and _ends_with_abbreviation(sentences[-1]):
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return sentences


def _ends_with_abbreviation(sentence: str) -> bool:
    if not sentence.endswith("."):
        return False
    last_word = sentence[:-1].rsplit(maxsplit=1)[-1].lstrip("\"'“‘([")
    return last_word.casefold() in _ABBREVIATIONS or bool(_INITIALISM.fullmatch(last_word))


def _analyse(text: str, stemmer: Stemmer.Stemmer) -> _Text:
    text = _THOUSANDS.sub("", unicodedata.normalize("NFKC", text))
    terms: list[_Term] = []
    for position, match in enumerate(_TOKEN.finditer(text)):
        if match["number"]:
            number = match["number"]
            terms.append(_Term(number, number, content=True, number=True, name=False))
            continue
        surface = match["word"]
        folded = surface.casefold()
        if folded in _NUMBER_WORDS:
            terms.append(_Term(_NUMBER_WORDS[folded], surface, content=True, number=False, name=False))
            continue
        content = folded not in STOPWORDS and len(folded) > 1
        name = content and position > 0 and surface[0].isupper()
        terms.append(_Term(stemmer.stemWord(folded), surface, content=content, number=False, name=name))
    return _Text(tuple(terms), frozenset(t.stem for t in terms), frozenset(_content_trigrams(terms)))


def _content_trigrams(terms: Sequence[_Term]) -> Iterable[tuple[str, str, str]]:
    for window in zip(terms, terms[1:], terms[2:]):
        if sum(term.content for term in window) >= 2:
            yield (window[0].stem, window[1].stem, window[2].stem)


def _claims(answer: str, stemmer: Stemmer.Stemmer) -> list[tuple[str, _Text]]:
    """The answer's sentences that claim something, analysed: citation markers, attributions ("According to
    the documents,") and list markers removed; meta sentences ("I don't know", "The documents do not say")
    dropped."""
    text = _ATTRIBUTION.sub(" ", _SOURCES_LINE.sub("", strip_citations(answer)))
    sentences = [_LIST_MARKER.sub("", sentence) for sentence in split_sentences(text)]
    return [(s, _analyse(s, stemmer)) for s in sentences if s and not _META_SENTENCE.match(s)]


def strip_citations(text: str) -> str:
    """``text`` without its citation markers ("[Source 2]", "[Sources 1, 3]", "[3]", …)."""
    return _CITATION.sub("", text)


def content_words(text: str) -> list[str]:
    """Distinct content words of ``text``, normalised (case-folded, stemmed, numbers as digits), in order."""
    return [term.stem for term in _analyse(text, Stemmer.Stemmer("english")).content]


# Words that only frame an answer ("The answer is: …"); they say nothing a source could support.
_FRAMING_STEMS = frozenset(Stemmer.Stemmer("english").stemWords(
    ["answer", "question", "source", "sources", "document", "documents", "information"]
))
_MIN_SUBSTANCE_WORDS = 2


def says_enough_to_check(answer: str) -> bool:
    """False for an answer with fewer than two content words besides its framing and citations ("The answer is:
    2640 [Source 5]", "4 [Source 1]"): a lone number or name is found in some source by chance, so the overlap
    check would call it grounded without it saying what it is about."""
    words = set(content_words(strip_citations(answer))) - _FRAMING_STEMS
    return len(words) >= _MIN_SUBSTANCE_WORDS


def content_trigrams(text: str) -> set[tuple[str, str, str]]:
    """Normalised word trigrams of ``text`` with at least two content words."""
    return set(_analyse(text, Stemmer.Stemmer("english")).trigrams)


@dataclass(frozen=True, slots=True)
class _Overlap:
    score: float
    missing_words: tuple[str, ...]
    missing_evidence: tuple[str, ...]  # numbers and proper names


def _overlap(claims: Sequence[tuple[str, _Text]], sources: Sequence[_Text]) -> _Overlap:
    source_stems = frozenset().union(*(s.stems for s in sources))
    source_trigrams = frozenset().union(*(s.trigrams for s in sources))
    words = list({term.stem: term for _, claim in claims for term in claim.content}.values())
    if not words:
        return _Overlap(1.0, (), ())  # nothing checkable is claimed
    missing = [term for term in words if term.stem not in source_stems]
    word_overlap = 1 - len(missing) / len(words)
    trigrams = frozenset().union(*(claim.trigrams for _, claim in claims))
    # One or two content words make no trigram; the word overlap then stands for both.
    trigram_overlap = len(trigrams & source_trigrams) / len(trigrams) if trigrams else word_overlap
    return _Overlap(
        WORD_WEIGHT * word_overlap + TRIGRAM_WEIGHT * trigram_overlap,
        tuple(term.surface for term in missing),
        tuple(term.surface for term in missing if term.number or term.name),
    )


def fast_score(answer: str, sources: Sequence[str]) -> float:
    """Layer 1: 0.6 · word overlap + 0.4 · trigram overlap of the answer's claims against all ``sources``."""
    stemmer = Stemmer.Stemmer("english")
    return _overlap(_claims(answer, stemmer), [_analyse(source, stemmer) for source in sources]).score


def _support(sentence: str, claim: _Text, sources: Sequence[_Text], support_at: float) -> SentenceSupport:
    words = claim.content
    best: SentenceSupport | None = None
    for index, source in enumerate(sources):
        missing = [term for term in words if term.stem not in source.stems]
        score = 1 - len(missing) / len(words)
        supported = score >= support_at and not any(term.number or term.name for term in missing)
        candidate = SentenceSupport(
            sentence, supported, score, index, tuple(term.surface for term in missing)
        )
        if best is None or (candidate.supported, candidate.score) > (best.supported, best.score):
            best = candidate
    return best or SentenceSupport(sentence, False, 0.0, None, tuple(term.surface for term in words))


def _sentence_support(
    claims: Sequence[tuple[str, _Text]], sources: Sequence[_Text], support_at: float
) -> list[SentenceSupport]:
    return [_support(sentence, claim, sources, support_at) for sentence, claim in claims if claim.content]


def sentence_support(
    answer: str, sources: Sequence[str], support_at: float = SENTENCE_SUPPORT_AT
) -> list[SentenceSupport]:
    """Each factual sentence of ``answer`` against each source on its own: supported when one source holds at
    least ``support_at`` of its content words and every one of its numbers and proper names."""
    stemmer = Stemmer.Stemmer("english")
    return _sentence_support(
        _claims(answer, stemmer), [_analyse(source, stemmer) for source in sources], support_at
    )


_MARKUP = re.compile(r"[*_`#>]+")
_QUOTE = r"[\"'\[(]?"
_GROUNDED_FIELD = re.compile(
    rf"\b(?:is)?grounded\b{_QUOTE}\s*[:=\-–]?\s*{_QUOTE}(?P<value>yes|no|true|false|partially|partial|not)\b",
    re.IGNORECASE,
)
# A bare "Yes." / "NO" / "Not grounded"; "No issues found" is not a verdict.
_LEADING_VERDICT = re.compile(
    r"^\W*(?:(?P<value>yes|no|true|false)\b(?=\s*(?:[.,!;:\n]|$))"
    r"|(?P<phrase>not grounded|ungrounded|partially grounded|grounded)\b)",
    re.IGNORECASE,
)
_PROSE_NOT_GROUNDED = re.compile(
    r"\b(?:(?:is\s+)?not|isn'?t)\s+(?:fully\s+|entirely\s+)?grounded\b|\bungrounded\b|\bpartially grounded\b",
    re.IGNORECASE,
)
_PROSE_GROUNDED = re.compile(r"\bgrounded\b", re.IGNORECASE)
_SCORE_FIELD = re.compile(
    rf"\b(?:score|confidence)\b{_QUOTE}\s*[:=\-–]?\s*{_QUOTE}(?P<value>\d+(?:\.\d+)?|\.\d+)\s*"
    r"(?P<scale>%|/\s*\d+(?:\.\d+)?)?",
    re.IGNORECASE,
)
_ISSUES_FIELD = re.compile(
    r"\b(?:issues?|unsupported claims?)\b[\"']?\s*:\s*(?P<rest>.*)", re.IGNORECASE | re.DOTALL
)
_NO_ISSUES = re.compile(r"^\W*(?:none|no issues?|n/?a|nothing|-)\W*$", re.IGNORECASE)
_NEXT_FIELD = re.compile(r"^\W*(?:(?:is)?grounded|score|confidence)\b", re.IGNORECASE)
_VERDICT_WORDS = {
    "yes": True,
    "true": True,
    "grounded": True,
    "no": False,
    "false": False,
    "not": False,
    "partially": False,
    "partial": False,
    "not grounded": False,
    "ungrounded": False,
    "partially grounded": False,
}


def parse_llm_verdict(text: str) -> LLMVerdict:
    """GROUNDED / SCORE / ISSUES from an LLM reply, tolerant of case, markdown, JSON, missing fields, bare
    answers ("Yes.", "NO") and prose ("the answer is not grounded"). A partially grounded answer counts as not
    grounded. Fields that cannot be read are None (or no issues)."""
    plain = _MARKUP.sub("", _json_as_fields(text) or text).strip()
    return LLMVerdict(_parse_grounded(plain), _parse_score(plain), _parse_issues(plain))


def _json_as_fields(text: str) -> str | None:
    """A JSON object reply ({"grounded": false, "issues": [...]}) rewritten as field lines, else None."""
    start, end = text.find("{"), text.rfind("}")
    try:
        data = json.loads(text[start : end + 1]) if 0 <= start < end else None
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    lines = [f"{key}: {value}" for key, value in data.items() if not isinstance(value, list | dict)]
    for key, value in data.items():
        if isinstance(value, list):
            lines += [f"{key}:", *(f"- {item}" for item in value)]
    return "\n".join(lines)


def _parse_grounded(text: str) -> bool | None:
    if field := _GROUNDED_FIELD.search(text):
        return _VERDICT_WORDS[field["value"].casefold()]
    if leading := _LEADING_VERDICT.match(text):
        return _VERDICT_WORDS[(leading["value"] or leading["phrase"]).casefold()]
    if _PROSE_NOT_GROUNDED.search(text):
        return False
    return True if _PROSE_GROUNDED.search(text) else None


def _parse_score(text: str) -> float | None:
    match = _SCORE_FIELD.search(text)
    if not match:
        return None
    value = float(match["value"])
    scale = (match["scale"] or "").replace(" ", "")
    if scale == "%":
        value /= 100
    elif scale.startswith("/"):
        denominator = float(scale[1:])
        value = value / denominator if denominator else -1
    elif 1 < value <= 100:  # "SCORE: 85" means a percentage
        value /= 100
    return value if 0 <= value <= 1 else None


def _parse_issues(text: str) -> list[str]:
    match = _ISSUES_FIELD.search(text)
    if not match:
        return []
    issues = []
    for line in match["rest"].splitlines():
        if _NEXT_FIELD.match(line):
            break
        line = _LIST_MARKER.sub("", line).strip()
        if line and not _NO_ISSUES.match(line):
            issues.append(line)
    return issues


class GroundednessChecker:
    """Decides whether an answer is grounded in its sources (see the module docstring for the layers).

    ``verifier`` takes (answer, sources) and returns a capable LLM's raw reply to ``format_check_prompt``;
    leave it None when only a small LLM is configured.
    """

    def __init__(
        self,
        verifier: Verifier | None = None,
        grounded_at: float = 0.8,
        ungrounded_below: float = 0.3,
        sentence_support_at: float = SENTENCE_SUPPORT_AT,
    ) -> None:
        if not 0 <= ungrounded_below <= grounded_at <= 1:
            raise ValueError("need 0 <= ungrounded_below <= grounded_at <= 1")
        self._verifier = verifier
        self._grounded_at = grounded_at
        self._ungrounded_below = ungrounded_below
        self._sentence_support_at = sentence_support_at

    def check(self, answer: str, sources: Sequence[str]) -> GroundednessVerdict:
        stemmer = Stemmer.Stemmer("english")
        analysed_sources = [_analyse(source, stemmer) for source in sources]
        claims = _claims(answer, stemmer)
        overlap = _overlap(claims, analysed_sources)

        if overlap.score < self._ungrounded_below:
            missing = ", ".join(overlap.missing_words)
            return GroundednessVerdict(
                is_grounded=False,
                score=overlap.score,
                fast_score=overlap.score,
                method="fast",
                issues=[f"most of the answer is not in the sources; missing: {missing}"],
            )
        if overlap.score >= self._grounded_at and not overlap.missing_evidence:
            return GroundednessVerdict(
                is_grounded=True, score=overlap.score, fast_score=overlap.score, method="fast"
            )

        if self._verifier is not None:
            verdict = self._ask_verifier(answer, sources)
            if verdict is not None:
                return _verdict_from_llm(verdict, overlap.score)

        checked = _sentence_support(claims, analysed_sources, self._sentence_support_at)
        unsupported = [s for s in checked if not s.supported]
        supported_share = 1 - len(unsupported) / len(checked) if checked else 1.0
        return GroundednessVerdict(
            is_grounded=not unsupported,
            score=supported_share,
            fast_score=overlap.score,
            method="sentences",
            issues=[
                f"not supported by any one source: {s.sentence!r} (missing: {', '.join(s.missing)})"
                for s in unsupported
            ],
            unsupported_sentences=[s.sentence for s in unsupported],
        )

    def _ask_verifier(self, answer: str, sources: Sequence[str]) -> LLMVerdict | None:
        try:
            verdict = parse_llm_verdict(self._verifier(answer, sources))
        except (
            Exception
        ):  # any LLM failure (timeout, server down, bad reply) falls back to the sentence check
            log.warning("groundedness verifier failed; using the sentence check", exc_info=True)
            return None
        if not verdict.usable:
            log.warning("groundedness verifier reply had no verdict; using the sentence check")
            return None
        return verdict


def _verdict_from_llm(verdict: LLMVerdict, overlap_score: float) -> GroundednessVerdict:
    """A usable layer-2 reply as a verdict; with no explicit GROUNDED field, a score of 0.5 or more counts."""
    score = verdict.score if verdict.score is not None else float(bool(verdict.grounded))
    grounded = verdict.grounded if verdict.grounded is not None else score >= 0.5
    return GroundednessVerdict(
        is_grounded=grounded, score=score, fast_score=overlap_score, method="llm", issues=list(verdict.issues)
    )
