"""Replica timings: the BM25 cache rebuild at ~10,000 chunks, and two `axiom serve` replicas on one PostgreSQL and
one `chroma run` (upload through A, first question through B).

Usage: .venv/bin/python bench/replicas.py [--chunks 10000] [--database-url URL] [--replicas]
The rebuild part stores SciFact abstracts, cut into ~400-character chunks, as ready documents (SQLite in a scratch
directory unless --database-url) and times, for one chat: a replica's first search with no cache (reads every
chunk and tokenizes it), a restarted replica's first search (reads its cache file), the first search after
another replica added one document (reads the chunks, tokenizes only the new one, rebuilds the engines), and a
search when the cache is current (the version check included). --replicas also starts PostgreSQL (Debian's
binaries), a Chroma server and two replicas with the bundled models, as tests/e2e/test_replicas.py does.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, shared_data, timed

from backend.eval.beir import load_beir
from backend.models import Chunk
from backend.retrieval.tokenize import Tokenizer
from backend.stores.bm25 import BM25Store
from backend.stores.database import create_database_engine, migrate
from backend.stores.documents import DocumentStore, new_record

CHAT = "rebuild"
CHUNK_CHARS = 400


def store_corpus(documents: DocumentStore, chunks_wanted: int) -> int:
    dataset = load_beir(shared_data() / "beir-scifact")
    stored = 0
    for number, (doc_id, text) in enumerate(dataset.corpus.items()):
        if stored >= chunks_wanted:
            break
        document_id = f"d{number}"
        chunks = [
            Chunk(f"{document_id}-c{i}", f"{document_id}-p0", document_id, f"{doc_id}.txt", 1,
                  text[start : start + CHUNK_CHARS])
            for i, start in enumerate(range(0, len(text), CHUNK_CHARS))
        ]
        add_document(documents, document_id, chunks)
        stored += len(chunks)
    return stored


def add_document(documents: DocumentStore, document_id: str, chunks: list[Chunk]) -> None:
    record = new_record(
        document_id=document_id, chat_id=CHAT, filename=f"{document_id}.txt", sha256=document_id,
        file_type="txt", size_bytes=1, page_count=1,
    )
    documents.begin(record)
    documents.mark_ready(record, [], chunks)


def bench_rebuild(work: Path, chunks_wanted: int, url: str | None) -> None:
    engine = create_database_engine(url or f"sqlite:///{work / 'axiom.db'}")
    migrate(engine)
    documents = DocumentStore(engine)
    started = time.perf_counter()
    stored = store_corpus(documents, chunks_wanted)
    print(f"{stored} chunks stored in {engine.dialect.name} in {time.perf_counter() - started:.1f} s")
    tokenizer = Tokenizer()
    query = "vitamin D deficiency and bone density"

    replica = BM25Store(work / "cache-a", tokenizer, documents)
    _, cold = timed(replica.search, CHAT, query, 10)
    restarted = BM25Store(work / "cache-a", tokenizer, documents)
    _, from_file = timed(restarted.search, CHAT, query, 10)
    extra = [Chunk(f"new-c{i}", "new-p0", "new", "new.txt", 1, f"Another replica's upload, part {i}.")
             for i in range(20)]
    add_document(documents, "new", extra)
    _, after_add = timed(replica.search, CHAT, query, 10)
    current = [timed(replica.search, CHAT, query, 10)[1] for _ in range(200)]
    print(f"first search, no cache (read + tokenize + index):    {cold * 1000:8.0f} ms")
    print(f"first search after a restart (cache file + index):   {from_file * 1000:8.0f} ms")
    print(f"first search after another replica's upload:         {after_add * 1000:8.0f} ms")
    print(f"search with the cache current, p50 (version check):  {statistics.median(current) * 1000:8.2f} ms")
    engine.dispose()


def bench_replicas(work: Path) -> None:
    sys.path.insert(0, str(REPO))
    from tests.api.support import upload_paths
    from tests.e2e.test_replicas import LEASE_SECONDS, PAPER, QUESTION, replica
    from tests.support.chroma_server import start_chroma_server
    from tests.support.postgres import PostgresServer, find_binaries

    binaries = find_binaries()
    if binaries is None:
        sys.exit("PostgreSQL's binaries were not found: scripts/install-postgresql.sh installs them")
    postgres = PostgresServer.start(binaries)
    (work / "chroma").mkdir()
    chroma = start_chroma_server(work / "chroma")
    environment = {
        "AXIOM_DATABASE_URL": postgres.create_database(), "AXIOM_CHROMA_HOST": chroma.host,
        "AXIOM_CHROMA_PORT": str(chroma.port), "AXIOM_INGEST_LEASE_SECONDS": str(LEASE_SECONDS),
    }
    try:
        with (
            replica("A", work / "a", environment) as a, replica("B", work / "b", environment) as b,
            a.client() as client_a, b.client() as client_b,
        ):
            _, ingest = timed(upload_paths, client_a, "bench", shared_data() / "pdfs" / PAPER)
            ask = {"message": QUESTION, "chat_id": "bench", "session_id": "bench"}
            _, first = timed(lambda: client_b.post("/chat/", json=ask).raise_for_status())
            _, second = timed(lambda: client_b.post("/chat/", json=ask).raise_for_status())
        print(f"upload of {PAPER} through A (indexed in the request): {ingest:6.1f} s")
        print(f"first question through B (BM25 cache built from PostgreSQL): {first:6.1f} s")
        print(f"second question through B (cache current): {second:6.1f} s")
    finally:
        chroma.stop()
        postgres.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--database-url", help="SQLAlchemy URL of an empty database (default: SQLite, scratch)")
    parser.add_argument("--replicas", action="store_true", help="also time two replicas on PostgreSQL")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="axiom-bench-") as work:
        bench_rebuild(Path(work), args.chunks, args.database_url)
        if args.replicas:
            bench_replicas(Path(work))


if __name__ == "__main__":
    main()
