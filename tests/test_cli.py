"""The command line as a person runs it: a separate `axiom` process, its output and its exit status."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from backend.cli import _print_answer
from backend.config import Settings
from backend.stores.chats import ChatStore
from backend.stores.database import open_database
from backend.stores.memory import MemoryStore
from tests.support import documents

AXIOM = str(Path(sys.executable).with_name("axiom"))
NOTES = ("axolotl.txt", b"Axolotls can regrow their limbs, their hearts and even parts of their brains.")
RUNS = 4


@pytest.fixture
def chat_with_a_document(tmp_path, make_services) -> Path:
    data_dir = tmp_path / "data"
    make_services(data_dir).ingestion.ingest("notes", *NOTES)
    return data_dir


@pytest.mark.slow
def test_ask_with_a_stuck_model_exits_with_its_own_status_never_a_signal(chat_with_a_document: Path) -> None:
    """A generation abandoned by the stall watchdog is joined before the model is freed at exit: before that, a
    busy machine crashed `axiom ask` with a segmentation fault in a third of the runs."""
    env = {
        **os.environ, "AXIOM_DATA_DIR": str(chat_with_a_document), "AXIOM_LLM_STALL_TIMEOUT": "0.001",
        "AXIOM_LLM_BATCH_TOKENS": "512", "AXIOM_LLM_THREADS": "1",
    }
    # The crash showed on a busy machine: keep one core busy while asking.
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        statuses = [
            subprocess.run(
                [AXIOM, "ask", "--chat", "notes", "What can axolotls regrow?"],
                env=env, capture_output=True, text=True, timeout=600, check=False,
            )
            for _ in range(RUNS)
        ]
    finally:
        burner.kill()
        burner.wait()

    for run in statuses:
        assert run.returncode >= 0, f"killed by signal {-run.returncode}: {run.stderr[-2000:]}"
        assert run.returncode == 2, run.stderr[-2000:]
        assert "made no progress" in run.stderr
        assert "Building index" not in run.stderr  # bm25s's debug line once printed on every ask


def test_ask_keeps_a_session_in_its_chat_and_refuses_another_chats(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    database = open_database(Settings(data_dir=data_dir))
    memory = MemoryStore(database)
    memory.bind("theirs", "other")
    memory.add("theirs", "user", "a question asked in the other chat")
    env = {**os.environ, "AXIOM_DATA_DIR": str(data_dir)}

    def ask(session_id: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [AXIOM, "ask", "--chat", "notes", "--session", session_id, "Hello!"],
            env=env, capture_output=True, text=True, timeout=600, check=False,
        )

    refused = ask("theirs")
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "belongs to the chat it was started in" in refused.stderr
    assert [m.content for m in memory.history("theirs")] == ["a question asked in the other chat"]

    memory.clear_chat("notes")  # deleted (noted so): the operator's question makes it again
    answered = ask("mine")
    assert answered.returncode == 0, answered.stderr[-2000:]
    assert memory.chat_of("mine") == "notes" and len(memory.history("mine")) == 2
    assert ChatStore(database).deleted("notes") is None


def test_search_finds_the_text_of_a_scan_and_says_it_was_recognised(tmp_path: Path, make_services, pdfs) -> None:
    scan = "scanned_linn_two-column_brochure.pdf"
    data_dir = tmp_path / "data"
    make_services(data_dir).ingestion.ingest("scans", scan, (pdfs / scan).read_bytes())

    run = subprocess.run(
        [AXIOM, "search", "--chat", "scans", "How many MIDI channels can a track be assigned to?"],
        env={**os.environ, "AXIOM_DATA_DIR": str(data_dir)}, capture_output=True, text=True, timeout=600,
        check=False,
    )

    assert run.returncode == 0, run.stderr[-2000:]
    assert f"[1] {scan} (Page 1, recognised text)" in run.stdout


def test_search_cites_a_slide_as_a_slide(tmp_path: Path, make_services) -> None:
    data_dir = tmp_path / "data"
    make_services(data_dir).ingestion.ingest("decks", "deck.pptx", documents.deck())

    run = subprocess.run(
        [AXIOM, "search", "--chat", "decks", "Which species was counted in the survey?"],
        env={**os.environ, "AXIOM_DATA_DIR": str(data_dir)}, capture_output=True, text=True, timeout=600,
        check=False,
    )

    assert run.returncode == 0, run.stderr[-2000:]
    assert "deck.pptx (Slide 2)" in run.stdout


def test_ask_prints_each_sources_page_labels(capsys) -> None:
    source = {"filename": "book.xlsx", "pages": [1, 3], "page_labels": ["Sheet “Sales”", "Sheet “Notes”"],
              "source_numbers": [1, 2]}
    result = SimpleNamespace(answer="Sales rose [Source 1].", answer_kind="generated", sources=[source],
                             is_grounded=True, intent="question", processing_time_ms=5)

    assert _print_answer([{"type": "result", "result": result}]) == 0

    assert "  [Source 1, 2] book.xlsx (Sheet “Sales”, Sheet “Notes”)" in capsys.readouterr().out


def _axiom(data_dir: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [AXIOM, *args], env={**os.environ, "AXIOM_DATA_DIR": str(data_dir)},
        capture_output=True, text=True, timeout=600, check=False, input=stdin,
    )


def test_ingest_opens_the_pdfs_needing_a_password_with_the_one_given(tmp_path: Path, pdfs) -> None:
    locked, restricted = pdfs / "encrypted_userpw_openpassword.pdf", pdfs / "encrypted_ownerpw_only_copy-protected.pdf"
    without = _axiom(tmp_path / "data", "ingest", "--chat", "bank", str(locked))
    wrong = _axiom(tmp_path / "data", "ingest", "--chat", "bank", "--password", "guess", str(locked))
    opened = _axiom(tmp_path / "data", "ingest", "--chat", "bank", "--password", "openpassword", str(locked),
                    str(restricted))

    assert without.returncode == 1 and f"FAILED  {locked.name}: “{locked.name}” is password-protected" in without.stdout
    assert wrong.returncode == 1 and "does not open it" in wrong.stdout and "guess" not in wrong.stdout
    assert opened.returncode == 0, opened.stdout + opened.stderr[-2000:]
    assert f"ok      {locked.name}: 1 pages" in opened.stdout and f"ok      {restricted.name}: 2 pages" in opened.stdout


def test_ingest_reads_the_password_from_standard_input_off_the_command_line_and_an_empty_one_is_none(
    tmp_path: Path, pdfs
) -> None:
    locked = pdfs / "encrypted_userpw_openpassword.pdf"
    empty = _axiom(tmp_path / "data", "ingest", "--chat", "bank", "--password", "", str(locked))
    piped = _axiom(tmp_path / "data", "ingest", "--chat", "bank", "--password", "-", str(locked),
                   stdin="openpassword\n")

    assert empty.returncode == 1 and f"“{locked.name}” is password-protected. Enter its password" in empty.stdout
    assert piped.returncode == 0 and f"ok      {locked.name}: 1 pages" in piped.stdout, piped.stderr[-2000:]
    assert "visible to other users" in " ".join(_axiom(tmp_path / "data", "ingest", "--help").stdout.split())


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("ingest", "--chat", "notes", "{missing}"), "{missing}: no such file"),
        (("ingest", "--chat", "notes", "{folder}"), "{folder}: is a folder, not a file"),
        (("eval", "retrieval", "--beir", "{missing}"), "{missing}: no such folder"),
        (("eval", "retrieval", "--beir", "{folder}"), "not a BEIR folder"),
        (("eval", "groundedness", "--halueval", "{missing}"), "{missing}: no such file"),
        (("eval", "router", "--clinc", "{missing}"), "{missing}: no such file"),
        (("eval", "router", "--clinc", "{file}"), "the dataset file given is not JSON: Expecting value: line 1"),
        (("eval", "groundedness", "--labelled", "{file}"), "the dataset file given is not JSON"),
        (("eval", "answerability", "--shared-data", "{missing}"), "{missing}: no such folder"),
        (("serve", "--port", "99999"), "99999 is not a port"),
        (("serve", "--port", "http"), "'http' is not a port number"),
        (("ask", "--chat", "notes", " \t"), "The question should have some text"),
        (("search", "--chat", "notes", ""), "The query should have some text"),
        (("ingest", "--chat", "bad.id", "{file}"), "'bad.id' is not an id"),
        (("ask", "--chat", "notes", "--session", "", "Hello"), "'' is not an id"),
    ],
)
def test_a_wrong_path_or_argument_is_one_clear_line_and_status_2(tmp_path: Path, args, said: str) -> None:
    """Before, a missing file was a Python traceback (status 1) once the models had loaded, a port over 65535
    served on another port, a blank question was answered and a bad chat id was one FAILED line per file."""
    (tmp_path / "notes.txt").write_text("Axolotls regrow their limbs.")
    places = {"missing": str(tmp_path / "nowhere.pdf"), "folder": str(tmp_path), "file": str(tmp_path / "notes.txt")}
    run = _axiom(tmp_path / "data", *(arg.format(**places) for arg in args))
    assert run.returncode == 2, run.stderr[-2000:]
    assert said.format(**places) in run.stderr
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "data").exists()  # refused before any store was opened


@pytest.mark.parametrize(
    ("setting", "said"),
    [("AXIOM_AUTH=maybe", "the setting AXIOM_AUTH='maybe' is wrong: Input should be 'none' or 'api-key'"),
     ("AXIOM_LLM_STALL_TIMEOUT=soon", "the setting AXIOM_LLM_STALL_TIMEOUT='soon' is wrong"),
     ("AXIOM_MAX_FILES_PER_UPLOAD=many", "the setting AXIOM_MAX_FILES_PER_UPLOAD='many' is wrong"),
     ("AXIOM_OPENAI_BASE_URL=localhost:8080/v1", "'localhost:8080/v1' is wrong: Value error, must be a web"),
     # Its password is never shown, not even in a URL that cannot be read.
     ("AXIOM_DATABASE_URL=postgresql://axiom:s3cret@db:543x/axiom",
      "AXIOM_DATABASE_URL='postgresql://axiom:***@db:543x/axiom' is wrong"),
     ("AXIOM_DATABASE_URL=mysql://axiom:s3cret@db/axiom", "URL='mysql://axiom:***@db/axiom' is wrong"),
     ("AXIOM_STARTUP_WAIT_SECONDS=-1", "AXIOM_STARTUP_WAIT_SECONDS='-1' is wrong")],
)
def test_a_wrong_setting_is_named_in_one_line_not_a_traceback(tmp_path: Path, setting: str, said: str) -> None:
    name, value = setting.split("=", 1)
    run = subprocess.run(
        [AXIOM, "serve", "--port", "9"], env={**os.environ, "AXIOM_DATA_DIR": str(tmp_path), name: value},
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert run.returncode == 2, run.stderr[-2000:]
    assert said in run.stderr and "Traceback" not in run.stderr and "s3cret" not in run.stderr
