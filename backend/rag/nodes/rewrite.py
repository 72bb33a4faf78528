"""Query rewriting with the recent conversation. The rewrite is a second query, never a replacement: retrieval
runs both and fuses them, so a poor rewrite by a small model cannot lose what the original question finds."""

from __future__ import annotations

import re

from backend.llm.base import GenerationParams
from backend.llm.scheduler import ModelBusy
from backend.rag.deps import RAGDeps
from backend.rag.nodes.events import model_waiter
from backend.rag.prompts import QUERY_REWRITE_PROMPT
from backend.rag.state import RAGState

_MAX_REWRITE_WORDS = 40
_QUOTES = "\"'“”‘’`"


def clean_rewrite(raw: str, question: str, history_text: str) -> str | None:
    """The model's first line, unquoted; None when it is empty, rambling, or shares no word with the
    question or conversation (the model went off on its own)."""
    line = raw.strip().splitlines()[0].strip() if raw.strip() else ""
    line = re.sub(r"^(search query|query|rewritten query)\s*:\s*", "", line, flags=re.IGNORECASE).strip(_QUOTES + " ")
    words = set(re.findall(r"\w{3,}", line.lower()))
    known = set(re.findall(r"\w{3,}", f"{question} {history_text}".lower()))
    if not line or len(line.split()) > _MAX_REWRITE_WORDS or not words & known:
        return None
    return None if line.lower() == question.strip().lower() else line


def rewrite_query(state: RAGState, deps: RAGDeps) -> RAGState:
    history = state.get("history", [])[-deps.windows.rewrite :]
    history_text = "\n".join(f"{m['role']}: {m['content'][:400]}" for m in history)
    prompt = QUERY_REWRITE_PROMPT.format(history=history_text or "(none)", question=state["question"])
    # Only when the model is free at once: the rewrite is an extra query, not worth delaying the sources for.
    waiter = model_waiter(state["chat_id"], patience=0.0, announce=False)
    try:
        raw = deps.llm.complete(
            [{"role": "user", "content": prompt}], GenerationParams(max_tokens=48, temperature=0.0), waiter=waiter
        )
    except ModelBusy:
        return {"rewritten_query": None, "processing_steps": ["rewrite:skipped, model busy"]}
    rewritten = clean_rewrite(raw, state["question"], history_text)
    return {
        "rewritten_query": rewritten,
        "rewrite_count": state.get("rewrite_count", 0) + 1,
        "processing_steps": [f"rewrite:{'used' if rewritten else 'discarded'}"],
    }
