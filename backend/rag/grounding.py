"""Is an answer grounded in the sources it cites? Judged on what the answer adds to its question.

An answer that repeats its question's words finds them in the sources (the question was asked about those
sources), so overlap with the sources says little. The check therefore takes the question and judges each
sentence of the answer on its new part: the content words, numbers and names the question does not hold (or
holds fewer times: "Who was born first, A or B: B" names B anew), plus a negation the question does not make.
That part must be found whole in one answer-bearing place: a single source sentence (with the sentence before
it when it opens with "It", "He", "They", …) that also holds the question's terms the answer sentence relates
its new part to ("X is owned by Time Inc": "owned", "Time", "Inc"), or, for a bare answer ("Delhi") or one
that copies its whole question, at least one of the question's terms. A new part spread over a passage, or
found only next to other words, is not supported; a new number or name missing there, or a negation the place
does not make, is never forgiven.

Decisions, in order:
1. Nothing new: an answer to a "wh" question that repeats most of it and names nothing else ("The presence of
   DC-SIGNR affects the MTCT of HIV-1") is not an answer. One that picks a few of its words ("Australia" for
   "… active in all of which country?") and answers to choice questions ("B") are checked whole as picks; a
   yes/no question may be answered "yes".
2. Fast: when under ``ungrounded_below`` of the new words and trigrams are anywhere in the sources, the answer is
   not grounded (``fast_score``).
3. Claims: every sentence with a new part must be supported as above. Grounded when all are.
4. A capable LLM (an injected ``verifier``), when there is one, decides an answer that failed step 3 only on
   word coverage, not on a number, name, negation or missing question term: a paraphrase it can read.

Sentences about the documents or the assistant ("I could not find …") claim nothing and are skipped; a hedge
in front of a claim ("I'm not sure, but …") is dropped and the claim checked. Without a question every content
word is new and no question term is required. Parameters were chosen with ``axiom eval groundedness``
(backend/eval/groundedness.py, docs/benchmarks.md); what no word-level check can see is a wrong relation
between words that do stand together ("Y directed the film" where Y wrote it) and a wrong yes/no.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import Stemmer

from backend.rag.question_terms import QuestionForm, key_term_counts, question_form
from backend.rag.text_terms import AnalysedText, Term, analyse, content_words, english_stemmer

log = logging.getLogger(__name__)

WORD_WEIGHT = 0.6
TRIGRAM_WEIGHT = 0.4
# Parameters chosen on records 1-250 of HaluEval QA in its three answer forms (backend/eval/groundedness.py).
# Share of a sentence's new content words that its answer-bearing place must hold.
SUPPORT_AT = 1.0
# Share of the question's terms a sentence repeats that must stand in that place too (at least one).
ANCHOR_AT = 1.0
# An answer to a "wh" question adding nothing is a restatement when it repeats more than this share of the
# question's terms, and a pick from them ("Australia" for "… active in all of which country?") otherwise.
RESTATES_ABOVE = 0.5
# A sentence holding at least this share of its question's terms copies the question ("<question>: B").
COPIES_AT = 0.8

Verifier = Callable[[str, Sequence[str]], str]
Method = Literal["fast", "llm", "claims"]

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
_MISSING_SPACE = re.compile(r"(?<=[a-z]{2}[.!?])(?=[A-Z][a-z])")
_PRONOUN_START = re.compile(r"^\W*(?:it|its|he|his|she|her|they|their|this|these|that|those)\b", re.IGNORECASE)
_ABBREVIATIONS = frozenset(
    ["mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "etc", "e.g", "i.e", "inc", "ltd", "co", "corp", "no", "fig", "approx", "dept", "est", "gen", "col", "lt", "sgt", "rev", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"]
)
_INITIALISM = re.compile(r"(?:[A-Za-z]\.)*[A-Za-z]")

# Words that only frame an answer ("The answer is: …", "The person who … is X"); no source need hold them.
_FRAMING_STEMS = frozenset(Stemmer.Stemmer("english").stemWords(
    ["answer", "question", "source", "sources", "document", "documents", "information",
     "person", "people", "place", "thing", "something", "someone", "way", "reason", "time", "number"]
))
_MIN_SUBSTANCE_WORDS = 2


@dataclass(frozen=True, slots=True)
class SentenceSupport:
    sentence: str
    supported: bool
    score: float  # share of the sentence's checked content words found in its best source (or place)
    best_source_index: int | None  # None when there are no sources
    missing: tuple[str, ...] = ()  # checked words, as written in the sentence, that the best source lacks
    hard: bool = False  # unsupported for a missing number, name, negation or key term, not for coverage alone


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
    """The prompt a verifier sends to its LLM."""
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


def strip_citations(text: str) -> str:
    """``text`` without its citation markers ("[Source 2]", "[Sources 1, 3]", "[3]", …)."""
    return _CITATION.sub("", text)


def _claims(answer: str, stemmer: Stemmer.Stemmer) -> list[tuple[str, AnalysedText]]:
    """The answer's sentences that claim something, analysed: citation markers, attributions ("According to
    the documents,"), list markers and hedges ("I'm not sure, but") removed; meta sentences ("I don't know",
    "The documents do not say") dropped."""
    text = _ATTRIBUTION.sub(" ", _SOURCES_LINE.sub("", strip_citations(answer)))
    sentences = [_HEDGE.sub("", _LIST_MARKER.sub("", sentence)) for sentence in split_sentences(text)]
    return [(s, analyse(s, stemmer)) for s in sentences if s and not _META_SENTENCE.match(s)]


def says_enough_to_check(answer: str) -> bool:
    """False for an answer with fewer than two content words besides its framing and citations ("The answer is:
    2640 [Source 5]", "4 [Source 1]"): a lone number or name is found in some source by chance, so the overlap
    check would call it grounded without it saying what it is about."""
    words = set(content_words(strip_citations(answer))) - _FRAMING_STEMS
    return len(words) >= _MIN_SUBSTANCE_WORDS


@dataclass(frozen=True, slots=True)
class _Question:
    """What the question already says: its terms (stem → occurrences), its form, whether it negates."""

    counts: Counter[str]
    form: QuestionForm | None  # None: no question was given
    negated: bool


def _question(question: str | None, rewritten: str | None, stemmer: Stemmer.Stemmer) -> _Question:
    asked = [q for q in (question, rewritten) if q]
    return _Question(
        key_term_counts(*asked),
        question_form(question) if question else None,
        any(analyse(q, stemmer).negated for q in asked),
    )


@dataclass(frozen=True, slots=True)
class _Claim:
    """One sentence of the answer and the part of it to check against the sources."""

    sentence: str
    checked: tuple[Term, ...]  # the new terms, or for a pick ("B" for "A or B?") all of the sentence's terms
    given: frozenset[str]  # the question's terms the sentence repeats: where it says its new part applies
    new_negation: bool  # the sentence negates and the question does not
    trigrams: frozenset[tuple[str, str, str]]

    @property
    def says_something(self) -> bool:
        return bool(self.checked) or self.new_negation


def _new_part(sentence: str, claim: AnalysedText, question: _Question) -> _Claim:
    """The terms of ``claim`` that it holds more often than its question does: a term the question holds
    is given, unless the sentence names it again ("Who was born first, A or B: B")."""
    counts = Counter(term.stem for term in claim.terms if term.content)
    new = tuple(
        t for t in claim.content if counts[t.stem] > question.counts[t.stem] and t.stem not in _FRAMING_STEMS
    )
    new_stems = {t.stem for t in new}
    return _Claim(
        sentence,
        new,
        frozenset(t.stem for t in claim.content if t.stem in question.counts),
        claim.negated and not question.negated,
        # A trigram is new when it holds a new word; one made of the question's words is the question.
        frozenset(tri for tri in claim.trigrams if new_stems.intersection(tri)),
    )


def _as_pick(sentence: str, claim: AnalysedText, question: _Question) -> _Claim:
    """A sentence that adds nothing to its question, checked whole: an answer that picks from the question's
    own words ("B", "B was born first") must still be found where the question's other terms are."""
    words = tuple(t for t in claim.content if t.stem not in _FRAMING_STEMS)
    return _Claim(sentence, words, frozenset(), claim.negated and not question.negated, claim.trigrams)


def _restates(claims: Sequence[tuple[str, AnalysedText]], question: _Question) -> bool:
    """Whether the answer repeats most of its question's terms: a restatement, not a pick from it."""
    repeated = {t.stem for _, claim in claims for t in claim.content} & set(question.counts)
    return len(repeated) > RESTATES_ABOVE * len(question.counts)


def _parts_to_check(claims: Sequence[tuple[str, AnalysedText]], question: _Question) -> list[_Claim] | None:
    """The parts of the answer that need support, or None when the answer only restates a "wh" question."""
    parts = [_new_part(sentence, claim, question) for sentence, claim in claims]
    if any(part.says_something for part in parts) or question.form in (None, "yes_no"):
        return [part for part in parts if part.says_something]
    if question.form == "wh" and _restates(claims, question):
        return None
    return [part for sentence, claim in claims if (part := _as_pick(sentence, claim, question)).says_something]


def _overlap(parts: Sequence[_Claim], sources: Sequence[AnalysedText]) -> float:
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
    parts = _parts_to_check(_claims(answer, stemmer), _question(question, None, stemmer)) or []
    return _overlap(parts, [analyse(source, stemmer) for source in sources])


def _support(sentence: str, words: Sequence[Term], sources: Sequence[AnalysedText], support_at: float
             ) -> SentenceSupport:
    best: SentenceSupport | None = None
    for index, source in enumerate(sources):
        missing = [term for term in words if term.stem not in source.stems]
        score = 1 - len(missing) / len(words)
        supported = score >= support_at and not any(term.number or term.name for term in missing)
        candidate = SentenceSupport(sentence, supported, score, index, tuple(term.surface for term in missing))
        if best is None or (candidate.supported, candidate.score) > (best.supported, best.score):
            best = candidate
    return best or SentenceSupport(sentence, False, 0.0, None, tuple(term.surface for term in words))


def sentence_support(
    answer: str, sources: Sequence[str], support_at: float = SUPPORT_AT
) -> list[SentenceSupport]:
    """Each factual sentence of ``answer`` against each source on its own: supported when one source holds at
    least ``support_at`` of its content words and every one of its numbers and proper names. Used to find the
    source an uncited sentence comes from."""
    stemmer = english_stemmer()
    analysed = [analyse(source, stemmer) for source in sources]
    return [
        _support(sentence, claim.content, analysed, support_at)
        for sentence, claim in _claims(answer, stemmer) if claim.content
    ]


@dataclass(frozen=True, slots=True)
class _Place:
    """A source sentence, with the sentence before it when it opens with a pronoun ("It was designed by …"):
    where an answer's new part must be found whole."""

    source_index: int
    stems: frozenset[str]
    negated: bool


def _places(sources: Sequence[str], stemmer: Stemmer.Stemmer) -> list[_Place]:
    places = []
    for index, source in enumerate(sources):
        sentences = split_sentences(_MISSING_SPACE.sub(" ", source))
        analysed = [analyse(sentence, stemmer) for sentence in sentences]
        for at, sentence in enumerate(analysed):
            around = [analysed[at - 1], sentence] if at and _PRONOUN_START.match(sentences[at]) else [sentence]
            places.append(_Place(
                index, frozenset().union(*(s.stems for s in around)), any(s.negated for s in around)
            ))
    return places


def _claim_support(part: _Claim, places: Sequence[_Place], anchor: frozenset[str], needed: int,
                   support_at: float) -> SentenceSupport:
    """``part``'s checked terms in their best place: one that holds ``needed`` of the ``anchor`` terms (the
    question's terms the sentence relates its new part to), the negation if the part adds one, every checked
    number and name, and ``support_at`` of its checked words."""
    best: SentenceSupport | None = None
    for place in places:
        missing = [term for term in part.checked if term.stem not in place.stems]
        score = 1 - len(missing) / len(part.checked) if part.checked else 1.0
        hard = (
            any(term.number or term.name for term in missing)
            or (part.new_negation and not place.negated)
            or len(anchor & place.stems) < needed
        )
        candidate = SentenceSupport(
            part.sentence, score >= support_at and not hard, score, place.source_index,
            tuple(term.surface for term in missing), hard,
        )
        if best is None or _rank(candidate) > _rank(best):
            best = candidate
    return best or SentenceSupport(
        part.sentence, False, 0.0, None, tuple(term.surface for term in part.checked), hard=True
    )


def _anchor(part: _Claim, question: _Question, source_stems: frozenset[str], anchor_at: float
            ) -> tuple[frozenset[str], int]:
    """The question's terms that must stand next to ``part``, and how many of them. A sentence that repeats
    a few of them ("X is owned by Time Inc") asserts its new part of those: ``anchor_at`` of them must be
    there. A bare answer ("Delhi") or one that copies most of its question ("… has a head office in the city
    Delhi") picks no relation out: one of the question's terms will do, as a multi-part question's terms
    stand in several sentences. Only terms the sources hold at all count."""
    checked = {term.stem for term in part.checked}
    repeated = (part.given - checked) & source_stems
    if repeated and len(part.given) < COPIES_AT * len(question.counts):
        return repeated, max(1, math.ceil(anchor_at * len(repeated)))
    anchor = (frozenset(question.counts) - checked) & source_stems
    return anchor, min(1, len(anchor))


def _rank(support: SentenceSupport) -> tuple[bool, bool, float]:
    return support.supported, not support.hard, support.score


def _describe(support: SentenceSupport) -> str:
    missing = f" (missing: {', '.join(support.missing)})" if support.missing else ""
    return f"not supported where the sources answer the question: {support.sentence!r}{missing}"


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
    """Decides whether an answer is grounded in its sources (see the module docstring for the steps).

    ``verifier`` takes (answer, sources) and returns a capable LLM's raw reply to ``format_check_prompt``;
    leave it None when only a small LLM is configured.
    """

    def __init__(
        self,
        verifier: Verifier | None = None,
        ungrounded_below: float = 0.3,
        support_at: float = SUPPORT_AT,
        anchor_at: float = ANCHOR_AT,
    ) -> None:
        if not all(0 <= share <= 1 for share in (ungrounded_below, support_at, anchor_at)):
            raise ValueError("need ungrounded_below, support_at and anchor_at in [0, 1]")
        self._verifier = verifier
        self._ungrounded_below = ungrounded_below
        self._support_at = support_at
        self._anchor_at = anchor_at

    def check(
        self, answer: str, sources: Sequence[str], question: str | None = None,
        rewritten_question: str | None = None,
    ) -> GroundednessVerdict:
        """``question`` is what the user asked and ``rewritten_question`` its rewrite for retrieval, if any:
        the words of either are given, not new."""
        stemmer = english_stemmer()
        analysed_sources = [analyse(source, stemmer) for source in sources]
        asked = _question(question, rewritten_question, stemmer)
        parts = _parts_to_check(_claims(answer, stemmer), asked)
        if parts is None:
            return GroundednessVerdict(
                is_grounded=False, score=0.0, fast_score=0.0, method="claims",
                issues=["the answer only restates the question: it names nothing the question did not"],
            )
        overlap = _overlap(parts, analysed_sources)
        if not parts:
            return GroundednessVerdict(is_grounded=True, score=1.0, fast_score=overlap, method="claims")
        source_stems = frozenset().union(*(s.stems for s in analysed_sources))
        if overlap < self._ungrounded_below:
            missing = {t.stem: t.surface for part in parts for t in part.checked if t.stem not in source_stems}
            return GroundednessVerdict(
                is_grounded=False, score=overlap, fast_score=overlap, method="fast",
                issues=[f"most of what the answer adds is not in the sources; missing: {', '.join(missing.values())}"],
            )
        places = _places(sources, stemmer)
        checked = [
            _claim_support(part, places, *_anchor(part, asked, source_stems, self._anchor_at), self._support_at)
            for part in parts
        ]
        unsupported = [s for s in checked if not s.supported]
        if unsupported and self._verifier is not None and not any(s.hard for s in unsupported):
            verdict = self._ask_verifier(answer, sources)
            if verdict is not None:
                return _verdict_from_llm(verdict, overlap)
        return GroundednessVerdict(
            is_grounded=not unsupported,
            score=1 - len(unsupported) / len(checked),
            fast_score=overlap,
            method="claims",
            issues=[_describe(s) for s in unsupported],
            unsupported_sentences=[s.sentence for s in unsupported],
        )

    def _ask_verifier(self, answer: str, sources: Sequence[str]) -> LLMVerdict | None:
        try:
            verdict = parse_llm_verdict(self._verifier(answer, sources))
        except Exception:  # any LLM failure (timeout, server down, bad reply) falls back to the claim check
            log.warning("groundedness verifier failed; using the claim check", exc_info=True)
            return None
        if not verdict.usable:
            log.warning("groundedness verifier reply had no verdict; using the claim check")
            return None
        return verdict


def _verdict_from_llm(verdict: LLMVerdict, overlap_score: float) -> GroundednessVerdict:
    """A usable verifier reply as a verdict; with no explicit GROUNDED field, a score of 0.5 or more counts."""
    score = verdict.score if verdict.score is not None else float(bool(verdict.grounded))
    grounded = verdict.grounded if verdict.grounded is not None else score >= 0.5
    return GroundednessVerdict(
        is_grounded=grounded, score=score, fast_score=overlap_score, method="llm", issues=list(verdict.issues)
    )
