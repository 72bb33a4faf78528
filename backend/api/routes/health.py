"""Liveness plus what the service runs on: document and chunk counts, the LLM, embedder and vector store, and
whether a Chroma server answers."""

from __future__ import annotations

from fastapi import APIRouter

from backend.api.deps import ServicesDep
from backend.api.schemas import EmbeddingInfo, Health, RetrievalInfo

router = APIRouter(tags=["health"])


@router.get("/health", response_model=Health)
def health(services: ServicesDep) -> Health:
    """A frozen Chroma server makes this take up to AXIOM_CHROMA_TIMEOUT_SECONDS (its heartbeat's bound)."""
    settings, vectors = services.settings, services.vectors
    counts = services.documents.totals()
    reachable = vectors.is_reachable()
    return Health(
        status="ok" if reachable else "degraded",
        documents=counts.documents,
        chunks=counts.chunks,
        llm=services.llm.name,
        embedding=EmbeddingInfo(provider=settings.embedding_provider, model=services.embedder.model_id),
        vector_store="chroma-server" if vectors.is_server else "chroma-embedded",
        vector_store_reachable=reachable,
        retrieval=RetrievalInfo(fusion=settings.fusion_method, reranker=services.retriever.reranker.name),
    )
