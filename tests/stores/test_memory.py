"""Conversation memory against real databases: a SQLite file and a PostgreSQL server (tests/conftest.py)."""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest
from sqlalchemy import Engine, event, exc, select, text, update

from backend.config import Settings
from backend.errors import ChatWasDeleted, ValidationFailed
from backend.stores.chats import ChatStore
from backend.stores.database import open_database
from backend.stores.documents import DocumentStore, new_record
from backend.stores.memory import CitedDocumentsRemoved, MemoryStore, MemoryWindows, StoredMessage
from backend.stores.schema import messages
from tests.support.waiting import BACKGROUND_WAIT_SECONDS, wait_for

THREADS = 8
WRITES_PER_THREAD = 50
ISO_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
ANSWER_METADATA = {
    "sources": [
        {"document_id": "d1", "filename": "report.pdf", "page": 3, "score": 0.91, "excerpt": "Rückgang um 4 %"},
        {"document_id": "d2", "filename": "notes.md", "page": 1, "score": 0.42, "excerpt": None},
    ],
    "groundedness": {"score": 0.87, "verdict": "grounded", "unsupported_claims": []},
    "intent": "question",
}


@pytest.fixture
def memory(database: Engine) -> MemoryStore:
    return MemoryStore(database)


def ready_document(documents: DocumentStore, document_id: str) -> None:
    """A document of chat "alpha", stored and ready."""
    record = new_record(document_id=document_id, chat_id="alpha", filename=f"{document_id}.txt",
                        sha256=document_id, file_type="txt", size_bytes=1, page_count=1)
    documents.begin(record)
    documents.mark_ready(record, [], [])


def contents(messages: list[StoredMessage]) -> list[str]:
    return [m.content for m in messages]


def test_a_stored_message_has_a_unique_hex_id_and_an_iso_utc_timestamp(memory: MemoryStore) -> None:
    first = memory.add("s1", "user", "hello")
    second = memory.add("s1", "user", "hello again")

    assert first.id != second.id
    assert all(re.fullmatch(r"[0-9a-f]{32}", m.id) for m in (first, second))
    assert ISO_UTC.fullmatch(first.timestamp)
    assert datetime.fromisoformat(first.timestamp).utcoffset().total_seconds() == 0
    assert (first.session_id, first.role, first.metadata) == ("s1", "user", {})


def test_history_is_in_write_order_and_equals_what_add_returned(memory: MemoryStore) -> None:
    written = [memory.add("s1", "user" if n % 2 == 0 else "assistant", f"message {n}") for n in range(30)]

    assert memory.history("s1") == written


def test_order_follows_writes_even_when_timestamps_tie_or_go_backwards(
    memory: MemoryStore, database: Engine,
) -> None:
    for n in range(6):
        memory.add("s1", "user", f"message {n}")
    # A clock stepped backwards: later messages carry earlier or equal timestamps.
    with database.begin() as db:
        written = db.execute(select(messages.c.id).order_by(messages.c.seq)).scalars().all()
        for seq, message_id in enumerate(written):
            db.execute(update(messages).where(messages.c.id == message_id)
                       .values(timestamp=f"2024-01-15T10:30:0{5 - seq // 2}.000Z"))

    expected = [f"message {n}" for n in range(6)]
    assert contents(memory.history("s1")) == expected
    assert contents(memory.recent("s1", 3)) == expected[3:]


def test_recent_returns_the_last_messages_oldest_first(memory: MemoryStore) -> None:
    for n in range(10):
        memory.add("s1", "user", f"message {n}")

    assert contents(memory.recent("s1", 3)) == ["message 7", "message 8", "message 9"]
    assert contents(memory.recent("s1", 50)) == [f"message {n}" for n in range(10)]
    assert memory.recent("s1", 0) == []
    assert memory.recent("never-used", 5) == []
    with pytest.raises(ValueError):
        memory.recent("s1", -1)


def test_the_windows_are_the_seeds_and_each_reads_that_many_messages(memory: MemoryStore) -> None:
    windows = MemoryWindows()
    assert (windows.router, windows.rewrite, windows.generation, windows.context) == (3, 5, 5, 4)

    for n in range(12):
        memory.add_exchange("s1", f"question {n}", f"answer {n}")

    for window in (windows.router, windows.rewrite, windows.generation, windows.context):
        recent = memory.recent("s1", window)
        assert len(recent) == window
        assert recent[-1].content == "answer 11"


def test_sessions_do_not_see_each_others_messages(memory: MemoryStore) -> None:
    memory.add("alice", "user", "alice's question")
    memory.add("bob", "user", "bob's question")

    assert contents(memory.history("alice")) == ["alice's question"]
    assert contents(memory.recent("bob", 5)) == ["bob's question"]


def test_assistant_metadata_round_trips_with_nested_sources(memory: MemoryStore, open_engine) -> None:
    user, assistant = memory.add_exchange("s1", "What fell?", "Sales fell by 4 % [1].", ANSWER_METADATA)

    assert user.metadata == {}
    assert assistant.metadata == ANSWER_METADATA
    assert MemoryStore(open_engine()).history("s1")[1].metadata == ANSWER_METADATA


def test_metadata_is_a_snapshot_taken_when_written(memory: MemoryStore) -> None:
    metadata = {"sources": [{"page": 1}], "pages": (1, 2)}
    stored = memory.add("s1", "assistant", "answer", metadata)
    metadata["sources"].append({"page": 2})

    assert stored.metadata == {"sources": [{"page": 1}], "pages": [1, 2]}
    assert memory.history("s1")[0] == stored


def test_metadata_that_is_not_json_is_refused_and_nothing_is_written(memory: MemoryStore) -> None:
    with pytest.raises(TypeError):
        memory.add_exchange("s1", "question", "answer", {"sources": {object()}})

    assert not memory.exists("s1")


def test_add_exchange_writes_the_question_then_the_answer(memory: MemoryStore) -> None:
    memory.add_exchange("s1", "What is Axiom?", "A document assistant.", {"intent": "question"})

    history = memory.history("s1")
    assert [(m.role, m.content) for m in history] == [
        ("user", "What is Axiom?"),
        ("assistant", "A document assistant."),
    ]
    assert [m.as_chat_message() for m in history] == [
        {"role": "user", "content": "What is Axiom?"},
        {"role": "assistant", "content": "A document assistant."},
    ]


def test_add_exchange_writes_nothing_when_the_answer_cannot_be_written(
    memory: MemoryStore, database: Engine,
) -> None:
    # The database itself refuses the second row, as on a full disk, after the first row was inserted.
    with database.begin() as db:
        if database.dialect.name == "sqlite":
            db.execute(text(
                "CREATE TRIGGER refuse_answers BEFORE INSERT ON messages WHEN NEW.role = 'assistant' "
                "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
            ))
        else:
            db.execute(text("ALTER TABLE messages ADD CONSTRAINT refuse_answers CHECK (role <> 'assistant')"))

    with pytest.raises(exc.DBAPIError):
        memory.add_exchange("s1", "question", "answer")

    assert not memory.exists("s1")


def test_a_question_saved_before_a_failed_generation_stays(memory: MemoryStore) -> None:
    memory.add("s1", "user", "Will this be answered?")

    assert memory.exists("s1")
    assert contents(memory.history("s1")) == ["Will this be answered?"]


def test_exists_and_clear(memory: MemoryStore) -> None:
    assert not memory.exists("s1")
    memory.add_exchange("s1", "q1", "a1")
    memory.add("s1", "user", "q2")
    memory.add("s2", "user", "other session")
    assert memory.exists("s1")

    assert memory.clear("s1") == 3
    assert not memory.exists("s1")
    assert memory.history("s1") == []
    assert memory.clear("s1") == 0
    assert contents(memory.history("s2")) == ["other session"]


def test_messages_persist_across_store_instances(memory: MemoryStore, open_engine) -> None:
    written = memory.add_exchange("s1", "q1", "a1", ANSWER_METADATA)

    reopened = MemoryStore(open_engine())
    assert reopened.history("s1") == list(written)
    assert contents(reopened.recent("s1", 5)) == ["q1", "a1"]


def test_last_exchange_is_none_without_an_answer(memory: MemoryStore) -> None:
    assert memory.last_exchange("s1") is None
    memory.add("s1", "user", "unanswered question")
    assert memory.last_exchange("s1") is None


def test_last_exchange_is_the_latest_answer_and_its_question(memory: MemoryStore) -> None:
    memory.add_exchange("s1", "q1", "a1", {"intent": "question"})
    memory.add_exchange("s1", "q2", "a2", ANSWER_METADATA)

    question, answer = memory.last_exchange("s1")
    assert (question.content, answer.content) == ("q2", "a2")
    assert answer.metadata == ANSWER_METADATA


def test_last_exchange_skips_the_follow_up_being_handled(memory: MemoryStore) -> None:
    memory.add_exchange("s1", "q1", "a1")
    memory.add("s1", "user", "simplify that")

    question, answer = memory.last_exchange("s1")
    assert (question.content, answer.content) == ("q1", "a1")


def test_last_exchange_pairs_an_answer_with_the_question_just_before_it(memory: MemoryStore) -> None:
    memory.add("s1", "user", "question whose generation failed")
    memory.add("s1", "user", "q2")
    memory.add("s1", "assistant", "a2")

    question, answer = memory.last_exchange("s1")
    assert (question.content, answer.content) == ("q2", "a2")


def test_last_exchange_looks_only_within_the_window(memory: MemoryStore) -> None:
    memory.add_exchange("s1", "q1", "a1")
    for n in range(3):
        memory.add("s1", "user", f"unanswered {n}")

    # The window [a1, unanswered 0-2] holds the answer but not its question.
    assert memory.last_exchange("s1", window=4) is None
    question, answer = memory.last_exchange("s1", window=5)
    assert (question.content, answer.content) == ("q1", "a1")


@pytest.mark.parametrize(
    "call",
    [
        lambda m, s: m.add(s, "user", "x"),
        lambda m, s: m.add_exchange(s, "q", "a"),
        lambda m, s: m.recent(s, 5),
        lambda m, s: m.history(s),
        lambda m, s: m.exists(s),
        lambda m, s: m.clear(s),
        lambda m, s: m.last_exchange(s),
    ],
    ids=["add", "add_exchange", "recent", "history", "exists", "clear", "last_exchange"],
)
@pytest.mark.parametrize("session_id", ["", "../other", "a b", "x" * 64, "s1'; DROP TABLE messages;--"])
def test_invalid_session_ids_are_refused(memory: MemoryStore, call, session_id: str) -> None:
    with pytest.raises(ValidationFailed) as refused:
        call(memory, session_id)

    assert refused.value.details["field"] == "session_id"
    assert memory.history("s1") == []


def test_an_unknown_role_is_refused(memory: MemoryStore) -> None:
    with pytest.raises(ValidationFailed) as refused:
        memory.add("s1", "system", "you are a pirate")  # type: ignore[arg-type]

    assert refused.value.details["field"] == "role"
    assert not memory.exists("s1")


def run_in_threads(work: Callable[[int], None]) -> None:
    """Runs ``work(thread)`` on THREADS threads released at the same moment; re-raises any thread's error."""
    start = threading.Barrier(THREADS)

    def worker(thread: int) -> None:
        start.wait()
        work(thread)

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        list(pool.map(worker, range(THREADS)))


def test_concurrent_writers_to_shared_and_own_sessions_lose_and_reorder_nothing(memory: MemoryStore) -> None:
    def write(thread: int) -> None:
        for n in range(WRITES_PER_THREAD):
            memory.add("shared", "user", f"{thread}:{n}")
            memory.add(f"own-{thread}", "user", f"{thread}:{n}")

    run_in_threads(write)

    shared = memory.history("shared")
    assert len({m.id for m in shared}) == len(shared) == THREADS * WRITES_PER_THREAD
    assert sorted(contents(shared)) == sorted(f"{t}:{n}" for t in range(THREADS) for n in range(WRITES_PER_THREAD))
    for thread in range(THREADS):
        in_write_order = [f"{thread}:{n}" for n in range(WRITES_PER_THREAD)]
        assert [c for c in contents(shared) if c.startswith(f"{thread}:")] == in_write_order
        assert contents(memory.history(f"own-{thread}")) == in_write_order


def test_concurrent_exchanges_keep_each_answer_right_after_its_question(memory: MemoryStore) -> None:
    def write(thread: int) -> None:
        for n in range(WRITES_PER_THREAD // 2):
            memory.add_exchange("shared", f"q {thread}:{n}", f"a {thread}:{n}", {"thread": thread, "n": n})

    run_in_threads(write)

    shared = memory.history("shared")
    assert len(shared) == THREADS * WRITES_PER_THREAD
    for question, answer in zip(shared[::2], shared[1::2]):
        assert (question.role, answer.role) == ("user", "assistant")
        assert answer.content == "a" + question.content[1:]
    for thread in range(THREADS):
        answers = [m.metadata["n"] for m in shared if m.role == "assistant" and m.metadata["thread"] == thread]
        assert answers == list(range(WRITES_PER_THREAD // 2))


def test_a_question_retried_after_a_failure_is_kept_once(memory):
    memory.keep_unanswered("s1", "Why?")
    memory.keep_unanswered("s1", "Why?")  # the retry failed too
    assert [(m.content, m.metadata) for m in memory.history("s1")] == [("Why?", {"answered": False})]

    memory.add_exchange("s1", "Why?", "Because [Source 1].")  # the next retry was answered
    assert [(m.role, m.content, m.metadata) for m in memory.history("s1")] == [
        ("user", "Why?", {}), ("assistant", "Because [Source 1].", {}),
    ]


def test_only_the_same_question_at_the_end_of_the_session_is_replaced(memory):
    memory.keep_unanswered("s1", "First?")
    memory.add_exchange("s1", "Second?", "An answer.")
    memory.keep_unanswered("s1", "First?")
    memory.add("s1", "assistant", "something in between")
    memory.add_exchange("s1", "First?", "Answered at last.")
    assert contents(memory.history("s1")) == [
        "First?", "Second?", "An answer.", "First?", "something in between", "First?", "Answered at last.",
    ]


def test_the_time_of_a_sessions_newest_message(memory):
    assert memory.last_written_at(["s1"]) == {}
    memory.add("s1", "user", "first")
    newest = memory.add("s1", "assistant", "second")
    other = memory.add("s2", "user", "elsewhere")
    assert memory.last_written_at(["s1", "s2", "empty"]) == {
        "s1": datetime.fromisoformat(newest.timestamp).timestamp(),
        "s2": datetime.fromisoformat(other.timestamp).timestamp(),
    }


def test_a_session_is_bound_to_the_first_chat_that_binds_it(memory: MemoryStore, open_engine) -> None:
    assert memory.chat_of("s1") is None
    assert memory.bind("s1", "alpha") == "alpha"
    assert memory.bind("s1", "beta") == "alpha"
    assert memory.chat_of("s1") == "alpha"
    assert MemoryStore(open_engine()).chat_of("s1") == "alpha"


def test_concurrent_binds_of_one_session_agree_on_one_chat(memory: MemoryStore) -> None:
    with ThreadPoolExecutor(THREADS) as pool:
        owners = set(pool.map(lambda n: memory.bind("contested", f"chat-{n}"), range(THREADS * 4)))

    assert owners == {memory.chat_of("contested")}


def test_a_database_from_before_the_binding_keeps_its_messages_and_binds_on_first_use(
    database_settings: Settings,
) -> None:
    database_settings.data_dir.mkdir(parents=True)
    # The memory file as it was before sessions were bound to chats, upgraded into the configured database.
    with sqlite3.connect(database_settings.memory_db_path) as db:
        db.executescript(
            "CREATE TABLE messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, session_id TEXT"
            " NOT NULL, role TEXT NOT NULL CHECK (role IN ('user', 'assistant')), content TEXT NOT NULL, metadata"
            " TEXT NOT NULL, timestamp TEXT NOT NULL);"
            "INSERT INTO messages (id, session_id, role, content, metadata, timestamp) VALUES"
            " ('m1', 'old', 'user', 'an old question', '{}', '2024-01-15T10:30:00.123Z'),"
            " ('m2', 'alpha', 'user', 'the UI conversation of alpha', '{}', '2024-01-15T10:30:00.124Z');"
        )

    engine = open_database(database_settings)
    memory = MemoryStore(engine)

    assert contents(memory.history("old")) == ["an old question"]
    assert memory.chat_of("old") is None
    # The session named after a chat counts as that chat's own until it is bound.
    assert memory.has_conversation("alpha") and not memory.has_conversation("beta")
    assert memory.bind("old", "beta") == "beta"
    assert memory.has_conversation("beta")
    engine.dispose()


def test_clearing_a_chat_removes_every_session_of_it_and_nothing_else(memory: MemoryStore) -> None:
    for session_id, chat_id in (("alpha", "alpha"), ("api-1", "alpha"), ("beta", "beta"), ("api-2", "beta")):
        memory.bind(session_id, chat_id)
        memory.add_exchange(session_id, f"question in {session_id}", "answer")
    memory.add("unbound", "user", "a session never bound")

    assert memory.clear_chat("alpha") == 4

    assert not memory.has_conversation("alpha")
    assert memory.history("alpha") == memory.history("api-1") == []
    assert memory.chat_of("api-1") == "alpha"  # still the deleted chat's: no other chat can take it up
    assert contents(memory.history("api-2")) == ["question in api-2", "answer"]
    assert memory.chat_of("beta") == "beta" and memory.has_conversation("beta")
    assert contents(memory.history("unbound")) == ["a session never bound"]


def test_an_answer_saved_after_its_chat_was_deleted_is_refused_and_nothing_is_written(
    memory: MemoryStore, database: Engine
) -> None:
    ChatStore(database).create("Tax returns", chat_id="alpha")
    memory.bind("s1", "alpha")
    memory.add_exchange("s1", "q1", "a1", chat_id="alpha")
    memory.keep_unanswered("s1", "q2", chat_id="alpha")

    assert memory.clear_chat("alpha") == 3
    assert ChatStore(database).deleted("alpha").title == "Tax returns"  # noted with the clearing, record still there

    with pytest.raises(ChatWasDeleted, match="“Tax returns” was deleted while this answer was being written"):
        memory.add_exchange("s1", "q3", "a3", chat_id="alpha")
    memory.keep_unanswered("s1", "q4", chat_id="alpha")
    assert memory.history("s1") == [] and not memory.has_conversation("alpha")
    memory.add_exchange("other", "q", "a", chat_id="beta")  # another chat is untouched
    assert contents(memory.history("other")) == ["q", "a"]


def test_answers_saved_while_their_chat_is_deleted_are_either_cleared_with_it_or_refused(
    memory: MemoryStore,
) -> None:
    """Savers racing the deletion: whichever goes first, nothing is left in the deleted chat."""
    memory.bind("racing", "alpha")
    start = threading.Barrier(THREADS + 1)

    def save(n: int) -> bool:
        start.wait()
        try:
            memory.add_exchange("racing", f"q{n}", f"a{n}", chat_id="alpha")
        except ChatWasDeleted:
            return False
        return True

    with ThreadPoolExecutor(THREADS) as pool:
        saved = [pool.submit(save, n) for n in range(THREADS)]
        start.wait()
        cleared = memory.clear_chat("alpha")
        saved = sum(future.result() for future in saved)
    assert cleared == 2 * saved
    assert memory.history("racing") == []


def test_an_answer_citing_a_document_removed_before_it_is_saved_is_refused_unless_its_chat_was_deleted(
    memory: MemoryStore, database: Engine
) -> None:
    """The check of the cited documents is made when the answer is saved, holding the chat's turn, as removing a
    document does: a document removed after an earlier check but before the save is not saved as cited."""
    documents = DocumentStore(database)
    for document_id in ("d1", "d2"):
        ready_document(documents, document_id)
    memory.add_exchange("s1", "q1", "a1", chat_id="alpha", cited=["d1", "d2"])
    documents.remove("d2")

    with pytest.raises(CitedDocumentsRemoved) as removed:
        memory.add_exchange("s1", "q2", "a2", chat_id="alpha", cited=["d1", "d2"])
    assert removed.value.document_ids == {"d2"}
    assert contents(memory.history("s1")) == ["q1", "a1"]
    # A chat deleted (its conversation cleared, then its documents removed) refuses the answer as deleted: the
    # answer is not replaced by one saying its documents were removed.
    memory.clear_chat("alpha")
    with pytest.raises(ChatWasDeleted):
        memory.add_exchange("s1", "q3", "a3", chat_id="alpha", cited=["d2"])


def test_removing_a_document_waits_for_an_answer_citing_it_being_saved(
    memory: MemoryStore, database: Engine
) -> None:
    """Removing a document holds its chat's turn (``DocumentStore.remove``), so it cannot go between the saved
    answer's check that the documents it cites are ready and its commit."""
    documents = DocumentStore(database)
    ready_document(documents, "d1")
    checked, release, removing = threading.Event(), threading.Event(), threading.Event()
    done = []

    def hold_the_save(conn, cursor, statement, parameters, context, executemany) -> None:
        if "held answer" in str(parameters):  # the answer's INSERT, after the check of the cited documents
            checked.set()
            assert release.wait(BACKGROUND_WAIT_SECONDS)
        elif statement.startswith("DELETE FROM documents"):  # on SQLite the single writer then waits
            removing.set()

    def removal_waits() -> bool:
        if database.dialect.name != "postgresql":
            return removing.is_set()
        with database.connect() as db:
            return db.execute(text(
                "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'advisory'"
                " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            )).scalar_one() > 0

    event.listen(database, "before_cursor_execute", hold_the_save)
    try:
        with ThreadPoolExecutor(2) as pool:
            try:
                saving = pool.submit(lambda: done.append(
                    memory.add_exchange("s1", "q", "held answer", chat_id="alpha", cited=["d1"])
                ))
                assert checked.wait(BACKGROUND_WAIT_SECONDS)
                removed = pool.submit(lambda: done.append(documents.remove("d1")))
                wait_for(lambda: removed.done() or removal_waits(), "the removal to wait, or end")
                assert not removed.done()  # still waiting for the save's turn
            finally:
                release.set()  # before the pool waits for its threads
            saving.result(), removed.result()
    finally:
        event.remove(database, "before_cursor_execute", hold_the_save)

    assert done[0] is not None and done[1] is None  # saved first, the document still ready at its check
    assert contents(memory.history("s1")) == ["q", "held answer"]
    assert documents.list("alpha") == []


def test_cited_documents_are_checked_only_in_a_chat(memory: MemoryStore) -> None:
    """The check holds the chat's turn, as removing a document does: without the chat it proves nothing."""
    with pytest.raises(ValueError, match="chat_id"):
        memory.add_exchange("s1", "q", "a", cited=["d1"])
    assert memory.history("s1") == []


def test_the_session_named_after_a_chat_is_not_that_chats_once_bound_elsewhere(memory: MemoryStore) -> None:
    memory.bind("gamma", "delta")
    memory.add("gamma", "user", "asked in delta")

    assert not memory.has_conversation("gamma") and memory.has_conversation("delta")
    assert memory.clear_chat("gamma") == 0
    assert memory.clear_chat("delta") == 1


def test_clearing_a_session_unbinds_it(memory: MemoryStore) -> None:
    memory.bind("s1", "alpha")
    memory.add("s1", "user", "q")

    assert memory.clear("s1") == 1
    assert memory.chat_of("s1") is None


def test_any_text_round_trips_on_every_engine(memory: MemoryStore, open_engine) -> None:
    """PostgreSQL's text type refuses NUL; what a person typed is kept as typed anyway."""
    odd = ["a\x00b", "\x00", "\ue000", "\ue0000", "\ue000\x00\ue000\ue000", "plain"]
    for content in odd:
        memory.add("s1", "user", content)

    assert contents(MemoryStore(open_engine()).history("s1")) == odd
