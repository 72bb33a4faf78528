"""BM25 engines on BEIR SciFact: rank-bm25 (BM25Okapi, the seed's choice) vs bm25s, both with our Tokenizer.

Prints, for a 10,000-chunk collection (SciFact documents split into ~400-char pieces): index build time,
p50/p95 query latency over the 300 test queries and the rebuild-after-add time; then for BM25Store (bm25s)
the add, lazy-load and search costs at that size; then document-level nDCG@10 on SciFact (5183 docs) for both
engines, stemmed and unstemmed.

    .venv/bin/python bench/bm25.py [--data /work/shared/data/beir-scifact]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import statistics
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import bm25s
import numpy as np
from _common import timed
from rank_bm25 import BM25Okapi

from backend.models import Chunk
from backend.retrieval.tokenize import Tokenizer
from backend.stores.bm25 import K1, B, BM25Store
from backend.stores.database import create_database_engine, migrate
from backend.stores.documents import DocumentStore, new_record

COLLECTION_SIZE = 10_000
CHUNK_CHARS = 400
TOP_K = 10
ADDED_CHUNKS = 20  # about one small document's worth of children

# An engine is built from tokenized texts and returns a function from query terms to one score per text.
Scorer = Callable[[list[str]], np.ndarray]
EngineBuilder = Callable[[list[list[str]]], Scorer]


def build_rank_bm25(corpus: list[list[str]]) -> Scorer:
    engine = BM25Okapi(corpus, k1=K1, b=B)
    return lambda terms: engine.get_scores(terms)


def build_bm25s(corpus: list[list[str]]) -> Scorer:
    engine = bm25s.BM25(k1=K1, b=B)
    engine.index(corpus, show_progress=False)
    return lambda terms: engine.get_scores(terms) if terms else np.zeros(len(corpus))


ENGINES: dict[str, EngineBuilder] = {"rank-bm25": build_rank_bm25, "bm25s": build_bm25s}


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def read_test_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as rows:
        for row in csv.DictReader(rows, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return qrels


def split_into_pieces(text: str, size: int) -> list[str]:
    """Whitespace-respecting pieces of about ``size`` characters; a stand-in for the real chunker."""
    pieces, current = [], ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > size:
            pieces.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    return pieces + [current] if current else pieces


def chunk_collection(documents: list[dict], size: int) -> list[Chunk]:
    chunks: list[Chunk] = []
    for document in documents:
        for number, piece in enumerate(
            split_into_pieces(f"{document['title']}. {document['text']}", CHUNK_CHARS)
        ):
            chunks.append(
                Chunk(
                    f"{document['_id']}-c{number}",
                    f"{document['_id']}-p0",
                    document["_id"],
                    f"{document['_id']}.txt",
                    1,
                    piece,
                )
            )
            if len(chunks) == size:
                return chunks
    raise ValueError(f"the corpus yields only {len(chunks)} chunks, fewer than {size}")


def ndcg_at_k(ranked_ids: Sequence[str], relevant: dict[str, int], k: int) -> float:
    gains = [relevant.get(doc_id, 0) for doc_id in ranked_ids[:k]]
    dcg = sum(gain / math.log2(rank + 2) for rank, gain in enumerate(gains))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(gain / math.log2(rank + 2) for rank, gain in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    best = np.argpartition(-scores, k - 1)[:k]
    return best[np.argsort(-scores[best], kind="stable")]


def rank(scorer: Scorer, terms: list[str]) -> np.ndarray:
    return top_k(scorer(terms), TOP_K)


def milliseconds(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def bench_engines(chunks: list[Chunk], queries: list[list[str]], tokenizer: Tokenizer) -> None:
    corpus, tokenize_seconds = timed(lambda: [tokenizer.tokenize(chunk.text) for chunk in chunks])
    added = corpus[:ADDED_CHUNKS]
    print(
        f"\n== {len(chunks)} chunks (~{CHUNK_CHARS} chars), {len(queries)} queries; "
        f"tokenizing the chunks took {milliseconds(tokenize_seconds)}"
    )
    print(f"{'engine':<10} {'build':>11} {'query p50':>11} {'query p95':>11} {'rebuild after add':>18}")
    for name, build in ENGINES.items():
        scorer, build_seconds = timed(build, corpus)
        latencies = [timed(rank, scorer, terms)[1] for terms in queries]
        _, rebuild_seconds = timed(build, corpus + added)
        p50, p95 = np.percentile(latencies, [50, 95])
        print(
            f"{name:<10} {milliseconds(build_seconds)} {milliseconds(p50)} {milliseconds(p95)} "
            f"{milliseconds(rebuild_seconds):>18}"
        )


def bench_store(chunks: list[Chunk], query_texts: list[str], tokenizer: Tokenizer) -> None:
    """BM25Store as a cache of the chunks table (SQLite in a scratch directory)."""
    existing, added = chunks[:-ADDED_CHUNKS], chunks[-ADDED_CHUNKS:]
    with tempfile.TemporaryDirectory() as directory:
        engine = create_database_engine(f"sqlite:///{directory}/axiom.db")
        migrate(engine)
        documents = DocumentStore(engine)
        cache = Path(directory) / "bm25"
        store = BM25Store(cache, tokenizer, documents)
        _store_as_document(documents, "existing", existing)
        _, first_add = timed(store.refresh, "bench")
        _store_as_document(documents, "added", added)
        _, next_add = timed(store.refresh, "bench")
        file_size = (cache / "chat_bench.jsonl").stat().st_size
        restarted = BM25Store(cache, tokenizer, documents)
        _, lazy_load = timed(restarted.count, "bench")
        latencies = [timed(restarted.search, "bench", text, TOP_K)[1] for text in query_texts]
        engine.dispose()
    p50, p95 = np.percentile(latencies, [50, 95])
    print(f"\n== BM25Store (bm25s) at {len(chunks)} chunks, cache file {file_size / 1e6:.1f} MB")
    print(f"first search after {len(existing)} chunks were stored (read + tokenize + build + save): "
          f"{milliseconds(first_add)}")
    print(f"first search after {len(added)} more (read + tokenize the new + build + save): {milliseconds(next_add)}")
    print(f"first use after a restart (read cache file + build):              {milliseconds(lazy_load)}")
    print(f"search incl. query tokenizing and version check: p50 {milliseconds(p50)}, p95 {milliseconds(p95)}")


def _store_as_document(documents: DocumentStore, document_id: str, chunks: list[Chunk]) -> None:
    record = new_record(
        document_id=document_id, chat_id="bench", filename=f"{document_id}.txt", sha256=document_id,
        file_type="txt", size_bytes=1, page_count=1,
    )
    documents.begin(record)
    documents.mark_ready(record, [], chunks)


def bench_quality(documents: list[dict], queries: dict[str, str], qrels: dict[str, dict[str, int]]) -> None:
    doc_ids = [document["_id"] for document in documents]
    texts = [f"{document['title']} {document['text']}" for document in documents]
    test_ids = [query_id for query_id in qrels if query_id in queries]
    print(f"\n== nDCG@{TOP_K}, document level: {len(documents)} docs, {len(test_ids)} test queries")
    for stem in (True, False):
        tokenizer = Tokenizer(stem=stem)
        corpus = [tokenizer.tokenize(text) for text in texts]
        for name, build in ENGINES.items():
            scorer = build(corpus)
            per_query = [
                ndcg_at_k(
                    [doc_ids[i] for i in rank(scorer, tokenizer.tokenize(queries[query_id]))],
                    qrels[query_id],
                    TOP_K,
                )
                for query_id in test_ids
            ]
            print(f"{name:<10} {'stemmed' if stem else 'unstemmed':<10} {statistics.mean(per_query):.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data/beir-scifact"))
    data = parser.parse_args().data

    documents = read_jsonl(data / "corpus.jsonl")
    queries = {query["_id"]: query["text"] for query in read_jsonl(data / "queries.jsonl")}
    qrels = read_test_qrels(data / "qrels" / "test.tsv")
    test_texts = [queries[query_id] for query_id in qrels if query_id in queries]
    tokenizer = Tokenizer()
    chunks = chunk_collection(documents, COLLECTION_SIZE)
    # Wall-clock times scale with whatever else runs on the machine, so say how busy it was.
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")

    bench_engines(chunks, [tokenizer.tokenize(text) for text in test_texts], tokenizer)
    bench_store(chunks, test_texts, tokenizer)
    bench_quality(documents, queries, qrels)


if __name__ == "__main__":
    main()
