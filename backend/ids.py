"""Identifiers that reach a storage engine. Validated here so no id can address another chat's data."""

from __future__ import annotations

import re
import uuid

from backend.errors import ValidationFailed

# Letters, digits, '_' and '-', starting and ending with a letter or digit (as Chroma requires of a collection
# name): safe as a file name and a URL segment, with no way to spell a path or another collection.
_ID_PATTERN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?$")


def validate_id(value: str, *, field: str) -> str:
    if not isinstance(value, str) or not _ID_PATTERN.fullmatch(value):
        raise ValidationFailed(
            f"{field} must be 1-63 letters, digits, '_' or '-', starting and ending with a letter or digit.",
            field=field,
        )
    return value


def collection_name(chat_id: str) -> str:
    """The per-chat collection (ADR-007: one chat never sees another chat's documents)."""
    return f"chat_{validate_id(chat_id, field='chat_id')}"


def new_document_id() -> str:
    return uuid.uuid4().hex
