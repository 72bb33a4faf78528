"""The capable LLM's side of the check: the prompt a verifier sends and a tolerant parser of its reply."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from backend.rag.grounding.sentences import LIST_MARKER


@dataclass(frozen=True, slots=True)
class LLMVerdict:
    grounded: bool | None
    score: float | None
    issues: list[str] = field(default_factory=list)

    @property
    def usable(self) -> bool:
        return self.grounded is not None or self.score is not None



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
        line = LIST_MARKER.sub("", line).strip()
        if line and not _NO_ISSUES.match(line):
            issues.append(line)
    return issues
