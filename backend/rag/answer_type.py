"""What kind of answer a question asks for, its key terms, and whether a sentence holds an answer of that kind.

"Who" asks for a name, "when" for a date or time, "where" for a place name, "how many / how much / how long /
what percentage / what dose…" for a number ("how many minutes" for one in minutes, "how old" for an age), "what is
the phone number / email / website / address" for that kind of string. Any other shape (what, which + noun, why, how, yes/no, and every
non-English question) gets ``"unknown"``: then only the key terms decide, never a guessed type.

Names, numbers and dates are found with regular expressions and capitalisation: no tagger is installed, and the
decision must not depend on the bundled 135M model. A candidate that the question itself contains is no answer
("Who was Margaret's brother?" is not answered by "Margaret").
"""

from __future__ import annotations

import re
from typing import Literal

from backend.rag.grounding.sentences import split_sentences
from backend.retrieval.tokenize import Tokenizer

AnswerType = Literal["person", "time", "place", "quantity", "phone", "email", "web", "address", "unknown"]

# An optional lead-in before the question word: "and when…", "in how many…", "so who…", "over what period…".
_LEAD = (r"^\W*(?:(?:and|but|so|then|in|on|at|by|for|from|to|of|since|until|during|over|within|after|before)"
         r"\s+)?")
_COPULA = r"(?:is|was|are|were|does|did|do)\s+(?:the\s+|a\s+|an\s+)?"
_QUANTITY_NOUNS = (
    r"(?:number|percentage|percent|proportion|fraction|share|ratio|amount|quantity|dose|dosage|rate|score|size|"
    r"cost|price|age|length|duration|weight|height|distance|speed|temperature|population|accuracy|count|"
    r"total|recall|precision|f1|f-score)"  # a measure reported as a number
)
_TIME_NOUNS = r"(?:year|years|date|day|month|decade|century|time|season|era|period|deadline)"
_PLACE_NOUNS = r"(?:country|countries|city|cities|town|state|region|place|location|continent|province|island)"
_PERSON_NOUNS = r"(?:person|people|author|authors|inventor|founder|company|organi[sz]ation|institution|sponsor)"
_HOW = r"how\s+(?:many|much|long|old|far|fast|big|large|high|tall|often|deep|wide|heavy|quickly|frequently|soon)"
_WHAT_WHICH = r"(?:what|which)\s+(?:" + _COPULA + r")?(?:[\w@-]+\s+){0,2}?"

# "What's the phone number / email / website / address of …" asks for that kind of string, as "when" asks
# for a date.
# The contact word must head its phrase ("phone number of …", "email for …", "address?"), and no word before
# it may make it something else ("the address bus", "the IP address", "the phone battery", "what does …").
_WHAT_CONTACT = (r"(?:what|which)(?:['’]s|\s+(?:is|was|are|were))?\s+(?:the\s+|a\s+|an\s+|their\s+|its\s+)?"
                 r"(?:(?!(?:do|does|did|ip|mac|memory|return|register)\b)[\w'’-]+\s+){0,3}?")
_CONTACT_HEAD = r"(?=\s*(?:numbers?\b|address(?:es)?\b|of\b|for\b|to\b|at\b|on\b|\?|$))"

_SHAPES: tuple[tuple[re.Pattern[str], AnswerType], ...] = tuple(
    (re.compile(_LEAD + pattern + r"\b", re.IGNORECASE), kind)
    for pattern, kind in (
        (_WHAT_CONTACT + r"(?:tele)?(?:phone|fax)" + _CONTACT_HEAD, "phone"),
        (_WHAT_CONTACT + r"e-?mail" + _CONTACT_HEAD, "email"),
        (_WHAT_CONTACT + r"(?:website|web\s+(?:site|page|address)|url|homepage|home\s+page)" + _CONTACT_HEAD, "web"),
        (_WHAT_CONTACT + r"(?:mailing\s+|postal\s+|street\s+)?address" + _CONTACT_HEAD, "address"),
        (r"(?:who|whom|whose)", "person"),
        (r"(?:when|how\s+soon|since\s+when)", "time"),
        (r"where", "place"),
        (_HOW, "quantity"),
        (_WHAT_WHICH + _TIME_NOUNS, "time"),
        (_WHAT_WHICH + _PLACE_NOUNS, "place"),
        (_WHAT_WHICH + _PERSON_NOUNS, "person"),
        (_WHAT_WHICH + _QUANTITY_NOUNS, "quantity"),
    )
)

_SECOND_QUESTION = re.compile(r"[,;]?\s+(?:and|or|but)\s+(?=(?:who|whom|whose|what|when|where|which|why|how)\b)",
                              re.IGNORECASE)

# Words of the question's frame, not its topic: "How many layers…" is about layers, not about "many" (dropped with
# its "how" only: "BERT-Large" keeps "large"); "…in the study?" is about the document at hand, whose sentences
# seldom name themselves; "Explain …", "What is the main idea …" ask for a kind of answer, and the words of the
# asking are not in the answer. A word no passage holds weighs most in coverage, so any of these left in would
# make every such question look unanswered. (A word string, as in tokenize.py.)
_FRAME_WORDS = frozenset(
    """
    number percentage percent proportion fraction share ratio amount quantity total count
    year years date day month decade century time season era period periods deadline deadlines
    country countries city cities town region place location continent province
    person people
    phone telephone fax email website url homepage address
    study studies paper papers article articles document documents text texts file files report reports book
    chapter section page pages author authors writer
    explain describe summarize summarise summary overview outline discuss list tell show define elaborate detail
    details mention mentioned say says said talk talks
    main key central primary overall general important basic
    idea ideas point points topic topics theme themes purpose goal aim gist conclusion conclusions takeaway
    takeaways contribution contributions
    propose proposes proposed present presents presented introduce introduces introduced
    use used uses using find found get got make made take took taken give gave given reach reached achieve
    achieved obtain obtained happen happened mean called name named exactly approximately roughly
    """.split()  # noqa: SIM905
)
# Phrases of the frame: "What does MCAS stand for?" asks for MCAS's long form, and "stand" is in no answer.
_FRAME_PHRASES = re.compile(_HOW + r"|\b(?:stands?|short)\s+for\b", re.IGNORECASE)
_KEY_TERMS = Tokenizer()
# A frame word in any of its inflections ("studied" like "study", "located" like "location"): the frame is matched
# by stem, as the key terms are.
_FRAME_STEMS = frozenset(_KEY_TERMS.tokenize(" ".join(_FRAME_WORDS)))
_WORD = re.compile(r"[^\W_]+")

_SPELLED_NUMBERS = (
    r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    r"seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|hundreds|"
    r"thousand|thousands|million|millions|billion|billions|dozen|dozens|half|twice|double|triple)"
)
# A number not glued to letters before it: "24" in "L=24" and "51.0%" count, the "1" of "F1" or "H3F3A" does
# not; with its scale ("9.4 million").
_NUMBER = re.compile(r"(?<![\w.])[-+−]?\d[\d,.]*(?:\s?%|\s+(?:hundred|thousand|million|billion|trillion)\b)?"
                     r"|\b" + _SPELLED_NUMBERS + r"\b", re.IGNORECASE)
_MONTHS = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?"
)
_TIME = re.compile(
    r"(?<![\w.])(?:1[0-9]{3}|20[0-9]{2})s?(?![\w.]*\d)"  # a year or a decade
    r"|\b" + _MONTHS + r"(?:\s+\d{1,2})?\b"  # a month, with its day
    r"|\b(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b"
    # 12/03/2020, 12-03-20, 12.03.2020; not a section number ("2.3.59", "2.3.59.5")
    r"|(?<![\w.])(?:\d{1,2}[/-]\d{1,2}[/-]\d{2,4}|\d{1,2}\.\d{1,2}\.\d{4})\b(?![./-]\d)"
    r"|(?<![\w.])\d{1,2}:\d{2}\b"  # 14:30
    r"|\b\d{1,2}(?:st|nd|rd|th)\s+century\b"
    r"|\b(?:yesterday|today|tomorrow|last\s+(?:year|month|week)|next\s+(?:year|month|week))\b",
)
# A capitalised word (a name starts with a capital and goes on in lower case: "Devlin", "Canada", "Daemo").
# "long form (ABBR)": an abbreviation of at most 10 characters with a capital after its first character.
_DEFINITION = re.compile(r"((?:[^\s()]+\s+){1,8})\(([A-Za-z][\w-]{0,8}[A-Z][\w-]{0,8})\)")
_NAME = re.compile(r"\b[A-Z][a-z][\w'’-]*")
# Contact strings: a phone number ("(800) 829-1040", "1-800-829-1040", "+44 20 7946 0958"), an email
# address, a web address, a street address or post box.
_CONTACTS: dict[AnswerType, re.Pattern[str]] = {
    "phone": re.compile(
        r"(?<![\w.])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)\s?|\d{1,4}[\s.-])?\d{3}[\s.-]\d{4}(?!\d)"
    ),
    "email": re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
    "web": re.compile(r"(?:https?://|www\.)\S+|\b[\w-]+(?:\.[\w-]+)*\.(?:com|org|gov|edu|net|int|io)\b",
                      re.IGNORECASE),
    "address": re.compile(
        r"\b\d{1,6}\s+(?:[A-Z][\w.'’-]*\s+){1,4}(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Drive|Dr|"
        r"Lane|Ln|Way|Court|Ct|Place|Pl|Parkway|Pkwy|Highway|Hwy|Square|Sq)\b|\bP\.?\s?O\.?\s+Box\s+\d+"
        r"|\b[A-Z]{2}\s+\d{5}(?:-\d{4})?\b"
    ),
}
# Capitalised words of a document's own layout, never a name.
_NOT_NAMES = frozenset({"Table", "Figure", "Fig", "Section", "Appendix", "Equation", "Eq", "Source", "Page", "Chapter"})


def question_parts(question: str) -> list[str]:
    """The questions a compound question asks: "Where do axolotls live and what do they eat?" asks two."""
    return [part for part in _SECOND_QUESTION.split(question) if part.strip()]


def expected_answer_type(question: str) -> AnswerType:
    """The kind of answer the question's shape asks for; ``"unknown"`` for shapes that promise no type. A
    question after a sentence of context is read alone ("I'm a teacher. How much … can I deduct?")."""
    asked = [sentence for sentence in split_sentences(question) if sentence.endswith("?")]
    for pattern, kind in _SHAPES:
        if pattern.search(asked[-1] if asked else question):
            return kind
    return "unknown"


def key_terms(question: str) -> frozenset[str]:
    """The question's topic words, stemmed: its words minus function words and the words of its frame. A
    frame word capitalised inside a question in sentence case is part of a name ("the Document Reader"), so
    topic."""
    words = _WORD.findall(_SHORT_PREFIX.sub(r"\1", _FRAME_PHRASES.sub(" ", question)))
    sentence_case = sum(w[0].isupper() for w in words) * 2 < len(words)
    named = {index for index, w in enumerate(words) if index > 0 and sentence_case and w[0].isupper()}
    return frozenset(
        term for index, w in enumerate(words) for term in _KEY_TERMS.tokenize(w)
        if index in named or term not in _FRAME_STEMS
    )


# A hyphenated word and its closed spelling are one word ("on-line" and "online", "e-mail" and "email"): a
# hyphenated word of the text also stands as its closed form, and a short lower-case prefix of the question's
# ("e-", "on-", "re-", "co-") is closed up, as the tokenizer would split it into a stopword or a letter. A
# longer or capitalised part stays a term of its own ("BERT-Large", "T-cell", "COVID-19").
_HYPHENATED = re.compile(r"\b[^\W_]+(?:-[^\W_]+)+\b")
_SHORT_PREFIX = re.compile(r"\b([a-z]{1,2})-(?=[a-z])")


def with_closed_compounds(text: str) -> str:
    """The text followed by the closed spelling of each of its hyphenated words ("on-line" → "online")."""
    return " ".join([text, *(word.replace("-", "") for word in _HYPHENATED.findall(text))])


def text_terms(text: str) -> frozenset[str]:
    """A text's words as key terms are written (stemmed, without function words), to match ``key_terms`` against."""
    return frozenset(_KEY_TERMS.tokenize(text))


def carries(term: str, terms: frozenset[str], folded_text: str) -> bool:
    """Whether a text holds a key term: among its own terms (``text_terms``), or for a longer term inside its
    casefolded words, because PDF text glues words together ("BERTLARGE" for "BERT-Large")."""
    return term in terms or (len(term) >= 4 and term in folded_text)


def abbreviations(text: str) -> dict[str, str]:
    """Abbreviations the text defines, casefolded, with the words before each: "medullary TEC (mTEC)" gives
    {"mtec": "… medullary tec"}. A question names the long form; the answering sentence often only the short one."""
    defined: dict[str, str] = {}
    for before, short in _DEFINITION.findall(text):  # the first definition holds: later "(X)" are mostly reuses
        defined.setdefault(short.casefold(), " ".join(before.split()[-_long_form_words(short):]).casefold())
    # One level of nesting: "mature medullary TEC (mTEC)" also carries the long form of "TEC".
    return {short: " ".join([long, *(defined[w] for w in long.split() if w in defined and w != short)])
            for short, long in defined.items()}


def _long_form_words(abbreviation: str) -> int:
    return max(1, sum(c.isupper() for c in abbreviation))


def holds_answer(sentence: str, kind: AnswerType, question: str) -> bool:
    """Whether the sentence holds a candidate answer of the kind asked for that the question does not already
    contain. Always true for ``"unknown"``: that decision is the key terms'."""
    if kind == "unknown":
        return True
    asked = question.casefold()
    return any(candidate.casefold().strip() not in asked
               for candidate in _candidates(sentence, kind, question))


# A section or item number opening a sentence ("4.1 Evaluation Method We evaluated…", "(2) BMFOL definer…", a
# heading's "2.3.59.5" alone): the layout's, never a quantity.
_SECTION_NUMBER = re.compile(r"^\W*(?:\(\d{1,2}\)\s+|\d+(?:\.\d+)*[.)]?(?:\s+(?=[A-Z][a-z])|\s*$))")
# A number naming a part of a document or another document, with the revision date a heading gives it: "Form
# 1040NR", "Pub. 519", "Exhibit 2.3.59-56 (01-19-2021)", "line 47", "Table 2", "§ 12". What it numbers is no
# count, and its date is no answer to "when".
_REFERENCE = re.compile(
    r"(?:\b(?:forms?|pub|publications?|exhibits?|sections?|sec|tables?|figures?|figs?|lines?|schedules?|"
    r"chapters?|parts?|pages?|pp?|no|nos|appendix|items?|articles?|steps?|eqs?|equations?|notes?|"
    r"ref)\.?|§)\s*"
    r"\d[\w.-]*(?:\s*\(\d[\d/.-]*\))?",
    re.IGNORECASE,
)
# A share or a sum of money is no count: "How many data breaches …" is not answered by "increased by 15%" or
# "$9.4 million".
_COUNT = re.compile(r"\bhow\s+many\b", re.IGNORECASE)
# A number of a unit of time asked for in that unit, an age as an age: "How many minutes after takeoff …" is
# not answered by "157 fatalities", nor "How old were the patients?" by "Fifty-one individuals".
_TIME_UNITS = {
    "second": r"seconds?|secs?|s", "minute": r"minutes?|mins?", "hour": r"hours?|hrs?|h", "day": r"days?|d",
    "week": r"weeks?|wks?", "month": r"months?|mos?", "year": r"years?|yrs?|y", "decade": r"decades?",
}
_UNIT_ASKED = re.compile(r"\bhow\s+many\s+(" + "|".join(_TIME_UNITS) + r")s?\b", re.IGNORECASE)
_AGE_ASKED = re.compile(r"\bhow\s+old\b", re.IGNORECASE)
_AGE_WORDS = r"(?:age[ds]?|year-olds?|years?\s+old|years?\s+of\s+age)"


def _candidates(sentence: str, kind: AnswerType, question: str) -> list[str]:
    if kind in _CONTACTS:
        return _CONTACTS[kind].findall(sentence)
    if kind == "quantity":
        text = _REFERENCE.sub(" ", _SECTION_NUMBER.sub("", sentence, count=1))
        numbers = _NUMBER.finditer(text)
        if _COUNT.search(question):
            numbers = (m for m in numbers
                       if not m.group().endswith("%") and not text[:m.start()].endswith("$"))
        return [m.group() for m in numbers if _in_unit_asked(text, m, question)]
    if kind == "time":
        return _TIME.findall(_REFERENCE.sub(" ", sentence))
    # A person or a place: a name, anywhere but as the sentence's first word (capitalised by grammar alone).
    first = re.match(r"\W*\w+", sentence)
    start = first.end() if first else 0
    return [m.group() for m in _NAME.finditer(sentence, start) if m.group().rstrip("'’-") not in _NOT_NAMES]


def _in_unit_asked(text: str, number: re.Match[str], question: str) -> bool:
    """Whether a number is in the unit the question asks for: a time unit named after "how many" follows it
    ("7 days", "seven years"), an age has an age's words next to it ("aged 45", "mean age, 52.3", "70 years
    old"). Any number answers a question that names no unit."""
    before, after = text[max(0, number.start() - 20):number.start()], text[number.end():number.end() + 20]
    if unit := _UNIT_ASKED.search(question):
        unit_words = _TIME_UNITS[unit.group(1).casefold()]
        return bool(re.match(r"[\s-]*(?:" + unit_words + r")\b", after, re.IGNORECASE))
    if _AGE_ASKED.search(question):
        return bool(re.search(_AGE_WORDS + r"\W*$", before, re.IGNORECASE)
                    or re.match(r"[\s-]*(?:" + _AGE_WORDS + r"|years?\b)", after, re.IGNORECASE))
    return True
