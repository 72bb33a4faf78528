"""Another replica in the same test process: an IngestionService of its own (its own chat locks, as another process
has) over the same stores."""

from __future__ import annotations

from sqlalchemy import text

from backend.ingest.service import IngestionService, load_here


def replica_with(services, *, vectors=None, embedder=None, keywords=None) -> IngestionService:
    return IngestionService(
        chunker=services.ingestion._chunker, embedder=embedder or services.embedder,
        vectors=vectors or services.vectors, keywords=keywords or services.keywords, documents=services.documents,
        load=load_here,
    )


def waiting_for_a_lock(services) -> bool:
    """Whether a process (or a replica in this one) waits for another's advisory lock right now: a document being
    stored (``DocumentStore.storing``) or a chat's turn (PostgreSQL)."""
    with services.database.connect() as db:
        return bool(db.execute(text(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )).scalar_one())
