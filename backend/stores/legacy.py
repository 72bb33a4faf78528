"""Rows from the SQLite files of releases before the shared database (data/chats.db, memory.db, documents.db).

Each store had its own file then, with the same tables and columns as ``schema.py`` less the ones added since.
When the migration creates a database, every such table found in those files is copied into it, in the same
transaction, so an upgraded data directory keeps its chats, conversations, documents and jobs with no manual
step. Columns added since take their defaults; row numbers (``seq``) are assigned afresh in the old order. The
old files are only read, never changed: after the copy nothing uses them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from contextlib import closing
from pathlib import Path

from sqlalchemy import Boolean, Connection, Table, insert

from backend.stores.schema import metadata

_BATCH_ROWS = 1000


def import_legacy_sqlite(connection: Connection, files: Iterable[Path]) -> dict[str, int]:
    """Copies every known table found in ``files`` into ``connection``'s database; returns the rows copied per
    table (tables with none left out)."""
    copied: dict[str, int] = {}
    for path in dict.fromkeys(files):
        if not path.is_file():
            continue
        with closing(sqlite3.connect(path)) as legacy:
            tables = legacy.execute("SELECT name FROM sqlite_master WHERE type='table'")
            present = {name for (name,) in tables}
            # Sorted so a table comes after those its foreign keys point to (documents before parents).
            for table in metadata.sorted_tables:
                if table.name in present:
                    count = _copy(legacy, table, connection)
                    if count:
                        copied[table.name] = copied.get(table.name, 0) + count
    return copied


def _copy(legacy: sqlite3.Connection, table: Table, connection: Connection) -> int:
    old_columns = {row[1] for row in legacy.execute(f'PRAGMA table_info("{table.name}")')}
    # An autoincremented row number is assigned again (in rowid order, which was its order).
    columns = [c.name for c in table.columns if c.name in old_columns and c.autoincrement is not True]
    quoted = ", ".join(f'"{name}"' for name in columns)
    rows = legacy.execute(f'SELECT {quoted} FROM "{table.name}" ORDER BY rowid')
    # SQLite stored booleans as 0 and 1; PostgreSQL takes only booleans.
    flags = {name for name in columns if isinstance(table.c[name].type, Boolean)}
    count = 0
    while batch := rows.fetchmany(_BATCH_ROWS):
        values = [dict(zip(columns, row, strict=True)) for row in batch]
        for record in values:
            record.update({name: bool(record[name]) for name in flags})
        connection.execute(insert(table), values)
        count += len(batch)
    return count
