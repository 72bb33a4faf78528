"""Settings that name servers: checked when read, so a wrong one is told at start-up, and a database URL's
password never shown."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from backend.config import Settings, masked_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [("postgresql://axiom:s3cret@db:5432/axiom", "postgresql://axiom:***@db:5432/axiom"),
     # Unencoded, a password may hold "@" and "/": all of it up to the host's "@" is hidden.
     ("postgresql://axiom:s3@c/ret@db/axiom", "postgresql://axiom:***@db/axiom"),
     ("postgresql://:s3cret@db/axiom", "postgresql://:***@db/axiom"),
     ("postgresql://axiom@db/axiom?sslmode=require&password=s3cret",
      "postgresql://axiom@db/axiom?sslmode=require&password=***"),
     ("postgresql://axiom@db:5432/axiom", "postgresql://axiom@db:5432/axiom"),
     ("sqlite:////srv/axiom/axiom.db", "sqlite:////srv/axiom/axiom.db")],
)
def test_a_database_url_is_shown_without_its_password(url: str, shown: str) -> None:
    assert masked_url(url) == shown


@pytest.mark.parametrize(
    "url",
    ["mysql://axiom:s3cret@db/axiom", "postgresql://axiom:s3cret@db:5432x/axiom", "postgresql:/", "db:5432"],
)
def test_a_database_url_axiom_cannot_use_is_refused(url: str) -> None:
    with pytest.raises(ValidationError, match="must be a postgresql://"):
        Settings(database_url=url)


@pytest.mark.parametrize(
    "url", ["postgresql://axiom:s3cret@db:5432/axiom", "postgres://db/axiom", "postgresql+psycopg://db/axiom",
            "sqlite:///axiom.db"],
)
def test_a_database_url_axiom_can_use_is_kept_as_given(url: str) -> None:
    assert Settings(database_url=url).database_url == url


@pytest.mark.parametrize("host", ["http://chroma", "chroma:8000", "chroma/", ""])
def test_a_chroma_host_is_a_host_alone(host: str) -> None:
    with pytest.raises(ValidationError, match="must be a host name or IP address alone"):
        Settings(chroma_host=host)


@pytest.mark.parametrize(("host", "kept"), [("::1", "[::1]"), ("[fd00::5]", "[fd00::5]"), ("localhost", "localhost"),
                                           ("10.0.0.5", "10.0.0.5")])
def test_a_chroma_host_may_be_an_ipv6_address_kept_in_brackets(host: str, kept: str) -> None:
    assert Settings(chroma_host=host).chroma_host == kept


def test_a_chroma_port_is_a_port() -> None:
    assert Settings(chroma_host="chroma", chroma_port=8001).chroma_port == 8001
    with pytest.raises(ValidationError):
        Settings(chroma_port=80000)


@pytest.mark.parametrize("url", ["localhost:8080/v1", "ftp://models/v1", "http://", "/v1"])
def test_an_openai_base_url_must_be_a_web_address(url: str) -> None:
    """httpx would only refuse it at the first question ("unsupported protocol")."""
    with pytest.raises(ValidationError, match="must be a web address starting with http:// or https://"):
        Settings(openai_base_url=url)


def test_the_start_up_wait_is_never_negative() -> None:
    assert Settings().startup_wait_seconds > 0
    assert Settings(startup_wait_seconds=0).startup_wait_seconds == 0
    with pytest.raises(ValidationError):
        Settings(startup_wait_seconds=-1)
