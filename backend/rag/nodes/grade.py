from __future__ import annotations

from backend.rag.deps import RAGDeps
from backend.rag.state import RAGState


def grade_documents(state: RAGState, deps: RAGDeps) -> RAGState:
    """Reranks the retrieved passages and keeps the top ``final_k`` above the relevance threshold; none left
    means the documents do not answer the question."""
    query = state.get("rewritten_query") or state["question"]
    relevant = deps.retriever.grade(query, state.get("retrieved_documents", []))
    best = relevant[0].score if relevant else 0.0
    return {"relevant_documents": relevant, "processing_steps": [f"grade:{len(relevant)} relevant (best {best:.2f})"]}
