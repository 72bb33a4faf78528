"""Embedding speed of each provider: chunks/s, single-query latency, model load time and peak RSS.

    .venv/bin/python bench/embeddings.py [--n 512] [--queries 50] [--pdf] [--providers onnx-int8 fastembed]

Chunks are full-size (300-400 char) children cut by the real chunker from BEIR SciFact abstracts (generated text
when the data set is absent), or with --pdf every child of the 400-page PDF (the real mix of lengths); queries are
SciFact claims. Each configuration runs in a fresh process, so its load
time (imports included) and its peak RSS are its own. The models are measured bare; "cached p50" is a query
served by CachedEmbedder from a warm cache.

chunks/cpu-s divides by the process's CPU time instead of wall time: on a machine that other jobs keep busy it is
the steadier number (for threads=1 it is the model's own cost; with more threads it also counts their spinning).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from backend.config import Settings
from backend.embeddings import (
    CachedEmbedder,
    Embedder,
    FastEmbedMiniLM,
    OnnxInt8MiniLM,
    SentenceTransformerMiniLM,
)
from backend.ingest.chunker import ParentChildChunker
from backend.ingest.loaders import load_document
from backend.models import LoadedDocument, Page

SCIFACT = Path("/work/shared/data/beir-scifact")
LONG_PDF = Path("/work/shared/data/pdfs/long_us_irs_irm_2.3.59_400p.pdf")


@dataclass(frozen=True)
class Config:
    label: str
    provider: str
    batch_size: int
    threads: int | None = None  # onnx-int8: batches at once, one core each; fastembed: onnxruntime's threads
    memory_arena: bool = False

    def build(self) -> Embedder:
        if self.provider == "onnx-int8":
            model_dir = Settings().embedding_model_dir
            assert model_dir is not None
            return OnnxInt8MiniLM(
                model_dir, batch_size=self.batch_size, workers=self.threads, memory_arena=self.memory_arena
            )
        if self.provider == "fastembed":
            return FastEmbedMiniLM(batch_size=self.batch_size, threads=self.threads, memory_arena=self.memory_arena)
        return SentenceTransformerMiniLM(batch_size=self.batch_size)


@dataclass(frozen=True)
class Result:
    config: Config
    load_s: float
    chunks_per_s: float
    chunks_per_cpu_s: float
    query_p50_ms: float
    cached_query_p50_ms: float
    peak_rss_mib: float


def configurations() -> list[Config]:
    """Each provider's default first, then the variants worth comparing (``threads=None``: every core)."""
    onnx_int8 = [Config("onnx-int8 (default)", "onnx-int8", 1)] + [
        Config("onnx-int8", "onnx-int8", batch_size, threads)
        for batch_size, threads in [(1, 1), (2, 1), (4, 1), (8, 1), (8, None)]
    ]
    fastembed = [
        Config("fastembed", "fastembed", batch_size, threads)
        for batch_size, threads in [(8, None), (8, 1), (2, 1), (32, None)]
    ]
    sentence_transformers = [
        Config("sentence-transformers", "sentence-transformers", batch_size) for batch_size in (8, 32)
    ]
    return onnx_int8 + fastembed + sentence_transformers


def _jsonl(path: Path) -> list[dict]:
    with path.open() as lines:
        return [json.loads(line) for line in lines]


def load_chunks(settings: Settings, n: int) -> list[str]:
    chunker = ParentChildChunker(
        settings.parent_chunk_size,
        settings.parent_chunk_overlap,
        settings.child_chunk_size,
        settings.child_chunk_overlap,
    )
    corpus = SCIFACT / "corpus.jsonl"
    if corpus.exists():
        pages = (f"{doc['title']}\n\n{doc['text']}" for doc in _jsonl(corpus))
    else:
        pages = (
            f"Section {i}. "
            + " ".join(
                f"Finding {i}.{j} reports that sample {j} improved by {i * j} percent." for j in range(30)
            )
            for i in range(10_000)
        )
    documents = (LoadedDocument(f"doc{i}.txt", "txt", (Page(1, text),)) for i, text in enumerate(pages))
    children = (chunk.text for i, doc in enumerate(documents) for chunk in chunker.chunk(doc, f"d{i}")[1])
    # Full-size children only: the short tail of each abstract would flatter the throughput.
    full_size = (text for text in children if len(text) >= 0.75 * settings.child_chunk_size)
    return list(islice(full_size, n))


def load_pdf_chunks(settings: Settings) -> list[str]:
    chunker = ParentChildChunker(
        settings.parent_chunk_size,
        settings.parent_chunk_overlap,
        settings.child_chunk_size,
        settings.child_chunk_overlap,
    )
    document = load_document(LONG_PDF.name, LONG_PDF.read_bytes())
    return [chunk.text for chunk in chunker.chunk(document, "pdf")[1]]


def load_queries(n: int) -> list[str]:
    queries = SCIFACT / "queries.jsonl"
    if queries.exists():
        return [q["text"] for q in _jsonl(queries)[:n]]
    return [f"Does treatment {i} improve outcome {i % 7}?" for i in range(n)]


def _median_ms(call: Callable[[str], object], texts: list[str]) -> float:
    timings = []
    for text in texts:
        start = time.perf_counter()
        call(text)
        timings.append((time.perf_counter() - start) * 1000)
    return statistics.median(timings)


def measure(config: Config, chunks: list[str], queries: list[str]) -> Result:
    start = time.perf_counter()
    embedder = config.build()
    load_s = time.perf_counter() - start

    embedder.embed_documents(chunks[:8])  # first-run allocations stay out of the throughput number
    start, cpu_start = time.perf_counter(), time.process_time()
    embedder.embed_documents(chunks)
    chunks_per_s = len(chunks) / (time.perf_counter() - start)
    chunks_per_cpu_s = len(chunks) / (time.process_time() - cpu_start)

    query_p50_ms = _median_ms(embedder.embed_query, queries)
    with tempfile.TemporaryDirectory() as cache_dir:
        cached = CachedEmbedder(embedder, Path(cache_dir) / "cache.db")
        for query in queries:
            cached.embed_query(query)
        cached_query_p50_ms = _median_ms(cached.embed_query, queries)

    peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return Result(
        config, load_s, chunks_per_s, chunks_per_cpu_s, query_p50_ms, cached_query_p50_ms, peak_rss_mib
    )


def measure_in_fresh_process(config: Config, chunks: list[str], queries: list[str]) -> Result:
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(measure, config, chunks, queries).result()


def sentence_transformers_installed() -> bool:
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=512, help="chunks to embed per configuration")
    parser.add_argument("--queries", type=int, default=50, help="single queries timed per configuration")
    parser.add_argument("--pdf", action="store_true", help="embed every child chunk of the 400-page PDF")
    parser.add_argument(
        "--providers", nargs="+", default=["onnx-int8", "fastembed", "sentence-transformers"],
        help="the providers to measure",
    )
    args = parser.parse_args()

    settings = Settings()
    chunks = load_pdf_chunks(settings) if args.pdf else load_chunks(settings, args.n)
    queries = load_queries(args.queries)
    mean_chars = sum(map(len, chunks)) / len(chunks)
    print(
        f"{len(chunks)} chunks (mean {mean_chars:.0f} chars), {len(queries)} queries, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"
    )
    providers = set(args.providers)
    if "sentence-transformers" in providers and not sentence_transformers_installed():
        print("sentence-transformers is not installed: pip install 'axiom[sentence-transformers]'")
        providers.discard("sentence-transformers")
    configs = [c for c in configurations() if c.provider in providers]

    header = (
        f"{'provider':<22} {'batch':>5} {'threads':>7} {'load s':>7} {'chunks/s':>9} "
        f"{'chunks/cpu-s':>12} {'query p50 ms':>12} {'cached p50 ms':>13} {'peak RSS MiB':>12}"
    )
    print(header)
    print("-" * len(header))
    for config in configs:
        r = measure_in_fresh_process(config, chunks, queries)
        threads = "auto" if config.threads is None else str(config.threads)
        print(
            f"{config.label:<22} {config.batch_size:>5} {threads:>7} {r.load_s:>7.1f} {r.chunks_per_s:>9.1f} "
            f"{r.chunks_per_cpu_s:>12.1f} "
            f"{r.query_p50_ms:>12.1f} {r.cached_query_p50_ms:>13.2f} {r.peak_rss_mib:>12.0f}",
            flush=True,
        )
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
