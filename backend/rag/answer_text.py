"""Tidying a model's raw answer before it is checked: small models echo the prompt and repeat themselves.

Both are also stopped while the model writes, so a looping model does not run on to its token limit (three
attempts of 384 tokens take minutes on a laptop CPU): the echo by a stop string the provider watches
(``ECHO_STOPS``), the repetition by ``loop_start``, which the caller checks as the answer streams in.
"""

from __future__ import annotations

import re

from backend.rag.grounding import split_sentences, strip_citations

# The prompt ends "Question: … Answer:", and a small model may start by writing that pair out again.
_QUESTION_ECHO = re.compile(r"^\s*Question:.*?\bAnswer:\s*", re.DOTALL | re.IGNORECASE)
# Where a model that echoes the prompt's format starts a new round of it; generation stops there.
ECHO_STOPS = ("\nQuestion:", " Question:")

# A run this long said a second time is the model looping: the same sentence, list item or cycle of items again.
# Shorter runs recur in real answers ("according to the report, the"), this long ones hardly ever.
LOOP_WORDS = 12
# What the loop check does not compare: citations and list markers, whose numbers change from one round of a loop to
# the next ("1. Worms [Source 1] 2. Pellets … 5. Worms [Source 3]"). Numbers in the text itself are compared:
# "In 2019 the rate was 5%. In 2020 the rate was 6%." is a list, not a loop.
_LOOP_IGNORED = re.compile(r"\[[^\]\n]*\]|^[ \t]*(?:\d+[.)]|[-*•])", re.MULTILINE)
_LOOP_WORD = re.compile(r"[^\W_]+")
# The marker of the list item a loop starts again with ("4. ", "- "): it belongs to the repeat.
_OPEN_LIST_MARKER = re.compile(r"\n[ \t]*(?:\d+[.)]|[-*•])?[ \t]*$")


def strip_question_echo(answer: str) -> str:
    return _QUESTION_ECHO.sub("", answer, count=1)


def loop_start(answer: str, run: int = LOOP_WORDS) -> int | None:
    """Where ``answer`` starts saying again a run of ``run`` words it has said before (the character offset of that
    second saying), or None while it has not. Cutting there keeps one full round of a loop."""
    # Blanked, not removed, so that offsets in the masked text are offsets in the answer.
    masked = _LOOP_IGNORED.sub(lambda ignored: " " * len(ignored.group()), answer)
    words = list(_LOOP_WORD.finditer(masked))
    seen: set[tuple[str, ...]] = set()
    for start in range(len(words) - run + 1):
        window = tuple(match.group().casefold() for match in words[start : start + run])
        if window in seen:
            offset = words[start].start()
            marker = _OPEN_LIST_MARKER.search(answer, 0, offset)
            return marker.start() if marker else offset
        seen.add(window)
    return None


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
