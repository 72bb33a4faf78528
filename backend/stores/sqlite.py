"""A SQLite database shared by many threads: one connection per thread, WAL, and a busy timeout.

sqlite3 connections must not be shared across threads; WAL lets readers run alongside the single writer; the
timeout makes a writer wait for the lock instead of failing under concurrent requests.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class ThreadLocalSQLite:
    def __init__(self, path: Path, schema: str, *, row_factory=None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._path = path
        self._row_factory = row_factory
        self._local = threading.local()
        with self.transaction() as db:
            db.executescript(schema)

    def connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self._path, timeout=30)
            if self._row_factory is not None:
                db.row_factory = self._row_factory
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA foreign_keys=ON")
            self._local.db = db
        return db

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        db = self.connection()
        with db:  # commits on success, rolls back on error
            yield db
