"""Liveness plus what the service runs on: document and chunk counts, the LLM, embedder and vector store."""

from __future__ import annotations

from fastapi import APIRouter

from backend.api.deps import ServicesDep

router = APIRouter(tags=["health"])


@router.get("/health")
def health(services: ServicesDep) -> dict:
    settings = services.settings
    counts = services.documents.totals()
    return {
        "status": "ok",
        "documents": counts.documents,
        "chunks": counts.chunks,
        "llm": services.llm.name,
        "embedding": {"provider": settings.embedding_provider, "model": services.embedder.model_id},
        "vector_store": "chroma-server" if settings.chroma_host else "chroma-embedded",
        "retrieval": {"fusion": settings.fusion_method, "reranker": services.retriever.reranker.name},
    }
