"""Another replica in the same test process: an IngestionService of its own (its own chat locks, as another process
has) over the same stores."""

from __future__ import annotations

from backend.ingest.service import IngestionService, load_here


def replica_with(services, *, vectors=None, embedder=None) -> IngestionService:
    return IngestionService(
        chunker=services.ingestion._chunker, embedder=embedder or services.embedder,
        vectors=vectors or services.vectors, keywords=services.keywords, documents=services.documents,
        load=load_here,
    )
