"""Users and API keys against real databases: a SQLite file and a PostgreSQL server (tests/conftest.py)."""

from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import Engine, select

from backend.errors import Conflict, NotFound, ValidationFailed
from backend.stores.schema import api_keys
from backend.stores.users import KEY_PREFIX, UserStore


@pytest.fixture
def users(database: Engine) -> UserStore:
    return UserStore(database)


def test_a_key_is_shown_once_and_stored_only_as_its_hash(users: UserStore, database: Engine) -> None:
    made = users.create_key("alice")

    assert made.key.startswith(KEY_PREFIX) and len(made.key) > 40
    assert users.user_of(made.key).name == "alice"
    with database.connect() as db:
        stored = db.execute(select(api_keys)).all()
    assert [row.key_hash for row in stored] == [hashlib.sha256(made.key.encode()).hexdigest()]
    assert made.key not in repr(stored)


def test_keys_of_one_user_share_the_user_and_differ(users: UserStore) -> None:
    first, second, other = users.create_key("alice"), users.create_key("alice"), users.create_key("bob")

    assert first.key != second.key
    assert users.user_of(first.key) == users.user_of(second.key) != users.user_of(other.key)
    assert [(key.key_id, key.user) for key in users.api_keys()] == [
        (first.record.key_id, "alice"), (second.record.key_id, "alice"), (other.record.key_id, "bob")
    ]


def test_a_revoked_or_unknown_key_belongs_to_nobody(users: UserStore) -> None:
    made = users.create_key("alice")

    revoked = users.revoke(made.record.key_id)

    assert revoked.revoked_at is not None
    assert users.user_of(made.key) is None and users.user_of("axk_unknown") is None and users.user_of("") is None
    assert users.api_keys()[0].revoked_at == revoked.revoked_at
    with pytest.raises(Conflict):
        users.revoke(made.record.key_id)
    with pytest.raises(NotFound):
        users.revoke("no-such-key")


def test_a_user_name_is_an_id(users: UserStore) -> None:
    with pytest.raises(ValidationFailed):
        users.create_key("alice smith")
