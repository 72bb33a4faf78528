"""`axiom keys` and `axiom serve`'s refusal to serve other machines without API keys, as a person runs them."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from backend.api.auth import UnprotectedServer, check_exposure, is_loopback
from backend.config import Settings
from backend.stores.chats import ChatStore
from backend.stores.database import open_database
from backend.stores.users import UserStore

AXIOM = str(Path(sys.executable).with_name("axiom"))


def axiom(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [AXIOM, *args], env={**os.environ, "AXIOM_DATA_DIR": str(data_dir)},
        capture_output=True, text=True, timeout=120, check=False,
    )


def test_keys_are_created_listed_and_revoked(tmp_path: Path) -> None:
    created = axiom(tmp_path, "keys", "create", "--user", "alice")
    assert created.returncode == 0, created.stderr
    (key,) = [word for word in created.stdout.split() if word.startswith("axk_") and "`" not in word]
    users = UserStore(open_database(Settings(data_dir=tmp_path)))
    assert users.user_of(key).name == "alice"
    (key_id,) = [record.key_id for record in users.api_keys()]

    listed = axiom(tmp_path, "keys", "list")
    assert listed.returncode == 0 and key_id in listed.stdout and "alice" in listed.stdout
    assert key not in listed.stdout

    revoked = axiom(tmp_path, "keys", "revoke", key_id)
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    assert users.user_of(key) is None
    assert "-\n" not in axiom(tmp_path, "keys", "list").stdout  # the REVOKED column has a date now
    again = axiom(tmp_path, "keys", "revoke", key_id)
    assert again.returncode == 2 and "already revoked" in again.stderr


def test_serve_refuses_another_machines_address_without_auth_and_says_how_to_set_it(tmp_path: Path) -> None:
    refused = axiom(tmp_path, "serve", "--host", "0.0.0.0", "--port", "9")
    assert refused.returncode == 2
    assert "axiom keys create --user NAME" in refused.stderr and "AXIOM_AUTH=api-key" in refused.stderr
    assert "AXIOM_AUTH=none" in refused.stderr


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_needs_no_auth(host: str, tmp_path: Path) -> None:
    assert is_loopback(host)
    check_exposure(host, Settings(data_dir=tmp_path))


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10"])
def test_any_other_address_needs_auth_set(host: str, tmp_path: Path, caplog) -> None:
    assert not is_loopback(host)
    with pytest.raises(UnprotectedServer):
        check_exposure(host, Settings(data_dir=tmp_path))
    with caplog.at_level(logging.WARNING):
        check_exposure(host, Settings(data_dir=tmp_path, auth="none"))
    assert "ANYONE WHO CAN REACH THIS PORT" in caplog.text
    caplog.clear()
    UserStore(open_database(Settings(data_dir=tmp_path))).create_key("alice")
    with caplog.at_level(logging.WARNING):
        check_exposure(host, Settings(data_dir=tmp_path, auth="api-key"))
    assert not caplog.records


def test_keys_on_without_any_key_warns(tmp_path: Path, caplog) -> None:
    with caplog.at_level(logging.WARNING):
        check_exposure("0.0.0.0", Settings(data_dir=tmp_path, auth="api-key"))
    assert "no API key yet" in caplog.text


def test_ingest_for_a_user_gives_them_the_chat(tmp_path: Path) -> None:
    notes = tmp_path / "axolotl.txt"
    notes.write_text("Axolotls can regrow their limbs, their hearts and even parts of their brains.")
    data_dir = tmp_path / "data"
    users = UserStore(open_database(Settings(data_dir=data_dir)))
    users.create_key("alice"), users.create_key("bob")

    ingested = axiom(data_dir, "ingest", "--chat", "notes", "--user", "alice", str(notes))
    assert ingested.returncode == 0, ingested.stderr
    assert ChatStore(open_database(Settings(data_dir=data_dir))).get("notes").owner == users.user_named("alice").user_id

    refused = axiom(data_dir, "ingest", "--chat", "notes", "--user", "bob", str(notes))
    assert refused.returncode == 2 and "belongs to another user" in refused.stderr
    unknown = axiom(data_dir, "ingest", "--chat", "other", "--user", "carol", str(notes))
    assert unknown.returncode == 2 and "axiom keys create --user carol" in unknown.stderr
