"""The complexity router (seed §5 step 1), deterministic: a 135M-parameter model cannot be trusted with it, and
rules cost nothing. Simple questions skip the rewrite; conversational and complex ones are rewritten with the
recent conversation; summary requests read the whole chat in page order."""

from __future__ import annotations

import re
from collections.abc import Sequence

from backend.llm.base import ChatMessage
from backend.rag.deps import RAGDeps
from backend.rag.state import Complexity, RAGState

_SUMMARY = re.compile(
    r"\b(summari[sz]e|summary|overview|tl;?dr|key (?:points|takeaways|findings)|main (?:points|ideas)"
    r"|what (?:is|are) (?:this|these|the|my) (?:documents?|files?|papers?|pdfs?|reports?) about)\b",
    re.IGNORECASE,
)
_REFERENCE = re.compile(
    r"\b(it|its|this|that|these|those|they|them|their|he|she|his|her|the (?:former|latter|same|above))\b",
    re.IGNORECASE,
)
_CONTINUATION = re.compile(r"^\s*(and|but|also|so|what about|how about)\b", re.IGNORECASE)
_ANALYTICAL = re.compile(
    r"\b(compare|comparison|differences?|versus|vs\.?|contrast|relationship between|pros and cons"
    r"|advantages|disadvantages|why|impact|affect|effects? of|implications?)\b",
    re.IGNORECASE,
)
_LONG_QUESTION_WORDS = 25
_SHORT_SUMMARY_WORDS = 15


def complexity_of(question: str, history: Sequence[ChatMessage]) -> Complexity:
    words = question.split()
    if _SUMMARY.search(question) and len(words) <= _SHORT_SUMMARY_WORDS:
        return "summarize"
    if history and (_REFERENCE.search(question) or _CONTINUATION.match(question)):
        return "conversational"
    if _ANALYTICAL.search(question) or question.count("?") > 1 or len(words) > _LONG_QUESTION_WORDS:
        return "complex"
    return "simple"


def classify_complexity(state: RAGState, deps: RAGDeps) -> RAGState:
    complexity = complexity_of(state["question"], state.get("history", [])[-deps.windows.router :])
    return {
        "query_complexity": complexity,
        "skip_rewrite": complexity in ("simple", "summarize"),
        "is_summarization": complexity == "summarize",
        "query_type": {"simple": "factual", "complex": "analytical"}.get(complexity, complexity),
        "processing_steps": [f"complexity:{complexity}"],
    }
