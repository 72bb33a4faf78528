"""The UI's pure modules (the SSE parser, citation lookup) under Node's own test runner: no npm packages needed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

FRONTEND = Path(__file__).resolve().parents[2] / "frontend"


def test_the_ui_modules_pass_their_node_tests():
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed; the browser tests still cover these modules end to end")
    run = subprocess.run([node, "--test", "tests/"], cwd=FRONTEND, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "# fail 0" in run.stdout
