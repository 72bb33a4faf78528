"""Who is asking: API keys (AXIOM_AUTH=api-key), and the rule that a server reachable beyond this machine has them.

With keys on, every request but /health (load balancers' checks) and the web UI's files carries
``Authorization: Bearer KEY``; without one, or with an unknown or revoked one, it is answered 401 UNAUTHORIZED.
The user a key belongs to owns the chats they make or first use (backend/api/chats.py): another user's chat does
not exist for them. With keys off (AXIOM_AUTH unset on a loopback address, or ``none``) there is no user, and
everything is as it was before users existed.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from typing import Any

from backend.config import Settings
from backend.errors import AxiomError, Unauthorized
from backend.stores.database import open_database
from backend.stores.users import User, UserStore

log = logging.getLogger(__name__)

SECURITY_SCHEME = "apiKey"
_BEARER = "bearer"
# Open with keys on: load balancers' health checks, and the web UI, which then asks for the key itself.

_HOW_TO_CREATE = "create a key with `axiom keys create --user NAME`"


class Authenticator:
    """``users`` None: keys are off and nobody is asked for one."""

    def __init__(self, users: UserStore | None) -> None:
        self._users = users

    @property
    def enabled(self) -> bool:
        return self._users is not None

    def user(self, authorization: str | None) -> User | None:
        """The user whose key the ``Authorization`` header carries; raises Unauthorized when keys are on and it
        carries none, or one that is unknown or revoked."""
        if self._users is None:
            return None
        scheme, _, key = (authorization or "").partition(" ")
        if scheme.lower() != _BEARER or not key.strip():
            raise Unauthorized(
                "This server needs an API key: send the header `Authorization: Bearer KEY` (an administrator "
                f"can {_HOW_TO_CREATE})."
            )
        user = self._users.user_of(key.strip())
        if user is None:
            raise Unauthorized("This API key is not valid: it is unknown or has been revoked.")
        return user


class UnprotectedServer(AxiomError):
    """`axiom serve` on an address other machines can reach, without saying whether to ask for keys."""

    code = "UNPROTECTED_SERVER"


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only: a loopback address, or a name that resolves to
    loopback addresses only."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(addresses) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses)


def check_exposure(host: str, settings: Settings) -> None:
    """Called before `axiom serve` binds ``host``. Raises UnprotectedServer when ``host`` is reachable from
    other machines and AXIOM_AUTH is unset; warns when it is ``none`` there, or ``api-key`` with no key yet."""
    if settings.auth == "api-key":
        database = open_database(settings)
        try:
            keys = UserStore(database).api_keys()
        finally:
            database.dispose()
        if not any(key.revoked_at is None for key in keys):
            log.warning("AXIOM_AUTH=api-key but there is no API key yet: nobody can use the API until you %s",
                        _HOW_TO_CREATE)
        return
    if is_loopback(host):
        return
    if settings.auth is None:
        raise UnprotectedServer(
            f"{host} can be reached from other machines, so Axiom will not serve it without API keys. Either "
            f"{_HOW_TO_CREATE} and set AXIOM_AUTH=api-key (clients then send `Authorization: Bearer KEY`), or set "
            "AXIOM_AUTH=none to let anyone who can reach the port read and delete every chat."
        )
    log.warning(
        "AXIOM_AUTH=none on %s: ANYONE WHO CAN REACH THIS PORT CAN READ, ASK AND DELETE EVERY CHAT. Set "
        "AXIOM_AUTH=api-key to require API keys.", host,
    )


def declare_api_keys(openapi: dict[str, Any], open_paths: frozenset[str]) -> None:
    """The bearer scheme in the OpenAPI document (so /docs has "Authorize"), required by every operation but those
    of ``open_paths``, each of which may then answer 401."""
    openapi.setdefault("components", {}).setdefault("securitySchemes", {})[SECURITY_SCHEME] = {
        "type": "http",
        "scheme": _BEARER,
        "description": "An API key from `axiom keys create --user NAME`, sent as `Authorization: Bearer KEY`",
    }
    unauthorized = {
        "description": "No API key, or one that is unknown or revoked",
        "headers": {"WWW-Authenticate": {"description": "Bearer", "schema": {"type": "string"}}},
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }
    for path, operations in openapi.get("paths", {}).items():
        if path in open_paths:
            continue
        for operation in operations.values():
            operation["security"] = [{SECURITY_SCHEME: []}]
            operation.setdefault("responses", {})["401"] = unauthorized
