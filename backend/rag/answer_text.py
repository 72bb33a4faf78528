"""Tidying a model's raw answer before it is checked: small models echo the prompt and repeat themselves."""

from __future__ import annotations

import re

from backend.rag.grounding import split_sentences, strip_citations

# The prompt ends "Question: … Answer:", and a small model may start by writing that pair out again.
_QUESTION_ECHO = re.compile(r"^\s*Question:.*?\bAnswer:\s*", re.DOTALL | re.IGNORECASE)
# Where a model that echoes the prompt's format starts a new round of it; generation stops there.
ECHO_STOPS = ("\nQuestion:", " Question:")


def strip_question_echo(answer: str) -> str:
    return _QUESTION_ECHO.sub("", answer, count=1)


def drop_repeated_sentences(answer: str) -> str:
    """The answer with every sentence said a second time (citations aside) left out; unchanged if none is."""
    sentences = split_sentences(answer)
    seen: set[str] = set()
    kept = []
    for sentence in sentences:
        key = " ".join(strip_citations(sentence).casefold().split())
        if key in seen:
            continue
        seen.add(key)
        kept.append(sentence)
    return answer if len(kept) == len(sentences) else " ".join(kept)


def tidy(answer: str) -> str:
    return drop_repeated_sentences(strip_question_echo(answer)).strip()
