from __future__ import annotations

from backend.rag.citations import passage_sources
from backend.rag.deps import RAGDeps
from backend.rag.evidence import quote_evidence
from backend.rag.nodes.events import emit
from backend.rag.state import RAGState


def present_evidence(state: RAGState, deps: RAGDeps) -> RAGState:
    """Sends the passages found and the sentences that best answer the question straight away, before the model's
    turn comes: the asker reads what their documents say while the written answer waits for the model."""
    passages = state["relevant_documents"]
    emit({"type": "sources", "sources": passage_sources(passages)})
    quotes = quote_evidence(state["question"], passages, deps.embedder, state.get("answer_sentence"))
    emit({"type": "evidence", "text": quotes})
    return {
        "evidence": quotes,
        "evidence_documents": passages,
        "processing_steps": [f"evidence:{quotes.count(chr(10)) + 1} quotes"],
    }
