"""A real PostgreSQL server for the tests: Debian's binaries (scripts/install-postgresql.sh), a cluster made
by ``initdb`` in a temporary directory, listening on a free loopback port with its socket in that directory.

PostgreSQL refuses to run as root; as root the cluster belongs to the ``postgres`` user the Debian package
creates. Durability is switched off (fsync, synchronous commit): a test cluster never outlives its run.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

SUPERUSER = "postgres"
# The engines the store tests (and some API tests) run on, each in turn.
DATABASES = ["sqlite", "postgresql"]


def find_binaries() -> Path | None:
    """$AXIOM_POSTGRESQL_BIN, else the newest /usr/lib/postgresql/<major>/bin holding initdb."""
    if configured := os.environ.get("AXIOM_POSTGRESQL_BIN"):
        return Path(configured)
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda path: int(Path(path).parts[-3]))
    return Path(found[-1]).parent if found else None


@dataclass
class PostgresServer:
    binaries: Path
    directory: Path
    port: int

    @classmethod
    def start(cls, binaries: Path) -> PostgresServer:
        directory = Path(tempfile.mkdtemp(prefix="axiom-postgresql-"))
        if os.geteuid() == 0:
            shutil.chown(directory, SUPERUSER, SUPERUSER)
        server = cls(binaries, directory, _free_port())
        server._run("initdb", "--pgdata", str(server.data), "--username", SUPERUSER, "--auth", "trust",
                    "--encoding", "UTF8", "--no-sync")
        server._start()
        return server

    def _start(self) -> None:
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.directory} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
        )
        log = self.directory / "server.log"
        try:
            self._run("pg_ctl", "start", "--pgdata", str(self.data), "--wait", "--timeout", "120",
                      "--log", str(log), "-o", options)
        except subprocess.CalledProcessError as failed:
            written = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            raise RuntimeError(f"PostgreSQL did not start: {failed.stderr}\n{written}") from failed

    @contextmanager
    def frozen(self) -> Iterator[None]:
        """The server's listening process stopped (SIGSTOP) for the block, as a hung server or a network cut:
        new connections are accepted by the kernel but never answered. Connections already open still work."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        os.kill(postmaster, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(postmaster, signal.SIGCONT)

    @contextmanager
    def down(self) -> Iterator[None]:
        """The server shut down (its clients' connections closed, new ones refused) for the block, then started
        again on the same port with its data: a database server restarting under a running service."""
        self._run("pg_ctl", "stop", "--pgdata", str(self.data), "--mode", "fast", "--wait")
        try:
            yield
        finally:
            self._start()

    @property
    def data(self) -> Path:
        return self.directory / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new empty database; returns its URL."""
        name = f"axiom_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "stop", "--pgdata", str(self.data), "--mode", "immediate", "--wait")
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.binaries / program), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", SUPERUSER, "--", *command]
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=180)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
