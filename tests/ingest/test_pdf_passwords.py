"""PDFs that need a password to open, read with the one their uploader gave: the shared corpus's encrypted files
(user passwords "openpassword" and "foo", as their names say) and PDFs encrypted here."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from backend.errors import UnreadableDocument
from backend.ingest.loaders import load_document
from backend.ingest.reader import DocumentReader, ReaderLimits
from tests.support import documents, pdf_files

# Each shared file that needs a password: its password, and a phrase of its text.
LOCKED = {
    "encrypted_userpw_openpassword.pdf": ("openpassword", "Lorem ipsum dolor sit amet"),
    # One page showing the one word "Secret!": too little to count as a text layer, so the page is also
    # recognised (OCR), which reads no more than that; the word is kept.
    "encrypted_aes256_userpw_foo.pdf": ("foo", "Secret!"),
    "encrypted_rc4-128_userpw_foo.pdf": ("foo", "Secret!"),
}


def _refusal(filename: str, data: bytes, password: str | None) -> UnreadableDocument:
    with pytest.raises(UnreadableDocument) as raised:
        load_document(filename, data, password=password)
    return raised.value


@pytest.mark.parametrize("filename", sorted(LOCKED))
def test_shared_locked_pdf_opens_with_its_password(pdfs: Path, filename: str) -> None:
    password, phrase = LOCKED[filename]

    document = load_document(filename, (pdfs / filename).read_bytes(), password=password)

    assert document.page_count == 1
    assert phrase in "\n".join(page.text for page in document.pages)


@pytest.mark.parametrize("filename", sorted(LOCKED))
def test_shared_locked_pdf_without_a_password_says_it_opens_with_one(pdfs: Path, filename: str) -> None:
    refusal = _refusal(filename, (pdfs / filename).read_bytes(), None)

    assert refusal.reason == UnreadableDocument.ENCRYPTED
    assert "Enter its password" in refusal.message and "“password” field" in refusal.message
    assert refusal.details == {"reason": "encrypted", "filename": filename}


@pytest.mark.parametrize("filename", sorted(LOCKED))
def test_shared_locked_pdf_with_a_wrong_password_says_it_is_wrong_and_never_shows_it(
    pdfs: Path, filename: str
) -> None:
    refusal = _refusal(filename, (pdfs / filename).read_bytes(), "hunter2-wrong")

    assert refusal.reason == UnreadableDocument.WRONG_PASSWORD == "wrong_password"
    assert "does not open it" in refusal.message
    assert "hunter2-wrong" not in str(refusal.to_body())


def test_another_files_password_is_wrong_for_this_one(pdfs: Path) -> None:
    refusal = _refusal("locked.pdf", (pdfs / "encrypted_userpw_openpassword.pdf").read_bytes(), "foo")

    assert refusal.reason == UnreadableDocument.WRONG_PASSWORD


def test_password_given_for_a_pdf_that_needs_none_is_ignored(pdfs: Path) -> None:
    """Restricted (copy-protected) by an owner password only: it opens without one, so whatever is given."""
    data = (pdfs / "encrypted_ownerpw_only_copy-protected.pdf").read_bytes()

    document = load_document("restricted.pdf", data, password="not-its-password")

    assert document.page_count == 2 and "LayoutParser" in document.pages[0].text


def test_password_given_for_a_pdf_without_encryption_or_another_type_is_ignored() -> None:
    pdf = load_document("plain.pdf", pdf_files.pdf(["Open to all"]), password="whatever")
    deck = load_document("deck.pptx", documents.deck(), password="whatever")

    assert pdf.pages[0].text == "Open to all"
    assert deck == load_document("deck.pptx", documents.deck())


@pytest.mark.parametrize("algorithm", ["AES-256", "AES-128", "RC4-128"])
@pytest.mark.parametrize("password", ["payroll-2026", "pässwörd ü"])
def test_pdf_encrypted_here_opens_with_its_password(algorithm: str, password: str) -> None:
    locked = pdf_files.encrypted(pdf_files.pdf(["Salary statement for March", ""]), password, algorithm)

    document = load_document("salary.pdf", locked, password=password)

    assert [(page.number, page.text) for page in document.pages] == [(1, "Salary statement for March")]
    assert document.page_count == 2
    assert _refusal("salary.pdf", locked, password.upper()).reason == UnreadableDocument.WRONG_PASSWORD


def test_owner_password_opens_it_too() -> None:
    """The owner password opens a PDF as well as the user password does (pdf_files.encrypted sets "owner-secret")."""
    locked = pdf_files.encrypted(pdf_files.pdf(["Board minutes"]), "user-secret")

    assert load_document("minutes.pdf", locked, password="owner-secret").pages[0].text == "Board minutes"


# Not a character SASLprep keeps (private use): pypdf warns that it opens the AES-256 file with the password as
# given, naming that character.
UNNORMALISABLE = "pay\ue000roll"


def test_no_piece_of_a_password_is_logged_while_it_opens_the_pdf_here(caplog) -> None:
    locked = pdf_files.encrypted(pdf_files.pdf(["Salary statement for March"]), UNNORMALISABLE)
    caplog.clear()  # pypdf warned while it encrypted the file, here

    with caplog.at_level(logging.DEBUG):
        document = load_document("salary.pdf", locked, password=UNNORMALISABLE)

    assert document.pages[0].text == "Salary statement for March"
    assert "E000" not in caplog.text.upper() and "\ue000" not in caplog.text


def test_no_piece_of_a_password_is_logged_by_the_reader_worker(capfd) -> None:
    """The worker, started here, writes its log to the stderr it inherits (captured at the descriptor)."""
    locked = pdf_files.encrypted(pdf_files.pdf(["Salary statement for March"]), UNNORMALISABLE)
    reader = DocumentReader(ReaderLimits())
    try:
        document = reader.read("salary.pdf", locked, password=UNNORMALISABLE)
    finally:
        reader.close()

    assert document.pages[0].text == "Salary statement for March"
    logged = capfd.readouterr().err
    assert "E000" not in logged.upper() and "\ue000" not in logged


def test_a_password_pypdf_normalises_opens_the_pdf_for_pdfium_too(caplog) -> None:
    """pypdf maps and normalises an AES-256 password (SASLprep drops a zero-width space), pdfium does not: without
    pdfium the pages without text would not be recognised nor the others read column by column."""
    locked = pdf_files.encrypted(pdf_files.pdf(["Salary statement for March"]), "payroll")

    with caplog.at_level(logging.WARNING):
        document = load_document("salary.pdf", locked, password="pay\u200broll")

    assert document.pages[0].text == "Salary statement for March"
    assert "pdfium" not in caplog.text
