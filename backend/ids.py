"""Identifiers that reach a storage engine. Validated here so no id can address another chat's data."""

from __future__ import annotations

import re
import uuid

from backend.errors import ValidationFailed

# Letters, digits, '_' and '-', starting and ending with a letter or digit (as Chroma requires of a collection
# name): safe as a file name and a URL segment, with no way to spell a path or another collection. The API's
# OpenAPI document declares these same constants (backend/api/deps.py, schemas.py), so it cannot drift from here.
ID_MAX_LENGTH = 63
ID_PATTERN = rf"^[A-Za-z0-9](?:[A-Za-z0-9_-]{{0,{ID_MAX_LENGTH - 2}}}[A-Za-z0-9])?$"
ID_RULE = f"1-{ID_MAX_LENGTH} letters, digits, '_' or '-', starting and ending with a letter or digit"
_ID = re.compile(ID_PATTERN)


def validate_id(value: str, *, field: str) -> str:
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise ValidationFailed(f"{field} must be {ID_RULE}.", field=field)
    return value


COLLECTION_PREFIX = "chat_"


def collection_name(chat_id: str) -> str:
    """The per-chat collection (ADR-007: one chat never sees another chat's documents)."""
    return f"{COLLECTION_PREFIX}{validate_id(chat_id, field='chat_id')}"


def new_document_id() -> str:
    return uuid.uuid4().hex
