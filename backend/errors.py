"""Typed errors with a stable code, a status and a message a person can act on.

The API maps every AxiomError to ``{error, message, details}`` with its status; nothing else reaches a client.
"""

from __future__ import annotations

from typing import Any


class AxiomError(Exception):
    code = "INTERNAL_ERROR"
    status = 500

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_body(self) -> dict[str, Any]:
        return {"error": self.code, "message": self.message, "details": self.details}

    def __reduce__(self) -> tuple:
        # Errors cross process boundaries (documents are read in a worker process); subclasses take keyword-only
        # arguments that Exception's default pickling would not pass back.
        return _restore, (type(self), self.__dict__)

    @property
    def headers(self) -> dict[str, str]:
        """HTTP headers the response carries besides the body: a Retry-After when the error says when to try
        again (``details["retry_after_seconds"]``), none otherwise."""
        seconds = self.details.get("retry_after_seconds")
        return {} if seconds is None else {"Retry-After": str(seconds)}


class Cancelled(Exception):
    """Work stopped because whoever started it cancelled it (a background job, a chat being deleted)."""


class TooLongForRequest(Exception):
    """Reading a file would keep its upload request waiting too long (``backend/ingest/reader.py``, ``Patience``):
    it is indexed by a background job instead."""


class ValidationFailed(AxiomError):
    code = "VALIDATION_ERROR"
    status = 400

    def to_body(self) -> dict[str, Any]:
        """With ``details.errors`` always, as the 400s of the request's schema have it: a client reads one shape."""
        body = super().to_body()
        if "field" in self.details and "errors" not in self.details:
            body["details"] = {**self.details, "errors": [{"field": self.details["field"], "message": self.message}]}
        return body


class Unauthorized(AxiomError):
    """No API key, or one that is unknown or revoked, on a server that asks for keys (AXIOM_AUTH=api-key)."""

    code = "UNAUTHORIZED"
    status = 401

    @property
    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": 'Bearer realm="axiom"'}


class NotFound(AxiomError):
    code = "NOT_FOUND"
    status = 404


class Conflict(AxiomError):
    """The request cannot be carried out while something else is under way; it can be retried later."""

    code = "CONFLICT"
    status = 409


class ChatWasDeleted(AxiomError):
    """An upload or a question sent to a chat that was deleted (from a browser tab still showing it): the chat is
    not made again around the new file or message; the client should forget the chat and use another."""

    code = "CHAT_DELETED"
    status = 410


class FileTooLarge(AxiomError):
    code = "FILE_TOO_LARGE"
    status = 413


class PayloadTooLarge(AxiomError):
    """A request body (other than an upload's) larger than the server reads."""

    code = "PAYLOAD_TOO_LARGE"
    status = 413


class UnsupportedFileType(AxiomError):
    code = "UNSUPPORTED_FILE_TYPE"
    status = 415


class RangeNotSatisfiable(AxiomError):
    """A ``Range`` of a web UI file that starts past its end."""

    code = "RANGE_NOT_SATISFIABLE"
    status = 416


class UnreadableDocument(AxiomError):
    """A file of a supported type whose text cannot be read; ``details["reason"]`` says why."""

    code = "UNREADABLE_DOCUMENT"
    status = 422

    # The reasons a document can be unreadable, each a stable value clients may branch on.
    EMPTY = "empty"
    ENCRYPTED = "encrypted"  # it needs a password to open, and none was given
    WRONG_PASSWORD = "wrong_password"  # it needs a password to open, and the one given does not open it
    CORRUPT = "corrupt"
    NO_TEXT = "no_text"
    TOO_COMPLEX = "too_complex"  # reading it would take more memory or time than a document may use
    OCR_UNAVAILABLE = "ocr_unavailable"  # it needs text recognition, and Tesseract (or a language) is not installed

    def __init__(self, message: str, *, reason: str, **details: Any) -> None:
        super().__init__(message, reason=reason, **details)
        self.reason = reason


class RetrievalFailed(AxiomError):
    code = "RETRIEVAL_FAILED"
    status = 503


class VectorStoreUnreachable(RetrievalFailed):
    """The vector store (a Chroma server) did not answer: a restart or a network cut, so worth trying again (a
    background job does, backend/ingest/jobs.py). The same code and status as any RetrievalFailed."""


class SynthesisFailed(AxiomError):
    code = "SYNTHESIS_FAILED"
    status = 503


class ServerBusy(AxiomError):
    """Too many questions are already being answered; ``details["retry_after_seconds"]`` says when to try again."""

    code = "SERVER_BUSY"
    status = 503

    def __init__(self, message: str, *, retry_after_seconds: int, **details: Any) -> None:
        super().__init__(message, retry_after_seconds=retry_after_seconds, **details)


def _restore(cls: type[AxiomError], state: dict[str, Any]) -> AxiomError:
    error = cls.__new__(cls)
    error.__dict__.update(state)
    error.args = (state["message"],)
    return error
