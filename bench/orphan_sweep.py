"""What the recovery sweep's search for orphaned vectors costs (``IngestionService.free_orphans``): one chat of
~10,000 chunks in an embedded Chroma and SQLite (or --chroma-host/--chroma-port and --database-url), every chunk's
document with a row, timed with no orphan (the cost of every sweep), then with one orphaned document of 100
chunks to free; and, for comparison, reading every chunk's metadata (what a search that reads the whole
collection would cost). Vectors are random: what is timed is Chroma's metadata filter, not the embedder.

Usage: .venv/bin/python bench/orphan_sweep.py [--chunks 10000] [--documents 100] [--database-url URL]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from backend.config import Settings
from backend.ingest.service import IngestionService
from backend.models import Chunk
from backend.retrieval.tokenize import Tokenizer
from backend.stores.bm25 import BM25Store
from backend.stores.chroma import ChromaStore
from backend.stores.database import create_database_engine, database_url, migrate
from backend.stores.documents import DocumentStore, new_record

CHAT = "big"


def chunks_of(document_id: str, count: int) -> list[Chunk]:
    return [Chunk(f"{document_id}-p0-c{i}", f"{document_id}-p0", document_id, f"{document_id}.txt", 1, "text " * 60)
            for i in range(count)]


def random_vectors(count: int, rng: np.random.Generator) -> np.ndarray:
    vectors = rng.standard_normal((count, 384)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--documents", type=int, default=100)
    parser.add_argument("--database-url")
    parser.add_argument("--chroma-host")
    parser.add_argument("--chroma-port", type=int, default=8000)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        settings = Settings(data_dir=Path(scratch), database_url=args.database_url, chroma_host=args.chroma_host,
                            chroma_port=args.chroma_port)
        engine = create_database_engine(database_url(settings))
        migrate(engine)
        documents, vectors = DocumentStore(engine), ChromaStore.from_settings(settings)
        ingestion = IngestionService(
            chunker=None, embedder=None, vectors=vectors,  # nothing is read or embedded here
            keywords=BM25Store(Path(scratch) / "bm25", Tokenizer(), documents), documents=documents,
        )
        rng = np.random.default_rng(0)
        per_document = args.chunks // args.documents
        for number in range(args.documents):
            document_id = f"doc{number:05d}"
            record = new_record(document_id=document_id, chat_id=CHAT, filename=f"{document_id}.txt",
                                sha256=document_id, file_type="txt", size_bytes=1, page_count=1)
            chunks = chunks_of(document_id, per_document)
            documents.begin(record)
            vectors.add(CHAT, chunks, random_vectors(len(chunks), rng))
            documents.mark_ready(record, [], chunks)
        print(f"one chat of {vectors.count(CHAT)} chunks in {args.documents} documents "
              f"({'Chroma server' if args.chroma_host else 'embedded Chroma'}, {engine.dialect.name})")

        times = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            assert ingestion.free_orphans(CHAT) == []
            times.append(time.perf_counter() - started)
        print(f"  a sweep's look, no orphan:            median {statistics.median(times) * 1000:7.1f} ms")

        orphan = chunks_of("orphan", 100)
        vectors.add(CHAT, orphan, random_vectors(len(orphan), rng))
        started = time.perf_counter()
        assert ingestion.free_orphans(CHAT) == ["orphan"]
        print(f"  a sweep's look freeing 100 chunks:           {(time.perf_counter() - started) * 1000:7.1f} ms")

        times = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            vectors.document_ids(CHAT)
            times.append(time.perf_counter() - started)
        print(f"  reading every chunk's metadata instead: median {statistics.median(times) * 1000:7.1f} ms")
        vectors.close()
        engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
