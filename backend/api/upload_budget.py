"""How many uploaded bytes the server holds at once, across every request.

Uploads are held in memory until indexed or handed to a background job (whose file then waits in the database, and
a worker holds one file at a time), so without a bound a few concurrent large uploads take the machine's memory:
three 10 × 45 MB uploads peaked at 2.67 GB. Each request reserves its bytes as they arrive; past the budget it is
refused with 503 SERVER_BUSY and Retry-After (nothing of it is stored), and what a request reserved is released
when the request ends.
"""

from __future__ import annotations

import threading

from backend.errors import ServerBusy

# Indexing a large file takes tens of seconds; asking again sooner would find the budget still spent.
_RETRY_AFTER_SECONDS = 30


class UploadBudget:
    def __init__(self, limit_bytes: int) -> None:
        self._limit = limit_bytes
        self._held = 0
        self._lock = threading.Lock()

    def reserve(self, size: int) -> None:
        """Raises ServerBusy when ``size`` more bytes would exceed the budget."""
        with self._lock:
            if self._held + size > self._limit:
                raise ServerBusy(
                    "The server is already holding as many uploaded files as it may; try again in a minute.",
                    retry_after_seconds=_RETRY_AFTER_SECONDS, budget_bytes=self._limit,
                )
            self._held += size

    def release(self, size: int) -> None:
        with self._lock:
            self._held -= size


class Reservation:
    """One request's share of the budget: grows as its bytes arrive, handed on in parts to the jobs that keep
    them, and released whole by ``close`` for whatever is left."""

    def __init__(self, budget: UploadBudget) -> None:
        self._budget = budget
        self._size = 0

    def grow(self, size: int) -> None:
        self._budget.reserve(size)
        self._size += size

    def close(self) -> None:
        self._budget.release(self._size)
        self._size = 0
