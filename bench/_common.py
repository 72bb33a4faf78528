"""Helpers shared by the benchmarks: where the public data is, and a container on a scratch directory."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from backend.config import Settings
from backend.container import Services, build_services

REPO = Path(__file__).resolve().parents[1]


def shared_data() -> Path:
    path = Path(os.environ.get("AXIOM_SHARED_DATA", REPO.parent / "shared" / "data"))
    if not path.is_dir():
        sys.exit(f"public data not found at {path}; set AXIOM_SHARED_DATA to the folder holding beir-scifact/ and pdfs/")
    return path


def scratch_services(work_dir: Path, *, embedding_cache: Path | None = None, **overrides) -> Services:
    """Services on fresh stores under ``work_dir``; the embedding cache is the repo's unless one is given."""
    cache = embedding_cache or Settings().embedding_cache_path
    return build_services(Settings(data_dir=work_dir, embedding_cache_path=cache, **overrides))
