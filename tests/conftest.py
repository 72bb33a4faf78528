from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The public test data folder: $AXIOM_SHARED_DATA, else shared/data beside the repository."""
    default = Path(__file__).resolve().parents[2] / "shared" / "data"
    path = Path(os.environ.get("AXIOM_SHARED_DATA", default))
    if not path.is_dir():
        pytest.skip(
            f"public test data not found at {path}; set AXIOM_SHARED_DATA to the folder holding pdfs/"
        )
    return path
