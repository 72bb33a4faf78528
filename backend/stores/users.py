"""Users and their API keys (SQLite): who may call the API when AXIOM_AUTH=api-key.

A key is 256 random bits, shown once when it is made and stored only as its SHA-256: a fast hash is enough for a
random token of that size (nobody can guess one to match), and it lets a request's key be found by an indexed
lookup. A revoked key stays listed, with when it was revoked, and no longer authenticates.
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from backend.errors import Conflict, NotFound
from backend.ids import validate_id
from backend.stores.sqlite import ThreadLocalSQLite

# Recognisable in a config file or a leaked log, and by secret scanners.
KEY_PREFIX = "axk_"
_KEY_BYTES = 32

_SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    user_id    TEXT PRIMARY KEY,
    name       TEXT UNIQUE NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS api_keys (
    key_id     TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users ON DELETE CASCADE,
    key_hash   TEXT UNIQUE NOT NULL,
    created_at REAL NOT NULL,
    revoked_at REAL NULL
);
"""


@dataclass(frozen=True, slots=True)
class User:
    user_id: str
    name: str


@dataclass(frozen=True, slots=True)
class ApiKeyRecord:
    key_id: str
    user: str  # the user's name
    created_at: float
    revoked_at: float | None


@dataclass(frozen=True, slots=True)
class NewApiKey:
    record: ApiKeyRecord
    key: str  # the only time the key itself is known


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class UserStore:
    def __init__(self, path: Path) -> None:
        self._db = ThreadLocalSQLite(path, _SCHEMA, row_factory=sqlite3.Row)

    def create_key(self, user_name: str) -> NewApiKey:
        """A new key for ``user_name``, who is created on their first key."""
        name = validate_id(user_name, field="user")
        key = KEY_PREFIX + secrets.token_urlsafe(_KEY_BYTES)
        now = time.time()
        with self._db.transaction() as db:
            db.execute(
                "INSERT INTO users VALUES (?,?,?) ON CONFLICT(name) DO NOTHING", (uuid.uuid4().hex, name, now)
            )
            user_id = db.execute("SELECT user_id FROM users WHERE name=?", (name,)).fetchone()[0]
            key_id = uuid.uuid4().hex[:12]
            db.execute("INSERT INTO api_keys VALUES (?,?,?,?,NULL)", (key_id, user_id, hash_key(key), now))
        return NewApiKey(ApiKeyRecord(key_id, name, now, None), key)

    def user_named(self, name: str) -> User | None:
        row = self._db.connection().execute("SELECT user_id, name FROM users WHERE name=?", (name,)).fetchone()
        return User(*row) if row else None

    def user_of(self, key: str) -> User | None:
        """The user a key belongs to; None for an unknown or revoked key."""
        row = self._db.connection().execute(
            "SELECT users.user_id, users.name, api_keys.key_hash FROM api_keys JOIN users USING (user_id)"
            " WHERE api_keys.key_hash=? AND api_keys.revoked_at IS NULL",
            (hash_key(key),),
        ).fetchone()
        # The lookup found it by hash already; the constant-time comparison keeps that the only way in.
        if row is None or not secrets.compare_digest(row["key_hash"], hash_key(key)):
            return None
        return User(row["user_id"], row["name"])

    def api_keys(self) -> list[ApiKeyRecord]:
        """Every key, oldest first (revoked ones too); never the key itself."""
        rows = self._db.connection().execute(
            "SELECT key_id, name, api_keys.created_at, revoked_at FROM api_keys JOIN users USING (user_id)"
            " ORDER BY api_keys.created_at, key_id"
        ).fetchall()
        return [ApiKeyRecord(*row) for row in rows]

    def revoke(self, key_id: str) -> ApiKeyRecord:
        with self._db.transaction() as db:
            revoked = db.execute(
                "UPDATE api_keys SET revoked_at=? WHERE key_id=? AND revoked_at IS NULL", (time.time(), key_id)
            ).rowcount
            row = db.execute(
                "SELECT key_id, name, api_keys.created_at, revoked_at FROM api_keys JOIN users USING (user_id)"
                " WHERE key_id=?", (key_id,),
            ).fetchone()
        if row is None:
            raise NotFound(f"No API key has the id {key_id}; `axiom keys list` shows them.", key_id=key_id)
        if not revoked:
            raise Conflict(f"API key {key_id} was already revoked.", key_id=key_id)
        return ApiKeyRecord(*row)
