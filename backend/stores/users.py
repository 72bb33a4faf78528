"""Users and their API keys (``schema.users``, ``schema.api_keys``): who may call the API when
AXIOM_AUTH=api-key.

A key is 256 random bits, shown once when it is made and stored only as its SHA-256: a fast hash is enough for a
random token of that size (nobody can guess one to match), and it lets a request's key be found by an indexed
lookup. A revoked key stays listed, with when it was revoked, and no longer authenticates.
"""

from __future__ import annotations

import hashlib
import secrets
import time
import uuid
from dataclasses import dataclass

from sqlalchemy import Engine, insert, select, update

from backend.errors import Conflict, NotFound
from backend.ids import validate_id
from backend.stores.dialect import upsert_insert
from backend.stores.schema import api_keys, users

# Recognisable in a config file or a leaked log, and by secret scanners.
KEY_PREFIX = "axk_"
_KEY_BYTES = 32


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


_KEY_RECORD = (api_keys.c.key_id, users.c.name, api_keys.c.created_at, api_keys.c.revoked_at)
_KEYS_WITH_USERS = api_keys.join(users)


class UserStore:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def create_key(self, user_name: str) -> NewApiKey:
        """A new key for ``user_name``, who is created on their first key."""
        name = validate_id(user_name, field="user")
        key = KEY_PREFIX + secrets.token_urlsafe(_KEY_BYTES)
        now = time.time()
        with self._engine.begin() as db:
            db.execute(
                upsert_insert(db, users).values(user_id=uuid.uuid4().hex, name=name, created_at=now)
                .on_conflict_do_nothing(index_elements=[users.c.name])
            )
            user_id = db.execute(select(users.c.user_id).where(users.c.name == name)).scalar_one()
            key_id = uuid.uuid4().hex[:12]
            db.execute(insert(api_keys).values(key_id=key_id, user_id=user_id, key_hash=hash_key(key), created_at=now))
        return NewApiKey(ApiKeyRecord(key_id, name, now, None), key)

    def user_named(self, name: str) -> User | None:
        with self._engine.connect() as db:
            row = db.execute(select(users.c.user_id, users.c.name).where(users.c.name == name)).one_or_none()
        return User(*row) if row else None

    def user_of(self, key: str) -> User | None:
        """The user a key belongs to; None for an unknown or revoked key."""
        with self._engine.connect() as db:
            row = db.execute(
                select(users.c.user_id, users.c.name).select_from(_KEYS_WITH_USERS)
                .where(api_keys.c.key_hash == hash_key(key), api_keys.c.revoked_at.is_(None))
            ).one_or_none()
        return User(*row) if row else None

    def api_keys(self) -> list[ApiKeyRecord]:
        """Every key, oldest first (revoked ones too); never the key itself."""
        with self._engine.connect() as db:
            rows = db.execute(
                select(*_KEY_RECORD).select_from(_KEYS_WITH_USERS)
                .order_by(api_keys.c.created_at, api_keys.c.key_id)
            ).all()
        return [ApiKeyRecord(*row) for row in rows]

    def revoke(self, key_id: str) -> ApiKeyRecord:
        with self._engine.begin() as db:
            revoked = db.execute(
                update(api_keys).where(api_keys.c.key_id == key_id, api_keys.c.revoked_at.is_(None))
                .values(revoked_at=time.time())
            ).rowcount
            row = db.execute(
                select(*_KEY_RECORD).select_from(_KEYS_WITH_USERS).where(api_keys.c.key_id == key_id)
            ).one_or_none()
        if row is None:
            raise NotFound(f"No API key has the id {key_id}; `axiom keys list` shows them.", key_id=key_id)
        if not revoked:
            raise Conflict(f"API key {key_id} was already revoked.", key_id=key_id)
        return ApiKeyRecord(*row)
