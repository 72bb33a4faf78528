"""The model's side of answerability: the prompt a capable LLM is asked whether the closest passages answer the
question, and a tolerant parser of its reply (the rules' side is answerability.py; who decides,
answerability_judge.py)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from backend.llm.base import ChatMessage, GenerationParams
from backend.models import Passage
from backend.rag.citations import build_context

ANSWERABILITY_PROMPT = """You decide whether the SOURCES answer the QUESTION.
They answer it only if a source states the answer itself: a name for "who", a date for "when", a number
for "how many". Sources about the same topic that do not state the answer do not answer it.
Do not use outside knowledge.

SOURCES:
{sources}

QUESTION: {question}

Reply with JSON only: {{"answerable": true}} or {{"answerable": false}}"""

# The reply is held to this schema where the provider can (a grammar for llama.cpp, response_format for an
# OpenAI-compatible server, format for Ollama), as the intent router's is: a small model then still gives a
# verdict, not an answer to the question. A server that ignores the schema may reply in prose; the parser reads it.
_VERDICT_SCHEMA = {
    "type": "object",
    "properties": {"answerable": {"type": "boolean"}},
    "required": ["answerable"],
}
ANSWERABILITY_PARAMS = GenerationParams(max_tokens=24, temperature=0.0, json_schema=_VERDICT_SCHEMA)


def answerability_messages(
    question: str, passages: Sequence[Passage], count_tokens: Callable[[str], int], budget_tokens: int
) -> list[ChatMessage]:
    """The judge's prompt over the passages, numbered and fitted to ``budget_tokens`` as for a written answer, so
    the model reads what it would write from."""
    context, _ = build_context(passages, count_tokens, budget_tokens)
    return [{"role": "user", "content": ANSWERABILITY_PROMPT.format(sources=context, question=question)}]


_MARKUP = re.compile(r"[*_`#>]+")
_VALUE = r"(?P<value>yes|no|true|false)\b"
_EITHER = r"(?:yes|no|true|false)\b"
# The prompt's own choice echoed back ("YES or NO", '{"answerable": true} or {"answerable": false}') is no verdict.
_CHOICE = re.compile(
    rf"\b{_EITHER}[\"'}}\s]*(?:or|/|\|)\s*\{{?\s*(?:[\"']?answerable[\"']?\s*[:=]\s*)?{_EITHER}", re.IGNORECASE
)
_FIELD = re.compile(rf"\banswerable\b[\"']?\s*[:=\-–]\s*[\"'\[(]?\s*{_VALUE}", re.IGNORECASE)
_LEADING = re.compile(rf"^\W*{_VALUE}", re.IGNORECASE)
_PROSE_NO = re.compile(
    r"\b(?:not|cannot|can't|don't|doesn't|do not|does not)\b[^.\n]{0,30}?\banswer"
    r"|\bunanswerable\b"
    r"|\b(?:do|does)\s+not\s+(?:contain|state|say|mention|include|provide)\b",
    re.IGNORECASE,
)
_PROSE_YES = re.compile(
    r"\b(?:is|are)\s+answerable\b|\b(?:sources?|passages?)\s+(?:do(?:es)?\s+)?(?:answers?|states?)\b",
    re.IGNORECASE,
)
_WORDS = {"yes": True, "true": True, "no": False, "false": False}


def parse_answerable(reply: str) -> bool | None:
    """The verdict from a reply: JSON ({"answerable": false}) or a field line ("ANSWERABLE: YES"), tolerant of
    case, markdown, a bare "Yes." or "No, …" and prose ("the sources do not answer the question"). None when no
    verdict can be read: an empty reply, the prompt's choice echoed, or words that say neither."""
    plain = _CHOICE.sub(" ", _MARKUP.sub("", reply)).strip()
    if field := _FIELD.search(plain):
        return _WORDS[field["value"].casefold()]
    if leading := _LEADING.match(plain):
        return _WORDS[leading["value"].casefold()]
    if _PROSE_NO.search(plain):
        return False
    return True if _PROSE_YES.search(plain) else None
