"""Waiting in tests for what a server, a job or a child process does in the background."""

from __future__ import annotations

import time
from collections.abc import Callable

# How long a test waits for something done in the background (a job, a closed stream) before it gives up. A
# bound for a hang, not a speed expectation: the machine may be busy.
BACKGROUND_WAIT_SECONDS = 300


def wait_for(condition: Callable[[], object], what: str, timeout: float = BACKGROUND_WAIT_SECONDS):
    """Polls ``condition`` until it returns something truthy, which is returned."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
