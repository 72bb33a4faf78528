"""Ingestion time of one PDF (default: the 400-page IRS manual) with a cold embedding cache.

Usage: .venv/bin/python bench/ingest_pdf.py [PATH]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import scratch_services, shared_data

from backend.ingest.loaders import load_document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path", nargs="?", type=Path)
    args = parser.parse_args()
    path = args.path or shared_data() / "pdfs" / "long_us_irs_irm_2.3.59_400p.pdf"
    data = path.read_bytes()

    started = time.perf_counter()
    document = load_document(path.name, data)
    load_s = time.perf_counter() - started

    with tempfile.TemporaryDirectory(prefix="axiom-bench-") as work:
        services = scratch_services(Path(work), embedding_cache=Path(work) / "cold-cache.db")
        started = time.perf_counter()
        result = services.ingestion.ingest("bench", path.name, data)
        ingest_s = time.perf_counter() - started
    print(f"{path.name}: {len(document.pages)} pages with text, {result.chunk_count} chunks")
    print(f"load (pypdf) alone: {load_s:.1f} s")
    print(f"full ingest, cold embedding cache (load + chunk + embed + Chroma + BM25): {ingest_s:.1f} s "
          f"({result.chunk_count / ingest_s:.0f} chunks/s)")


if __name__ == "__main__":
    main()
