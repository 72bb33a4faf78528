"""The chat registry against real databases: a SQLite file and a PostgreSQL server (tests/conftest.py)."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import Engine

from backend.errors import ValidationFailed
from backend.stores.chats import ChatRecord, ChatStore
from backend.stores.memory import MemoryStore


@pytest.fixture
def chats(database: Engine) -> ChatStore:
    return ChatStore(database)


def test_a_created_chat_has_a_hex_id_and_can_be_read_back(chats: ChatStore) -> None:
    created = chats.create("Tax questions")

    assert re.fullmatch(r"[0-9a-f]{32}", created.id)
    assert created.title == "Tax questions" and created.created_at == created.updated_at > 0
    assert chats.get(created.id) == created
    assert chats.get("never-made") is None


def test_chats_are_listed_most_recently_updated_first(chats: ChatStore) -> None:
    first, second, third = (chats.create(title) for title in ("first", "second", "third"))
    assert [c.id for c in chats.list()] == [third.id, second.id, first.id]

    renamed = chats.rename(first.id, "first, renamed")
    assert [c.id for c in chats.list()] == [first.id, third.id, second.id]
    assert renamed == ChatRecord(first.id, "first, renamed", first.created_at, renamed.updated_at)
    assert renamed.updated_at >= third.updated_at


def test_rename_creates_the_record_of_a_chat_that_had_none(chats: ChatStore) -> None:
    named = chats.rename("uploads-only", "From uploads", created_at=1_000.0)

    assert named.created_at == 1_000.0 and named.updated_at > named.created_at
    assert chats.get("uploads-only") == named
    # created_at is kept from the first record: it says when the chat began.
    assert chats.rename("uploads-only", "Renamed", created_at=2_000.0).created_at == 1_000.0


def test_remove_deletes_only_that_chat(chats: ChatStore) -> None:
    kept, removed = chats.create("kept"), chats.create("removed")

    assert chats.remove(removed.id) is True
    assert chats.remove(removed.id) is False
    assert chats.get(removed.id) is None
    assert chats.list() == [kept]


def test_chats_persist_across_store_instances(chats: ChatStore, open_engine) -> None:
    created = chats.create("Persistent")
    assert ChatStore(open_engine()).list() == [created]


def test_a_title_keeps_whatever_characters_it_was_given(chats: ChatStore) -> None:
    created = chats.create("Nul \x00 and private use \ue000 kept")
    assert chats.get(created.id).title == "Nul \x00 and private use \ue000 kept"
    assert chats.rename(created.id, "\x00\ue0000").title == chats.get(created.id).title == "\x00\ue0000"


@pytest.mark.parametrize(
    "call",
    [lambda c, i: c.get(i), lambda c, i: c.rename(i, "title"), lambda c, i: c.remove(i)],
    ids=["get", "rename", "remove"],
)
@pytest.mark.parametrize("chat_id", ["", "../other", "a b", "x" * 64, "c1'; DROP TABLE chats;--"])
def test_invalid_chat_ids_are_refused(chats: ChatStore, call, chat_id: str) -> None:
    with pytest.raises(ValidationFailed) as refused:
        call(chats, chat_id)

    assert refused.value.details["field"] == "chat_id"
    assert chats.list() == []


def test_chats_are_listed_by_owner_when_asked(chats: ChatStore) -> None:
    ownerless = chats.create("Made with keys off")
    mine = chats.create("Mine", owner="u1")

    assert chats.get(ownerless.id).owner is None and chats.get(mine.id) == mine
    assert [record.id for record in chats.list(owner="u1")] == [mine.id]
    assert {record.id for record in chats.list()} == {ownerless.id, mine.id}


def test_a_claim_keeps_the_first_owner(chats: ChatStore) -> None:
    assert chats.claim("shared-id", "alice", title="shared-id") == (chats.get("shared-id"), True)
    assert chats.claim("shared-id", "bob", title="shared-id") == (chats.get("shared-id"), False)
    assert chats.get("shared-id").owner == "alice"
    renamed = chats.rename("shared-id", "Alice's")
    assert (renamed.title, renamed.owner) == ("Alice's", "alice")


def test_a_claim_gives_a_chat_without_an_owner(chats: ChatStore) -> None:
    chats.rename("before-keys", "Made with keys off")
    record, made = chats.claim("before-keys", "alice", title="before-keys")
    assert (record.title, record.owner, made) == ("Made with keys off", "alice", False)


def test_a_dropped_claim_leaves_the_id_free_not_deleted(chats: ChatStore) -> None:
    chats.claim("stored-nothing", "alice", title="stored-nothing")
    chats.drop_claim("stored-nothing", "bob")  # not bob's: kept
    assert chats.get("stored-nothing") is not None

    chats.drop_claim("stored-nothing", "alice")
    assert chats.get("stored-nothing") is None and chats.deleted("stored-nothing") is None
    assert chats.claim("stored-nothing", "alice", title="stored-nothing")[1]


def test_a_claim_used_by_another_request_is_not_dropped(chats: ChatStore) -> None:
    chats.claim("used", "alice", title="used")
    assert chats.keep_claim("used", "alice")
    chats.drop_claim("used", "alice")
    assert chats.get("used") is not None

    chats.claim("renamed", "alice", title="renamed")
    chats.rename("renamed", "Tax returns")
    chats.drop_claim("renamed", "alice")
    assert chats.get("renamed") is not None

    assert not chats.keep_claim("never-claimed", "alice")


def test_a_deleted_chat_is_remembered_with_its_title_and_owner(database):
    """The deletion is noted once, with the conversation's removal (``MemoryStore.clear_chat``), before the record
    goes (``remove``), which keeps the note."""
    store = ChatStore(database)
    store.claim("owned", "u-alice", title="owned")
    store.rename("owned", "Tax returns")
    assert store.deleted("owned") is None

    MemoryStore(database).clear_chat("owned")
    assert store.remove("owned")
    deleted = store.deleted("owned")
    assert (deleted.id, deleted.title, deleted.owner) == ("owned", "Tax returns", "u-alice")
    MemoryStore(database).clear_chat("never-named")  # a chat without a record is remembered too
    assert store.deleted("never-named").title is None

    store.forget_deletion("owned")
    assert store.deleted("owned") is None and store.deleted("never-named") is not None
