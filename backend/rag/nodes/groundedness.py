"""The groundedness check, and the extractive answer used when regenerations keep failing it."""

from __future__ import annotations

import re

import numpy as np

from backend.rag.citations import cited_numbers, cited_sources
from backend.rag.deps import RAGDeps
from backend.rag.grounding import says_enough_to_check, split_sentences
from backend.rag.nodes.events import emit, status, token
from backend.rag.prompts import EXTRACTIVE_PREFIX
from backend.rag.state import RAGState

_EXTRACTIVE_SENTENCES = 3
_MIN_SENTENCE_CHARS, _MAX_SENTENCE_CHARS = 30, 400
_SENTENCE_CLOSE = re.compile(r"[.!?…:;][\"'”’)\]]*$")


def check_groundedness(state: RAGState, deps: RAGDeps) -> RAGState:
    if state.get("answer_kind") == "not_found":
        return {"is_grounded": True, "groundedness_score": 1.0, "skip_llm_hallucination_check": True,
                "processing_steps": ["check:declined, nothing to check"]}
    status("checking", "Checking the answer against your documents…")
    # Here, not inside the checker: a chat answer should be a sentence, but the checker also judges short span
    # answers (202 of HaluEval's 1,000 are one or two words, 184 of them correct) that this rule would reject.
    if not says_enough_to_check(state["answer"]):
        return {"is_grounded": False, "groundedness_score": 0.0, "skip_llm_hallucination_check": True,
                "hallucination_details": "The answer is too short to check: state the fact in a full sentence.",
                "processing_steps": ["check:not grounded (too little to check)"]}
    passages = state["relevant_documents"]
    cited = [passages[n - 1] for n in cited_numbers(state["answer"]) if 1 <= n <= len(passages)] or passages
    verdict = deps.checker.check(state["answer"], [p.parent.text for p in cited])
    return {
        "is_grounded": verdict.is_grounded,
        "groundedness_score": verdict.score,
        "fast_groundedness_score": verdict.fast_score,
        "skip_llm_hallucination_check": verdict.method == "fast",
        "hallucination_details": "\n".join(verdict.issues),
        "processing_steps": [f"check:{'grounded' if verdict.is_grounded else 'not grounded'} ({verdict.method})"],
    }


def answer_extractively(state: RAGState, deps: RAGDeps) -> RAGState:
    """The sentences of the sources closest to the question, quoted with their citations: never the rejected
    text. Flagged so the caller can say it is not a written answer."""
    passages = state["relevant_documents"]
    candidates = [
        (index, position, sentence)
        for index, passage in enumerate(passages)
        for position, sentence in enumerate(_whole_sentences(passage.parent.text))
        if _MIN_SENTENCE_CHARS <= len(sentence) <= _MAX_SENTENCE_CHARS
    ]
    if candidates:
        query = deps.embedder.embed_query(state["question"])
        scores = deps.embedder.embed_documents([c[2] for c in candidates]) @ query
        best = sorted(_distinct(np.argsort(-scores).tolist(), [c[2] for c in candidates]),
                      key=lambda i: candidates[i][:2])
        quotes = [f"- “{' '.join(candidates[i][2].split())}” [Source {candidates[i][0] + 1}]" for i in best]
    else:
        quotes = [f"- “{' '.join(p.best_chunk.text.split())}” [Source {n}]" for n, p in enumerate(passages[:1], 1)]
    answer = f"{EXTRACTIVE_PREFIX}\n\n" + "\n".join(quotes)
    emit({"type": "retry", "reason": "Showing the relevant passages instead of an unsupported answer."})
    token(answer)
    return {
        "answer": answer,
        "answer_kind": "extractive",
        "answer_synthesized": False,
        "sources": cited_sources(answer, passages),
        "is_grounded": True,
        "groundedness_score": 1.0,
        "processing_steps": ["fallback:extractive"],
    }


def _whole_sentences(text: str) -> list[str]:
    """A passage's sentences without the last one when the passage was cut in the middle of it."""
    sentences = split_sentences(text)
    if sentences and not _SENTENCE_CLOSE.search(sentences[-1]):
        sentences.pop()
    return sentences


def _distinct(ranked: list[int], sentences: list[str]) -> list[int]:
    """The best-ranked sentences, skipping any that repeats one already taken: overlapping passages hold the same
    sentence twice, once cut off at a passage's end."""
    taken: list[int] = []
    for index in ranked:
        words = sentences[index].split()
        if not any(_repeats(words, sentences[other].split()) for other in taken):
            taken.append(index)
        if len(taken) == _EXTRACTIVE_SENTENCES:
            break
    return taken


def _repeats(words: list[str], other: list[str]) -> bool:
    shorter, longer = sorted((words, other), key=len)
    return " ".join(shorter) in " ".join(longer) or len(set(words) & set(other)) >= 0.8 * len(set(shorter))

