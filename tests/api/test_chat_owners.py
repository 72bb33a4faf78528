"""Who owns a chat (backend/api/chats.py) on both engines: a chat is claimed by its first user, and a question in
a chat already claimed reads its record once and writes nothing."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from sqlalchemy import Engine, event

from backend.api.answers import Answerer
from backend.api.chats import Chats
from backend.api.running_answers import RunningAnswers
from backend.conversations import Conversations
from backend.errors import ChatWasDeleted, Conflict, NotFound
from backend.ingest.jobs import IngestJobs
from backend.stores.chats import ChatStore
from backend.stores.documents import DocumentStore, new_record
from backend.stores.jobs import JobStore
from backend.stores.memory import MemoryStore
from backend.stores.users import User

ALICE = User(user_id="u-alice", name="alice")
BOB = User(user_id="u-bob", name="bob")


@pytest.fixture
def running() -> RunningAnswers:
    return RunningAnswers()


@pytest.fixture
def chats(database: Engine, running: RunningAnswers) -> Chats:
    # No ingestion service and no job workers: claiming only reads what the stores hold.
    jobs = IngestJobs(None, JobStore(database), workers=0)
    return Chats(
        ChatStore(database), DocumentStore(database), None, MemoryStore(database), jobs,
        stop_answers=running.stop_chat,
    )


@contextmanager
def statements(database: Engine, *, whole: bool = False):
    """The SQL statements run on ``database`` inside the block, first word upper-cased (SELECT, INSERT, …), or
    ``whole``."""
    run: list[str] = []

    def record(_connection, _cursor, statement, *_args) -> None:
        run.append(statement if whole else statement.split(None, 1)[0].upper())

    event.listen(database, "before_cursor_execute", record)
    try:
        yield run
    finally:
        event.remove(database, "before_cursor_execute", record)


def test_a_new_chat_becomes_its_first_users(chats: Chats, database: Engine) -> None:
    with statements(database) as run:
        chats.claim("fresh", ALICE)

    assert run.count("INSERT") == 1 and "UPDATE" not in run
    assert [chat.id for chat in chats.list(ALICE)] == ["fresh"]
    with pytest.raises(NotFound):
        chats.claim("fresh", BOB)
    assert chats.list(BOB) == []


def test_a_question_in_ones_own_chat_reads_its_record_once_and_writes_nothing(
    chats: Chats, database: Engine
) -> None:
    chats.claim("mine", ALICE)
    with statements(database) as run:
        chats.claim("mine", ALICE)  # the first use after the claim that made it writes once: see below
    assert run == ["SELECT", "UPDATE"]

    with statements(database) as run:
        chats.claim("mine", ALICE)

    assert run == ["SELECT"]


def test_an_undone_claim_leaves_the_chat_another_request_of_its_user_claimed_meanwhile(
    chats: Chats, database: Engine
) -> None:
    """With keys on, request A makes a new chat and then stores nothing; request B of the same user claimed the
    chat meanwhile and stores a file in it after A's undo: the chat keeps its record, so it keeps its owner."""
    assert chats.claim("fresh", ALICE)  # A made the record
    assert not chats.claim("fresh", ALICE)  # B found it
    chats.unclaim("fresh", ALICE)  # A stored nothing
    stored = new_record(
        document_id="d1", chat_id="fresh", filename="notes.txt", sha256="aa", file_type="txt", size_bytes=1,
        page_count=1,
    )
    DocumentStore(database).begin(stored)  # B's file
    DocumentStore(database).mark_ready(stored, [], [])

    assert ChatStore(database).get("fresh").owner == ALICE.user_id
    assert [chat.id for chat in chats.list(ALICE)] == ["fresh"]
    with pytest.raises(NotFound):
        chats.claim("fresh", BOB)


def test_a_claim_whose_record_is_undone_as_it_reads_it_makes_the_chat_again(
    chats: Chats, database: Engine, monkeypatch
) -> None:
    """B reads the record A's claim made, A's undo drops it, then B goes on: B makes the record again (and is
    the one to undo it if it stores nothing)."""
    store = ChatStore(database)
    assert chats.claim("fresh", ALICE)
    read = chats._store.get

    def read_then_undone(chat_id: str):
        record = read(chat_id)
        store.drop_claim(chat_id, ALICE.user_id)  # A's undo, just after B read the record
        return record

    monkeypatch.setattr(chats._store, "get", read_then_undone)
    assert chats.claim("fresh", ALICE)
    monkeypatch.undo()

    assert store.get("fresh").owner == ALICE.user_id


def test_another_users_chat_is_refused_after_one_read(chats: Chats, database: Engine) -> None:
    chats.claim("alices", ALICE)

    with statements(database) as run, pytest.raises(NotFound) as refused:
        chats.claim("alices", BOB)

    assert run == ["SELECT"]
    assert refused.value.details == {"chat_id": "alices"}


def test_a_chat_without_an_owner_is_nobodys_to_claim(chats: Chats, database: Engine) -> None:
    ChatStore(database).rename("before-keys", "Made with keys off")
    MemoryStore(database).add("conversation-only", "user", "Made with keys off too")

    for chat_id in ("before-keys", "conversation-only"):
        with pytest.raises(NotFound):
            chats.claim(chat_id, ALICE)
    assert ChatStore(database).get("before-keys").owner is None
    assert ChatStore(database).get("conversation-only") is None


def test_without_keys_nothing_is_claimed(chats: Chats, database: Engine) -> None:
    with statements(database) as run:
        chats.claim("open", None)

    assert run == ["SELECT"] and ChatStore(database).get("open") is None  # only whether it was deleted


def test_without_keys_a_question_reads_once_whether_its_chat_was_deleted(
    chats: Chats, database: Engine, running: RunningAnswers
) -> None:
    memory = MemoryStore(database)
    conversations = Conversations(memory, ChatStore(database), DocumentStore(database))
    # Only the question's checks run: no pipeline or model scheduler is needed.
    answerer = Answerer(
        None, memory, conversations, chats, None, max_chars=2_000, max_in_flight=8, default_chat_id="default",
        running=running,
    )

    with statements(database, whole=True) as run:
        answerer.question("Hello?", chat_id="open", session_id=None)

    assert sum("deleted_chats" in statement for statement in run) == 1


def test_a_deleted_chat_is_its_owners_to_be_told_about_and_another_users_to_be_refused(
    chats: Chats, database: Engine
) -> None:
    chats.claim("gone", ALICE)
    MemoryStore(database).clear_chat("gone")  # deleting it: its deletion noted, then its record removed
    ChatStore(database).remove("gone")

    with pytest.raises(ChatWasDeleted):
        chats.claim("gone", ALICE)
    with pytest.raises(NotFound) as refused:
        chats.claim("gone", BOB)
    assert refused.value.details == {"chat_id": "gone"}
    assert ChatStore(database).get("gone") is None


def test_the_id_of_another_users_session_is_not_found_and_of_ones_own_a_conflict(
    chats: Chats, database: Engine
) -> None:
    """A 409 told Bob that Alice's chat has a conversation of that id, where every other check answers 404."""
    memory = MemoryStore(database)
    chats.claim("alices", ALICE)
    memory.bind("alices-side", "alices")

    with pytest.raises(NotFound) as hidden:
        chats.usable("alices-side", BOB)
    assert hidden.value.details == {"chat_id": "alices-side"}
    with pytest.raises(NotFound):
        chats.create(None, BOB, chat_id="alices-side")
    with pytest.raises(Conflict, match="conversation in another chat"):
        chats.usable("alices-side", ALICE)

    MemoryStore(database).clear_chat("alices")  # deleted: its sessions stay its own
    ChatStore(database).remove("alices")
    with pytest.raises(Conflict, match="alices-side is the id of a conversation in a deleted chat"):
        chats.create(None, ALICE, chat_id="alices-side")
    with pytest.raises(NotFound):
        chats.usable("alices-side", BOB)
