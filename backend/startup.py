"""What Axiom checks before it loads anything: that its data directory can be written in, and for `axiom
serve`, that it can listen on its address and that the servers it cannot start without accept connections.

The database server (PostgreSQL, when AXIOM_DATABASE_URL names one) and the Chroma server (AXIOM_CHROMA_HOST)
may start after Axiom: `docker compose up` starts them together, and a machine's restart brings containers
back in any order, whatever their ``depends_on``. So start-up waits for them, up to
AXIOM_STARTUP_WAIT_SECONDS, saying once per try what it waits for and why; then it goes on, or stops with one
line naming the server, the reason and the settings to check. The language model server is not waited for: it
is asked at every question, and only a question it does not answer fails (after showing the passages found);
one that does not answer at start-up is warned of, once.
"""

from __future__ import annotations

import errno
import logging
import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
from sqlalchemy import Engine, exc

from backend.config import Settings
from backend.errors import AxiomError, VectorStoreUnreachable
from backend.stores.chroma import check_server
from backend.stores.database import (
    DatabaseUnavailable,
    create_database_engine,
    database_url,
    one_line,
    shown_url,
)

log = logging.getLogger(__name__)

# Seconds between tries: a server starting up takes a few seconds, and a line every two is readable.
RETRY_SECONDS = 2.0
_POSTGRESQL_PORT = 5432
_MODEL_SERVER_CHECK_SECONDS = 5.0


class CannotStart(AxiomError):
    """A setting or argument Axiom cannot start with: its address and port, its data directory."""

    code = "CANNOT_START"


_LISTEN_PROBLEMS = {
    errno.EADDRINUSE: "the port is already in use (another `axiom serve`?); choose another with --port",
    errno.EACCES: "permission denied (ports below 1024 need root); choose another with --port",
    errno.EADDRNOTAVAIL: "no network interface of this machine has that address; check --host",
}


def check_port(host: str, port: int) -> None:
    """Raises CannotStart unless ``host``:``port`` can be bound now, as the server (asyncio) binds it: with
    SO_REUSEADDR, on every address the name resolves to but those of a family this machine has switched off.
    Told at once, not once the models have loaded."""
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise CannotStart(f"Cannot listen on {host}:{port}: {error.strerror}; check --host.") from error
    bound, unavailable = False, None
    for family, kind, protocol, _, address in addresses:
        try:
            probe = socket.socket(family, kind, protocol)
        except OSError:  # a family switched off (no IPv6): skipped, as asyncio does
            continue
        with probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:  # as asyncio: "::" is IPv6 alone, whoever holds the port on IPv4
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(address)
                bound = True
            except OSError as error:
                if error.errno != errno.EADDRNOTAVAIL:
                    problem = _LISTEN_PROBLEMS.get(error.errno, error.strerror)
                    raise CannotStart(f"Cannot listen on {host}:{port}: {problem}.") from error
                unavailable = error  # skipped as well, as long as another address binds
    if not bound:
        problem = _LISTEN_PROBLEMS[errno.EADDRNOTAVAIL]
        raise CannotStart(f"Cannot listen on {host}:{port}: {problem}.") from unavailable


def prepare_data_dir(folder: Path) -> None:
    """Makes the data directory if it is missing, and checks that a file can be written in it: else each store
    would fail in its own words (SQLite's "unable to open database file")."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise CannotStart(
            f"The data directory {folder} cannot be used: {error.strerror}. Set AXIOM_DATA_DIR to a folder "
            "this user can write in.", data_dir=str(folder),
        ) from error


@dataclass(frozen=True)
class _Server:
    name: str
    address: str
    settings: str  # the settings that name it, for the operator to check
    problem: Callable[[float], str | None]  # one try within the seconds given: why it is not ready, or None
    error: type[AxiomError]


def wait_for_servers(settings: Settings) -> None:
    """Returns once every server the settings name accepts connections; raises DatabaseUnavailable or
    VectorStoreUnreachable when one still does not after ``settings.startup_wait_seconds``."""
    engine = _database_engine(settings)
    try:
        waiting = _servers(settings, engine)
        deadline = time.monotonic() + settings.startup_wait_seconds
        while waiting:
            left = deadline - time.monotonic()
            problems = {server: server.problem(max(left, RETRY_SECONDS)) for server in waiting}
            waiting = [server for server, problem in problems.items() if problem is not None]
            left = deadline - time.monotonic()
            for server in waiting:
                if left <= 0:
                    raise _gave_up(server, problems[server], settings.startup_wait_seconds)
                log.warning("Waiting for %s at %s (%s); %d s left", server.name, server.address,
                            problems[server], left)
            if waiting:
                time.sleep(min(RETRY_SECONDS, left))
    finally:
        if engine is not None:
            engine.dispose()


def _gave_up(server: _Server, problem: str, waited_seconds: float) -> AxiomError:
    waited = f" after {waited_seconds:g} s of waiting" if waited_seconds > 0 else ""
    return server.error(
        f"{server.name[0].upper()}{server.name[1:]} at {server.address} does not accept connections{waited} "
        f"({problem}). Check {server.settings} and that the server is running; AXIOM_STARTUP_WAIT_SECONDS "
        "sets how long to wait.", address=server.address,
    )


def warn_if_the_model_server_is_away(settings: Settings) -> None:
    """One warning line when the language model server the settings name does not answer; serving goes on."""
    if settings.llm_provider == "ollama":
        base_url, setting, route = settings.ollama_base_url, "AXIOM_OLLAMA_BASE_URL", "api/version"
    elif settings.llm_provider == "openai":
        base_url, setting, route = settings.openai_base_url, "AXIOM_OPENAI_BASE_URL", "models"
    else:
        return  # the embedded model: loaded in this process
    # Ollama's client, like OLLAMA_HOST, takes a host:port without http://.
    url = (base_url if "://" in base_url else f"http://{base_url}").rstrip("/")
    try:
        # Any answer will do, even 401; a short bound, as a black-holed address must not hold the start for the
        # minute a first token may take, and a server too slow for it is only warned of.
        httpx.get(f"{url}/{route}", timeout=min(_MODEL_SERVER_CHECK_SECONDS, settings.llm_first_token_timeout))
    except httpx.HTTPError as error:
        log.warning(
            "The language model server at %s does not answer (%s): until it does, questions show the "
            "passages found, then fail with SYNTHESIS_FAILED. Check %s and that the server is running.",
            base_url, one_line(error) or type(error).__name__, setting,
        )


def _database_engine(settings: Settings) -> Engine | None:
    """An engine for a database server; None for SQLite, a file opened in this process."""
    url = database_url(settings)
    return None if url.get_backend_name() == "sqlite" else create_database_engine(url)


def _servers(settings: Settings, engine: Engine | None) -> list[_Server]:
    servers = []
    if engine is not None:
        url = engine.url
        address = f"{url.host}:{url.port or _POSTGRESQL_PORT}" if url.host else shown_url(url)
        servers.append(_Server(
            "the database", address, "AXIOM_DATABASE_URL", lambda _: _database_problem(engine),
            DatabaseUnavailable,
        ))
    if settings.chroma_host is not None:
        address = f"{settings.chroma_host}:{settings.chroma_port}"
        timeout = settings.chroma_timeout_seconds
        servers.append(_Server(
            "the Chroma server", address, "AXIOM_CHROMA_HOST, AXIOM_CHROMA_PORT",
            lambda left: _chroma_problem(address, min(timeout, left)), VectorStoreUnreachable,
        ))
    return servers


def _database_problem(engine: Engine) -> str | None:
    # libpq's own connect timeout bounds a try (create_database_engine).
    try:
        with engine.connect():
            return None
    except exc.OperationalError as error:
        return one_line(error.orig)
    except exc.DBAPIError as error:  # the URL itself is wrong (invalid connection option "foo"): no wait mends it
        where = shown_url(engine.url)
        raise DatabaseUnavailable(
            f"The database {where} cannot be connected to ({one_line(error.orig)}). Check AXIOM_DATABASE_URL.",
            database=where,
        ) from error


def _chroma_problem(address: str, timeout_seconds: float) -> str | None:
    try:
        check_server(address, timeout_seconds)
    except VectorStoreUnreachable as error:
        return one_line(error.details["cause"])
    return None
