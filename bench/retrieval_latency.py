"""Hybrid retrieval latency over a ~10,000-chunk chat, excluding the query embedding.

Usage: .venv/bin/python bench/retrieval_latency.py [--chunks 10000] [--queries 200]
Builds the chat from BEIR SciFact abstracts with the real ingestion (embeddings come from the content-hash cache
after the first run), then times each stage per query with the query embedding already cached.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import scratch_services, shared_data

from backend.eval.beir import load_beir
from backend.eval.metrics import percentile

CHAT = "latency"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()

    dataset = load_beir(shared_data() / "beir-scifact")
    with tempfile.TemporaryDirectory(prefix="axiom-bench-") as work:
        services = scratch_services(Path(work))
        doc_ids = list(dataset.corpus)
        started = time.perf_counter()
        next_doc = 0
        while services.keywords.count(CHAT) < args.chunks and next_doc < len(doc_ids):
            batch = doc_ids[next_doc : next_doc + 200]
            services.ingestion.ingest_many(
                CHAT, [(f"d{next_doc + i}.txt", dataset.corpus[d].encode()) for i, d in enumerate(batch)]
            )
            next_doc += len(batch)
        build_s = time.perf_counter() - started
        print(f"chat of {services.keywords.count(CHAT)} chunks from {next_doc} documents, built in {build_s:.1f} s")

        queries = list(dataset.queries.values())[: args.queries]
        for query in queries:
            services.embedder.embed_query(query)  # excluded from the timings: served from the cache below
        retriever = services.retriever
        retriever.fused(CHAT, queries[0])  # loads the BM25 index lazily, as the first real query would
        stages: dict[str, list[float]] = {
            k: [] for k in ("dense", "bm25", "bm25-par", "fuse+cut", "expand", "rerank", "total")
        }
        for query in queries:
            t0 = time.perf_counter()
            dense = services.dense.search(CHAT, query, retriever.depths.vector_k)
            t1 = time.perf_counter()
            sparse = services.sparse.search(CHAT, query, retriever.depths.bm25_k)
            t_parents = time.perf_counter()
            services.keywords.search_parents(CHAT, query, retriever.depths.bm25_parent_k)
            t2 = time.perf_counter()
            ranked, _ = retriever.fused(CHAT, query)
            t3 = time.perf_counter()
            passages = retriever.expand(ranked)
            t4 = time.perf_counter()
            retriever.reranker.rerank(query, passages)
            t5 = time.perf_counter()
            full_started = time.perf_counter()
            retriever.retrieve(CHAT, query)
            total = time.perf_counter() - full_started
            for name, seconds in (("dense", t1 - t0), ("bm25", t_parents - t1), ("bm25-par", t2 - t_parents),
                                  ("fuse+cut", t3 - t2),
                                  ("expand", t4 - t3), ("rerank", t5 - t4), ("total", total)):
                stages[name].append(seconds * 1000)
            assert dense or sparse
        print(f"{len(queries)} queries; ms per query (fuse+cut re-runs every retriever; total = retrieve() end to end)")
        print(f"{'stage':<10}{'p50':>8}{'p95':>8}{'mean':>8}")
        for name, values in stages.items():
            print(f"{name:<10}{percentile(values, 50):>8.1f}{percentile(values, 95):>8.1f}{statistics.mean(values):>8.1f}")


if __name__ == "__main__":
    main()
