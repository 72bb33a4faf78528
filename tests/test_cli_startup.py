"""What an operator meets starting Axiom with a wrong configuration or servers not up yet: real `python -m
backend.cli` processes against a real PostgreSQL and a real `chroma run`, stopped or absent. Every failure is
one line and status 2, never a traceback, and never shows a database password; `axiom serve` waits for servers
that come up within AXIOM_STARTUP_WAIT_SECONDS and then serves."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest

from tests.llm.support import free_port
from tests.support.chroma_server import start_chroma_server
from tests.support.serve_process import stop_serving
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "s3cret-pw"
NOTES = "Axolotls can regrow their limbs, their hearts and even parts of their brains."


def _environment(data_dir: Path, **settings: str) -> dict[str, str]:
    # The child imports this checkout's code; the tests' own AXIOM_* settings do not leak in.
    inherited = {name: value for name, value in os.environ.items() if not name.startswith("AXIOM_")}
    return {**inherited, "PYTHONPATH": str(ROOT), "AXIOM_DATA_DIR": str(data_dir), **settings}


def _axiom(cwd: Path, environment: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "backend.cli", *args], cwd=cwd, env=environment, capture_output=True,
        text=True, timeout=600, check=False,
    )


def _assert_one_clear_line(run: subprocess.CompletedProcess[str], *said: str) -> str:
    """The run failed with status 2 and one `error:` line holding each of ``said``; returns that line."""
    assert run.returncode == 2, run.stderr[-3000:]
    output = run.stdout + run.stderr
    assert "Traceback" not in output and PASSWORD not in output, output[-3000:]
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, run.stderr[-3000:]
    for words in said:
        assert words in errors[0], errors[0]
    return errors[0]


@contextmanager
def _serving(cwd: Path, environment: dict[str, str], port: int) -> Iterator[tuple[subprocess.Popen, Path]]:
    """`axiom serve` started in the background, its output in a log file; stopped with SIGINT."""
    log_path = cwd / "serve.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "backend.cli", "serve", "--port", str(port)], cwd=cwd, env=environment,
            stdout=log, stderr=subprocess.STDOUT,
        )
    try:
        yield process, log_path
    finally:
        stop_serving(process)


def _closed_port() -> int:
    """A loopback port nothing listens on: connections to it are refused."""
    return free_port()


# --- axiom serve waits for its servers --------------------------------------------------------------------


@pytest.mark.slow
def test_serve_started_before_its_database_and_chroma_servers_waits_for_them_then_serves(
    postgres_server, tmp_path: Path
) -> None:
    """As `docker compose up` may start them, or a machine's restart: both come up while serve waits."""
    database_url = postgres_server.create_database()
    chroma = start_chroma_server(tmp_path)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    environment = _environment(
        data_dir, AXIOM_DATABASE_URL=database_url, AXIOM_CHROMA_HOST=chroma.host,
        AXIOM_CHROMA_PORT=str(chroma.port), AXIOM_STARTUP_WAIT_SECONDS="600",
    )
    port = free_port()
    try:
        with ExitStack() as serve:
            with ExitStack() as outage:
                outage.enter_context(postgres_server.down())
                outage.enter_context(chroma.down())
                process, log_path = serve.enter_context(_serving(data_dir, environment, port))
                for waiting in (f"Waiting for the database at 127.0.0.1:{postgres_server.port}",
                                f"Waiting for the Chroma server at {chroma.host}:{chroma.port}"):
                    wait_for(lambda words=waiting: _logged(log_path, process, words), waiting)
            # Both servers are up again (leaving the block started them), and serve is still waiting.
            wait_for(lambda: _healthy(port, process, log_path), "serve to answer once its servers are up")
            health = httpx.get(f"http://127.0.0.1:{port}/health").json()
            assert health["vector_store"] == "chroma-server" and health["vector_store_reachable"] is True
    finally:
        chroma.stop()
    assert "Traceback" not in log_path.read_text()


def _logged(log_path: Path, process: subprocess.Popen, words: str) -> bool:
    if process.poll() is not None:
        raise AssertionError(f"serve exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
    return words in log_path.read_text()


def _healthy(port: int, process: subprocess.Popen, log_path: Path) -> bool:
    return _healthy_at(f"http://127.0.0.1:{port}", process, log_path)


def _healthy_at(base_url: str, process: subprocess.Popen, log_path: Path) -> bool:
    if process.poll() is not None:
        raise AssertionError(f"serve exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
    try:
        return httpx.get(f"{base_url}/health").status_code == 200
    except httpx.TransportError:
        return False


@pytest.mark.parametrize("server", ["database", "chroma"])
def test_serve_gives_up_on_a_server_that_stays_down_with_one_line(server: str, tmp_path: Path) -> None:
    """It says what it waits for at each try, then stops before loading anything."""
    port = _closed_port()
    if server == "database":
        settings = {"AXIOM_DATABASE_URL": f"postgresql://axiom:{PASSWORD}@127.0.0.1:{port}/axiom"}
        waiting, said = f"Waiting for the database at 127.0.0.1:{port}", "AXIOM_DATABASE_URL"
    else:
        settings = {"AXIOM_CHROMA_HOST": "127.0.0.1", "AXIOM_CHROMA_PORT": str(port)}
        waiting, said = f"Waiting for the Chroma server at 127.0.0.1:{port}", "AXIOM_CHROMA_HOST"
    environment = _environment(tmp_path / "data", AXIOM_STARTUP_WAIT_SECONDS="3", **settings)
    run = _axiom(tmp_path, environment, "serve", "--port", str(free_port()))
    error = _assert_one_clear_line(run, f"127.0.0.1:{port}", "does not accept connections after 3 s", said)
    assert "AXIOM_STARTUP_WAIT_SECONDS" in error
    assert waiting in run.stderr
    assert not (tmp_path / "data").exists()  # nothing was opened


def test_serve_given_a_database_url_with_a_wrong_option_says_so_at_once(tmp_path: Path) -> None:
    """Waiting would not mend it: one line at once, not a traceback."""
    url = f"postgresql://axiom:{PASSWORD}@127.0.0.1:{_closed_port()}/axiom?no_such_option=1"
    environment = _environment(tmp_path / "data", AXIOM_DATABASE_URL=url, AXIOM_STARTUP_WAIT_SECONDS="600")
    run = _axiom(tmp_path, environment, "serve", "--port", str(free_port()))
    _assert_one_clear_line(run, 'invalid connection option "no_such_option"', "AXIOM_DATABASE_URL")
    assert "Waiting" not in run.stderr


@pytest.mark.parametrize(
    ("provider", "setting"), [("ollama", "AXIOM_OLLAMA_BASE_URL"), ("openai", "AXIOM_OPENAI_BASE_URL")]
)
def test_serve_warns_of_a_model_server_that_does_not_answer_and_serves(
    provider: str, setting: str, tmp_path: Path
) -> None:
    """Not waited for (questions show their passages without it): one warning line, then serving."""
    base_url = f"http://127.0.0.1:{_closed_port()}" + ("/v1" if provider == "openai" else "")
    environment = _environment(tmp_path, AXIOM_LLM_PROVIDER=provider, **{setting: base_url})
    port = free_port()
    with _serving(tmp_path, environment, port) as (process, log_path):
        wait_for(lambda: _healthy(port, process, log_path), "serve to answer /health")
    output = log_path.read_text()
    assert f"The language model server at {base_url} does not answer (" in output
    assert setting in output and "Traceback" not in output


def test_serve_stopped_with_ctrl_c_while_it_waits_stops_quietly(tmp_path: Path) -> None:
    environment = _environment(
        tmp_path, AXIOM_STARTUP_WAIT_SECONDS="600",
        AXIOM_DATABASE_URL=f"postgresql://axiom:{PASSWORD}@127.0.0.1:{_closed_port()}/axiom",
    )
    with _serving(tmp_path, environment, free_port()) as (process, log_path):
        wait_for(lambda: _logged(log_path, process, "Waiting for the database"), "serve to wait")
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 130
    output = log_path.read_text()
    assert "Traceback" not in output and PASSWORD not in output and output.endswith("interrupted\n")


def test_serve_stopped_by_sigterm_closes_its_services(tmp_path: Path) -> None:
    """`docker stop` sends SIGTERM: the server shuts down, its reader processes end with it, and it exits with
    128 + 15, as a process ended by the signal."""
    port = free_port()
    with _serving(tmp_path, _environment(tmp_path / "data"), port) as (process, log_path):
        wait_for(lambda: _healthy(port, process, log_path), "serve to answer /health")
        children = _children(process.pid)
        assert children, "no reader process"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 128 + signal.SIGTERM
    wait_for(lambda: not any(map(_running, children)), "the reader processes to end")
    output = log_path.read_text()
    assert "Application shutdown complete" in output and "Traceback" not in output and "leaked" not in output


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_serve_stopped_while_its_model_loads_stops_once_built_without_serving(stop, tmp_path: Path) -> None:
    """Raised at once, the signal would land in llama.cpp's log callback, where ctypes drops it, and the server
    would start anyway (found so half the times, SIGTERM and Ctrl+C alike): it is acted on once the services
    are built, which are then closed."""
    port = free_port()
    with _serving(tmp_path, _environment(tmp_path / "data"), port) as (process, log_path):
        wait_for(lambda: _logged(log_path, process, "") and _loading_the_model(process.pid), "the model to load")
        process.send_signal(stop)
        assert process.wait(timeout=120) == 128 + stop
    output = log_path.read_text()
    assert "Stopping once the services are built" in output
    assert "Application startup" not in output and "Traceback" not in output, output[-3000:]


def _loading_the_model(pid: int) -> bool:
    """llama.cpp maps the model's file as it loads it."""
    return ".gguf" in Path(f"/proc/{pid}/maps").read_text()


def _children(pid: int) -> list[int]:
    return [int(child) for task in Path(f"/proc/{pid}/task").iterdir()
            for child in (task / "children").read_text().split()]


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has ended, waiting only to be reaped


def test_serve_without_a_wait_fails_at_once(tmp_path: Path) -> None:
    environment = _environment(
        tmp_path / "data", AXIOM_STARTUP_WAIT_SECONDS="0", AXIOM_CHROMA_HOST="127.0.0.1",
        AXIOM_CHROMA_PORT=str(_closed_port()),
    )
    run = _axiom(tmp_path, environment, "serve", "--port", str(free_port()))
    _assert_one_clear_line(run, "The Chroma server at 127.0.0.1:", "does not accept connections (")
    assert "Waiting" not in run.stderr


# --- the other commands, and serve's own arguments ---------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [("keys", "list"), ("keys", "create", "--user", "alice"), ("ingest", "--chat", "notes", "{file}"),
     ("search", "--chat", "notes", "axolotls"), ("ask", "--chat", "notes", "What can axolotls regrow?")],
)
def test_a_command_meeting_an_unreachable_database_says_so_in_one_line(command, tmp_path: Path) -> None:
    """The other commands do not wait: a person at a terminal is told at once (the password masked)."""
    notes = tmp_path / "notes.txt"
    notes.write_text(NOTES)
    port = _closed_port()
    environment = _environment(
        tmp_path / "data", AXIOM_DATABASE_URL=f"postgresql://axiom:{PASSWORD}@127.0.0.1:{port}/axiom"
    )
    run = _axiom(tmp_path, environment, *(part.format(file=notes) for part in command))
    _assert_one_clear_line(
        run, f"axiom:***@127.0.0.1:{port}/axiom", "Connection refused", "AXIOM_DATABASE_URL"
    )
    assert run.stdout == ""  # not even a heading


@pytest.mark.parametrize(
    "command",
    [("ingest", "--chat", "notes", "{file}"), ("ask", "--chat", "notes", "What can axolotls regrow?")],
)
def test_a_command_meeting_an_unreachable_chroma_server_says_so_in_one_line(command, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text(NOTES)
    port = _closed_port()
    environment = _environment(tmp_path / "data", AXIOM_CHROMA_HOST="127.0.0.1", AXIOM_CHROMA_PORT=str(port))
    run = _axiom(tmp_path, environment, *(part.format(file=notes) for part in command))
    _assert_one_clear_line(run, f"The Chroma server at 127.0.0.1:{port} is unreachable", "AXIOM_CHROMA_PORT")


def test_a_chroma_server_at_an_ipv6_address_is_used(tmp_path: Path) -> None:
    chroma = start_chroma_server(tmp_path, host="::1")
    try:
        notes = tmp_path / "notes.txt"
        notes.write_text(NOTES)
        environment = _environment(tmp_path / "data", AXIOM_CHROMA_HOST="::1", AXIOM_CHROMA_PORT=str(chroma.port))
        run = _axiom(tmp_path, environment, "ingest", "--chat", "notes", str(notes))
        assert run.returncode == 0, run.stderr[-3000:]
        run = _axiom(tmp_path, environment, "search", "--chat", "notes", "regrow limbs")
        assert run.returncode == 0 and "Axolotls" in run.stdout, run.stderr[-3000:]
    finally:
        chroma.stop()


def test_a_misspelt_setting_is_named_with_the_one_meant(tmp_path: Path) -> None:
    """Ignored, as any variable that is no setting, but said: else the chats would go to SQLite unnoticed."""
    (tmp_path / ".env").write_text("AXIOM_CHROMA_HOSTNAME=chroma\n")
    environment = _environment(tmp_path / "data", AXIOM_DATABSE_URL="postgresql://axiom@db/axiom")
    run = _axiom(tmp_path, environment, "keys", "list")
    assert run.returncode == 0, run.stderr[-3000:]
    misspelt = {"AXIOM_DATABSE_URL": "AXIOM_DATABASE_URL", "AXIOM_CHROMA_HOSTNAME": "AXIOM_CHROMA_HOST"}
    for given, meant in misspelt.items():
        assert f"{given} is not a setting, so it is ignored: did you mean {meant}?" in run.stderr


def test_serve_on_a_port_in_use_says_so_before_loading_anything(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = _axiom(tmp_path, _environment(tmp_path / "data"), "serve", "--port", str(port))
    _assert_one_clear_line(run, f"Cannot listen on 127.0.0.1:{port}: the port is already in use", "--port")
    assert not (tmp_path / "data").exists()


def test_serve_on_ipv6_alone_shares_its_port_with_an_ipv4_server(tmp_path: Path) -> None:
    """As uvicorn binds it, "::" is IPv6 alone: a port another program holds on IPv4 is no hindrance."""
    with socket.socket() as ipv4:
        ipv4.bind(("0.0.0.0", 0))
        ipv4.listen()
        port = ipv4.getsockname()[1]
        environment = _environment(tmp_path / "data", AXIOM_AUTH="none")
        log_path = tmp_path / "serve.log"
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "backend.cli", "serve", "--host", "::", "--port", str(port)], cwd=tmp_path,
                env=environment, stdout=log, stderr=subprocess.STDOUT,
            )
        try:
            wait_for(lambda: _healthy_at(f"http://[::1]:{port}", process, log_path), "serve to answer on IPv6")
        finally:
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=120) == 130


def test_serve_on_an_address_this_machine_lacks_says_so(tmp_path: Path) -> None:
    run = _axiom(tmp_path, _environment(tmp_path / "data"), "serve", "--host", "192.0.2.1", "--port", "8000")
    _assert_one_clear_line(run, "Cannot listen on 192.0.2.1:", "check --host")


@pytest.mark.parametrize("command", [("serve", "--port", "{port}"), ("ingest", "--chat", "notes", "{file}")])
def test_a_data_directory_that_cannot_be_made_is_named_with_its_setting(command, tmp_path: Path) -> None:
    """A file where the folder should be (a folder the user may not write in reads the same, but the tests run
    as root, who may write anywhere)."""
    notes = tmp_path / "notes.txt"
    notes.write_text(NOTES)
    data_dir = notes / "data"
    run = _axiom(tmp_path, _environment(data_dir), *(p.format(port=free_port(), file=notes) for p in command))
    _assert_one_clear_line(
        run, f"The data directory {data_dir} cannot be used: Not a directory", "AXIOM_DATA_DIR"
    )
