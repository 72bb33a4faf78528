"""Reads a multipart/form-data upload as it streams in, holding no more than the size limit of any file.

Starlette's own form parser spools every file whole before a route sees it, so a limit checked afterwards would
come too late. Here each file's bytes are counted as they arrive: a file over the limit stops being kept at that
moment (the rest of it is read and dropped, so the files after it still arrive), and a request larger than
``max_files`` full-size files is refused — on its Content-Length before reading anything, or once that many bytes
have streamed in. A filename is only ever a label: it never becomes a path.

Of the plain form fields only ``password`` is read (it opens the request's PDFs that need one); it is kept in memory
for the request only, and never logged or echoed.
"""

from __future__ import annotations

import logging
import unicodedata
from dataclasses import dataclass, field
from email.message import Message
from email.utils import collapse_rfc2231_value

from python_multipart import MultipartParser
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartState, parse_options_header
from starlette.requests import ClientDisconnect, Request

from backend.api.upload_budget import Reservation
from backend.errors import AxiomError, FileTooLarge, ValidationFailed
from backend.ingest.loaders import base_filename

log = logging.getLogger(__name__)

# Room for one part's boundary and headers (python-multipart caps a part at 8 headers of ~4 KiB each).
_PART_ENVELOPE_BYTES = 64 * 1024
PASSWORD_FIELD = "password"
# Far beyond any real one (a PDF reads at most the first 127 bytes of a password).
MAX_PASSWORD_CHARS = 1024
_MAX_PASSWORD_BYTES = 4 * MAX_PASSWORD_CHARS  # UTF-8


@dataclass(slots=True)
class ReceivedFile:
    name: str  # its base name (``base_filename``): no path, control or format characters
    data: bytearray = field(default_factory=bytearray)
    error: AxiomError | None = None  # set when the file was refused as it streamed in (too large, no name)


@dataclass(slots=True)
class ReceivedUpload:
    files: list[ReceivedFile]
    password: str | None = field(default=None, repr=False)  # for the PDFs that need one; never shown


def readable_size(size: int) -> str:
    """A byte count as a person reads it ("900 bytes", "256 KB", "2.9 MB", "50 MB"; binary units, as limits are
    set), not "2.86102 MB"."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    return f"{size / (1024 * 1024):.1f}".removesuffix(".0") + " MB"


def file_too_large(limit: int, name: str | None = None) -> FileTooLarge:
    subject = f"“{name}” is" if name else "The upload is"
    return FileTooLarge(
        f"{subject} larger than the limit of {readable_size(limit)}.",
        limit_bytes=limit, **({"filename": name} if name else {}),
    )


class _FileCollector:
    """python-multipart callbacks that keep each file part's bytes, up to the limit."""

    def __init__(self, *, max_file_bytes: int, max_files: int) -> None:
        self.files: list[ReceivedFile] = []
        self.password: bytearray | None = None
        self._max_file_bytes = max_file_bytes
        self._max_files = max_files
        self._header_name = bytearray()
        self._header_value = bytearray()
        self._disposition = b""
        self._current: ReceivedFile | None = None
        self._in_password = False

    def callbacks(self) -> dict:
        return {
            "on_part_begin": self._on_part_begin,
            "on_header_field": lambda data, start, end: self._header_name.extend(data[start:end]),
            "on_header_value": lambda data, start, end: self._header_value.extend(data[start:end]),
            "on_header_end": self._on_header_end,
            "on_headers_finished": self._on_headers_finished,
            "on_part_data": self._on_part_data,
        }

    def _on_part_begin(self) -> None:
        self._disposition = b""
        self._current = None
        self._in_password = False

    def _on_header_end(self) -> None:
        if bytes(self._header_name).lower() == b"content-disposition":
            self._disposition = bytes(self._header_value)
        self._header_name.clear()
        self._header_value.clear()

    def _on_headers_finished(self) -> None:
        _, options = parse_options_header(self._disposition)
        filename = _filename(self._disposition, options)
        if not filename:
            # A plain form field (only the password is read), or a file input left empty (browsers send
            # filename=""): nothing to read.
            if filename is None and options.get(b"name") == PASSWORD_FIELD.encode():
                if self.password is not None:
                    raise ValidationFailed("Send at most one password with an upload.", field=PASSWORD_FIELD)
                self.password = bytearray()
                self._in_password = True
            return
        if len(self.files) == self._max_files:
            raise ValidationFailed(
                f"At most {self._max_files} files can be uploaded at once.", field="files", max_files=self._max_files
            )
        # Never the name as sent: it may hold a path, or a NUL that PostgreSQL cannot keep with a background job.
        name = base_filename(filename)
        # A name that was only a path or unprintable says nothing of the file's type: refused before it is kept,
        # rather than read (or queued as a job) to fail as the type “”.
        self._current = ReceivedFile(name=name, error=None if name else _nameless())
        self.files.append(self._current)

    def _on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self._in_password:  # self.password is set with it
            if len(self.password) + (end - start) > _MAX_PASSWORD_BYTES:
                raise _password_too_long()
            self.password.extend(data[start:end])
            return
        current = self._current
        if current is None or current.error is not None:
            return
        if len(current.data) + (end - start) > self._max_file_bytes:
            current.error = file_too_large(self._max_file_bytes, current.name)
            current.data = bytearray()  # let go of what was kept: the file is refused
            return
        current.data.extend(data[start:end])


def _filename(disposition: bytes, options: dict[bytes, bytes]) -> str | None:
    """A part's filename ("" for a file input left empty), None for a plain form field. python-multipart reads
    only the plain ``filename`` (RFC 7578 forbids RFC 5987/2231's ``filename*=UTF-8''…`` in a form), but some
    clients send a name beyond ASCII that way, alone or beside an ASCII stand-in, or split into continuations
    (``filename*0=…; filename*1=…``): the standard library's MIME parameter parser reads those. The extended form
    is preferred, as RFC 6266 prefers it, unless it is empty or not in the charset it names while a plain name is
    there."""
    plain = _decoded(options[b"filename"]) if b"filename" in options else None
    if b"*" not in disposition:
        return plain
    header = Message()
    header["content-disposition"] = disposition.decode("latin-1")
    # The plain parameters come first, then the RFC 2231 ones (continuations joined): the last "filename" is those.
    value = dict(header.get_params([], header="content-disposition")).get("filename")
    if isinstance(value, tuple):  # (charset, language, text): the extended form
        charset, language, text = value
        extended = (charset or "utf-8", language, text)
        try:
            return collapse_rfc2231_value(extended, errors="strict") or plain
        except UnicodeDecodeError:
            return plain or collapse_rfc2231_value(extended, errors="replace")
    if plain is None and value is not None:  # continuations none of them encoded: the plain name in pieces
        return _decoded(value.encode("latin-1"))
    return plain


def _decoded(name: bytes) -> str:
    try:
        return name.decode("utf-8")  # as browsers send a plain name
    except UnicodeDecodeError:
        return name.decode("cp1252", errors="replace")  # as older clients on Windows do


def _nameless() -> ValidationFailed:
    return ValidationFailed(
        "A file was sent without a name (only a folder, or nothing printable): send it under its file name, such "
        "as report.pdf, whose extension says its type.", field="files",
    )


def _password_too_long() -> ValidationFailed:
    return ValidationFailed(
        f"The password is longer than {MAX_PASSWORD_CHARS} characters.", field=PASSWORD_FIELD,
        max_length=MAX_PASSWORD_CHARS,
    )


def _password(value: bytearray | None) -> str | None:
    """The password sent, or None for none (a password input left empty sends "")."""
    if not value:
        return None
    try:
        password = value.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationFailed("The password is not valid UTF-8 text.", field=PASSWORD_FIELD) from None
    if len(password) > MAX_PASSWORD_CHARS:
        raise _password_too_long()
    if any(unicodedata.category(character) == "Cc" for character in password):
        # No one types one; and PostgreSQL cannot keep a NUL in the job that reads the file later.
        raise ValidationFailed("The password contains a control character.", field=PASSWORD_FIELD)
    return password


def _boundary(request: Request) -> bytes:
    content_type, options = parse_options_header(request.headers.get("content-type"))
    if content_type != b"multipart/form-data" or not options.get(b"boundary"):
        raise ValidationFailed("Upload files as multipart/form-data.", field="content-type")
    return options[b"boundary"]


def _declared_length(request: Request) -> int | None:
    value = request.headers.get("content-length")
    if value is None:
        return None
    if not value.isdigit():
        raise ValidationFailed("Content-Length must be a number of bytes.", field="content-length")
    return int(value)


async def receive_files(
    request: Request, reservation: Reservation, *, max_file_bytes: int, max_files: int
) -> ReceivedUpload:
    """The uploaded files in order, with the ``password`` field if one was sent; a file over ``max_file_bytes``
    comes back with its FileTooLarge error. The bytes are counted against the server's upload budget through
    ``reservation`` as they arrive.

    Raises FileTooLarge (413) when the whole request is larger than ``max_files`` full-size files, ServerBusy (503)
    when the budget is spent, and ValidationFailed (400) when it is not a complete, well-formed multipart upload
    with at least one file (a client that hangs up midway gets this too, though nobody is left to read it).
    """
    boundary = _boundary(request)
    request_limit = max_files * (max_file_bytes + _PART_ENVELOPE_BYTES)
    declared = _declared_length(request)
    if declared is not None and declared > request_limit:
        raise file_too_large(max_file_bytes)
    if declared is not None:
        reservation.grow(declared)  # refused before a byte is read (the server holds a body to its length)
    collector = _FileCollector(max_file_bytes=max_file_bytes, max_files=max_files)
    received = 0
    parser = MultipartParser(boundary, collector.callbacks())
    try:
        async for chunk in request.stream():
            received += len(chunk)
            if received > request_limit:
                raise file_too_large(max_file_bytes)
            if declared is None:
                reservation.grow(len(chunk))
            parser.write(chunk)
        parser.finalize()
    except FormParserError as error:
        raise ValidationFailed("The upload is not valid multipart/form-data.", field="files") from error
    except ClientDisconnect:
        log.info("the client hung up during an upload to %s after %d bytes; nothing was stored", request.url.path,
                 received)
        raise ValidationFailed("The upload was interrupted before it was complete.", field="files") from None
    if parser.state != MultipartState.END:
        raise ValidationFailed(
            "The upload ended before its last part did (the body was cut short); nothing was stored. Send it again.",
            field="files",
        )
    if not collector.files:
        raise ValidationFailed("The upload contains no file.", field="files")
    return ReceivedUpload(collector.files, _password(collector.password))
