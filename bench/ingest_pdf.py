"""Ingestion time of one PDF (default: the 400-page IRS manual) with a cold embedding cache, per provider.

Usage: .venv/bin/python bench/ingest_pdf.py [PATH] [--providers onnx-int8 fastembed] [--repeat 2]

Each run is a fresh process that builds the real services (the file is read in the reader's worker process, as in
the server), starts the reader, then times ``IngestionService.ingest``. CPU-seconds are user + system time of the
process and of the reader worker during the ingest: on a machine other jobs keep busy they are the steadier number,
wall time is what a person waits. Peak RSS is the ingesting process's over its life (model load included) and the
reader worker's. "embedded" is how many chunks the model computed: a text repeated in the document is embedded once. Reading alone
is timed here; embedding alone, on the same chunks, by bench/embeddings.py --pdf.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import sqlite3
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import child_pids, peak_rss_mib, scratch_services, shared_data, tree_cpu_seconds

from backend.ingest.loaders import load_document


@dataclass(frozen=True)
class Run:
    chunks: int
    embedded: int
    wall_s: float
    cpu_s: float
    peak_rss_mib: float
    reader_peak_rss_mib: float


def ingest_once(path: Path, provider: str) -> Run:
    data = path.read_bytes()
    with tempfile.TemporaryDirectory(prefix="axiom-bench-") as work:
        cache = Path(work) / "cold-cache.db"
        services = scratch_services(
            Path(work), embedding_cache=cache, embedding_provider=provider,
            # The int8 model is made once per library version: kept out of every run's time.
            embedding_model_dir=Path(tempfile.gettempdir()) / "axiom-bench-models",
        )
        services.reader.read("warm-up.txt", b"starts the worker and its imports before the clock")
        embedded_before = _embedded_texts(cache)  # the intent router's examples, embedded as services start
        cpu_before = tree_cpu_seconds(os.getpid())  # this process and the reader (and any other child)
        started = time.perf_counter()
        result = services.ingestion.ingest("bench", path.name, data)
        wall_s = time.perf_counter() - started
        run = Run(
            result.chunk_count, _embedded_texts(cache) - embedded_before, wall_s,
            tree_cpu_seconds(os.getpid()) - cpu_before,
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            max(map(peak_rss_mib, child_pids(os.getpid()))),
        )
        services.close()
    return run


def _embedded_texts(cache: Path) -> int:
    with sqlite3.connect(cache) as db:
        return db.execute("SELECT count(*) FROM embeddings").fetchone()[0]


def read_cpu_s(path: Path) -> float:
    data = path.read_bytes()
    started = time.process_time()
    load_document(path.name, data)
    return time.process_time() - started


def in_fresh_process(function, *args):
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(function, *args).result()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", nargs="?", type=Path)
    parser.add_argument("--providers", nargs="+", default=["onnx-int8", "fastembed"])
    parser.add_argument("--repeat", type=int, default=2, help="runs per provider, each in a fresh process")
    args = parser.parse_args()
    path = args.path or shared_data() / "pdfs" / "long_us_irs_irm_2.3.59_400p.pdf"

    print(f"{path.name}: reading alone (pypdf, in this process) {in_fresh_process(read_cpu_s, path):.1f} CPU-s; "
          f"{os.cpu_count()} cores")
    header = (
        f"{'provider':<22} {'chunks':>6} {'embedded':>8} {'wall s':>7} {'CPU-s':>6} {'chunks/s':>8} "
        f"{'peak RSS MiB':>12} {'children MiB':>12} {'load avg':>8}"
    )
    print(header)
    print("-" * len(header))
    for provider in args.providers:
        for _ in range(args.repeat):
            load_before = os.getloadavg()[0]
            r = in_fresh_process(ingest_once, path, provider)
            load = (load_before + os.getloadavg()[0]) / 2
            print(
                f"{provider:<22} {r.chunks:>6} {r.embedded:>8} {r.wall_s:>7.1f} {r.cpu_s:>6.1f} "
                f"{r.chunks / r.wall_s:>8.0f} {r.peak_rss_mib:>12.0f} {r.reader_peak_rss_mib:>12.0f} {load:>8.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
