from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from backend.api.deps import get_services
from backend.container import Services

router = APIRouter()


@router.get("/health")
def health(services: Annotated[Services, Depends(get_services)]) -> dict:
    settings = services.settings
    counts = services.documents.totals()
    return {
        "status": "ok",
        "documents": counts.documents,
        "chunks": counts.chunks,
        "embedding": {"provider": settings.embedding_provider, "model": services.embedder.model_id},
        "vector_store": "chroma-server" if settings.chroma_host else "chroma-embedded",
        "retrieval": {"fusion": settings.fusion_method, "reranker": services.retriever.reranker.name},
    }
