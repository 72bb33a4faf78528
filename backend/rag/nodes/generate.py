"""Cited generation from the graded passages, fitted to the model's context window."""

from __future__ import annotations

import re

from backend.errors import SynthesisFailed
from backend.llm.base import ChatMessage, GenerationParams
from backend.rag.answer_text import ECHO_STOPS, loop_start, tidy
from backend.rag.citations import add_missing_citations, build_context, cited_sources
from backend.rag.deps import RAGDeps
from backend.rag.nodes.events import emit, write_with_model
from backend.rag.prompts import GENERATION_PROMPT, GENERATION_WITH_RETRY_PROMPT, SYSTEM_PROMPT
from backend.rag.state import RAGState

# The model's own "the sources do not say" (the prompt asks for exactly this sentence; small models paraphrase).
_DECLINES = re.compile(
    r"(do(?:es)? not contain (?:this|that|the|any|enough) information|not (?:mentioned|found|stated|covered) in the"
    r" (?:sources|documents))",
    re.IGNORECASE,
)
_HISTORY_MESSAGE_CHARS = 600
_PROMPT_MARGIN_TOKENS = 32  # chat-template tokens around each message


def _history(state: RAGState, deps: RAGDeps) -> list[ChatMessage]:
    recent = state.get("history", [])[-deps.windows.generation :]
    return [{"role": m["role"], "content": m["content"][:_HISTORY_MESSAGE_CHARS]} for m in recent]


def _fit(messages: list[ChatMessage], deps: RAGDeps) -> list[ChatMessage]:
    """Drops the oldest history until prompt + answer fit the model's window; never overflows silently."""
    limit = deps.llm.context_window - deps.limits.answer_max_tokens
    while True:
        used = sum(deps.llm.count_tokens(m["content"]) + _PROMPT_MARGIN_TOKENS for m in messages)
        if used <= limit:
            return messages
        if len(messages) <= 2:
            raise SynthesisFailed(
                "The question and its sources do not fit the model's context window.", needed=used, window=limit
            )
        messages = [messages[0], *messages[2:]]


def generate(state: RAGState, deps: RAGDeps) -> RAGState:
    iteration = state.get("iteration", 0)
    if iteration > 0:
        emit({"type": "retry", "reason": "The previous answer was not fully supported by your documents.",
              "code": "rewrite"})
    context, used = build_context(
        state["relevant_documents"], deps.llm.count_tokens, deps.limits.context_budget_tokens
    )
    if iteration == 0:
        prompt = GENERATION_PROMPT.format(context=context, question=state["question"])
    else:
        prompt = GENERATION_WITH_RETRY_PROMPT.format(
            feedback=state.get("hallucination_details", ""), context=context, question=state["question"]
        )
    messages = _fit(
        [{"role": "system", "content": SYSTEM_PROMPT}, *_history(state, deps), {"role": "user", "content": prompt}],
        deps,
    )
    params = GenerationParams(max_tokens=deps.limits.answer_max_tokens, stop=ECHO_STOPS)
    written = write_with_model(
        deps.llm, state["chat_id"], messages, params, deps.limits.queue_patience_seconds, cut_at=loop_start
    )
    if written is None:
        # Nothing was streamed (the wait ends before the model starts): the evidence becomes the answer.
        return {"model_busy": True, "processing_steps": [f"generate:model busy (attempt {iteration + 1})"]}
    raw = tidy(written)
    declined = bool(_DECLINES.search(raw)) or not raw
    answer = raw if declined else add_missing_citations(raw, used)
    return {
        "answer": answer or "The documents do not contain this information.",
        "answer_kind": "not_found" if declined else "generated",
        "answer_synthesized": True,
        "relevant_documents": used,  # [Source N] numbers refer to this list from here on
        "sources": [] if declined else cited_sources(answer, used),
        "iteration": iteration + 1,
        "processing_steps": [f"generate:attempt {iteration + 1}"],
    }
