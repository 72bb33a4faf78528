"""What a question already says: its key terms and its form. Pure functions over the question's text.

An answer is judged on what it adds to its question (backend/rag/grounding/): the question's own words are
given, and repeating them states nothing. Whether an answer must add something depends on the form: a "wh"
question asks for something new; a yes/no question ("Are both X and Y magazines?") or a choice ("Who was born
first, A or B?") is answered with the question's own words ("yes", "B").
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Literal

from backend.rag.text_terms import analyse, english_stemmer

QuestionForm = Literal["wh", "yes_no", "choice"]

_WH_WORD = re.compile(r"\b(?:what|which|who|whom|whose|where|when|why|how)\b", re.IGNORECASE)
_AUXILIARY_START = re.compile(
    r"^\W*(?:is|are|was|were|am|do|does|did|has|have|had|can|could|will|would|should|shall|may|might|must)\b",
    re.IGNORECASE,
)
_OPTIONS = re.compile(r"\S\s+or\s+\S", re.IGNORECASE)


def question_form(question: str) -> QuestionForm:
    """"choice" when the options follow the question word ("Which is older, A or B?") or a yes/no question
    offers them ("Is A or B older?"); "yes_no" for a question opening with an auxiliary verb; else "wh".
    An "or" before the question word joins names ("The Royal Commission … or Woodward Royal Commission …, in
    which country?") and offers no choice."""
    wh = _WH_WORD.search(question)
    after_wh = question[wh.end():] if wh else ""
    if _OPTIONS.search(after_wh):
        return "choice"
    if _AUXILIARY_START.match(question):
        return "choice" if _OPTIONS.search(question) else "yes_no"
    return "wh"


def key_term_counts(*questions: str | None) -> Counter[str]:
    """How often each content word or number (stemmed) occurs in the given questions (the user's and its
    rewrite): the larger count of the two. An answer repeating a term more often than its question names it
    anew ("Who was born first, A or B: B")."""
    stemmer = english_stemmer()
    counts: Counter[str] = Counter()
    for question in filter(None, questions):
        counts |= Counter(term.stem for term in analyse(question, stemmer).terms if term.content)
    return counts

