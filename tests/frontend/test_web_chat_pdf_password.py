"""A PDF refused for its password, opened from the web chat: the row asks for the password, a wrong one says so
and asks again, the right one uploads the file (within the request, or as a background job); Cancel drops it."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import Page, expect

from backend.api.settings import ApiSettings
from tests.api.server import serve
from tests.frontend.support import new_chat, open_new_chat, upload, upload_row, wait_until_uploaded

LOCKED = "encrypted_userpw_openpassword.pdf"  # opened by "openpassword"
SHORT_LOCKED = "encrypted_aes256_userpw_foo.pdf"  # opened by "foo"


def test_a_locked_pdf_asks_for_its_password_says_when_it_is_wrong_and_opens_with_the_right_one(
    page: Page, web, pdfs, screenshot_dir
):
    chat_id = open_new_chat(page, web.url)
    upload(page, pdfs / LOCKED)
    row = upload_row(page, LOCKED)
    expect(row).to_have_attribute("data-state", "failed", timeout=60_000)
    expect(row).to_contain_text("This PDF is password-protected: enter its password to open it.")
    password = row.get_by_label(f"Password for {LOCKED}")
    expect(password).to_have_attribute("type", "password")
    # Described by the row's status, which says why it is asked.
    expect(password).to_have_accessible_description("This PDF is password-protected: enter its password to open it.")
    expect(password).not_to_have_attribute("aria-invalid", "true")

    password.fill("not-it")
    password.press("Enter")
    expect(row).to_contain_text("That password does not open this PDF. Check it and try again.", timeout=60_000)
    password = row.get_by_label(f"Password for {LOCKED}")
    expect(password).to_be_focused()  # asked again, where the person was typing
    expect(password).to_have_value("")
    expect(password).to_have_attribute("aria-invalid", "true")
    expect(password).to_have_accessible_description(re.compile("That password does not open this PDF"))
    page.screenshot(path=screenshot_dir / "upload-password.png")

    password.fill("openpassword")
    password.press("Enter")
    wait_until_uploaded(page, LOCKED)
    expect(row).to_contain_text(re.compile(r"Ready · \d+ chunks? · 1 page"))
    expect(row.locator("input")).to_have_count(0)
    expect(page.locator(".document")).to_have_count(1)
    expect(page.locator("#document-count")).to_have_text("1")
    assert [d["name"] for d in httpx.get(f"{web.url}/chat/{chat_id}/documents").json()["documents"]] == [LOCKED]


def test_cancel_drops_the_password_question_and_keeps_nothing(page: Page, web, pdfs):
    open_new_chat(page, web.url)
    upload(page, pdfs / SHORT_LOCKED)
    row = upload_row(page, SHORT_LOCKED)
    expect(row.get_by_label(f"Password for {SHORT_LOCKED}")).to_be_visible(timeout=60_000)

    row.get_by_role("button", name="Cancel").click()

    expect(row.get_by_label(f"Password for {SHORT_LOCKED}")).to_have_count(0)
    expect(row).to_have_attribute("data-state", "failed")
    expect(row).to_contain_text("password-protected")
    expect(page.locator(".document")).to_have_count(0)
    # The row keeps a way back to the question, and focus goes to it, not to the page.
    again = row.get_by_role("button", name=f"Enter password of {SHORT_LOCKED}")
    expect(again).to_be_focused()
    expect(again).to_have_text("Enter password")

    again.click()
    password = row.get_by_label(f"Password for {SHORT_LOCKED}")
    expect(password).to_be_focused()
    expect(again).to_be_hidden()
    password.press("Escape")  # as Cancel
    expect(password).to_have_count(0)
    expect(again).to_be_focused()

    again.press("Enter")
    row.get_by_label(f"Password for {SHORT_LOCKED}").fill("foo")
    row.get_by_role("button", name="Open").click()
    wait_until_uploaded(page, SHORT_LOCKED)
    expect(again).to_be_hidden()


def test_a_password_sent_waits_in_its_row_behind_the_uploads_queued_before_it(page: Page, web, pdfs, tmp_path):
    open_new_chat(page, web.url)
    upload(page, pdfs / SHORT_LOCKED)
    row = upload_row(page, SHORT_LOCKED)
    password = row.get_by_label(f"Password for {SHORT_LOCKED}")
    expect(password).to_be_visible(timeout=60_000)
    # Each state the row takes, from now on.
    row.evaluate("""(node) => {
        window.rowStates = [];
        new MutationObserver(() => window.rowStates.push(node.dataset.state))
            .observe(node, { attributes: true, attributeFilter: ["data-state"] });
    }""")

    password.fill("foo")
    password.press("Enter")

    wait_until_uploaded(page, SHORT_LOCKED)
    states = page.evaluate("window.rowStates")
    assert states[0] == "waiting" and states[-1] == "ready", states


def test_a_password_question_whose_chat_was_deleted_meanwhile_is_not_left_waiting(page: Page, web, pdfs):
    kept = open_new_chat(page, web.url)
    doomed = new_chat(page)
    upload(page, pdfs / SHORT_LOCKED)
    row = upload_row(page, SHORT_LOCKED)
    password = row.get_by_label(f"Password for {SHORT_LOCKED}")
    expect(password).to_be_visible(timeout=60_000)
    assert httpx.delete(f"{web.url}/chats/{doomed}").status_code == 200

    password.fill("foo")
    password.press("Enter")

    notice = page.locator("#notice")
    expect(notice).to_contain_text("“New chat” was deleted in another tab or window", timeout=60_000)
    expect(notice).to_contain_text(f"“{SHORT_LOCKED}” was not added.")
    expect(page.locator(".chat-item.current")).to_have_attribute("data-chat-id", kept)
    expect(page.locator(".upload")).to_have_count(0)


def test_a_locked_pdf_opened_with_its_password_may_be_indexed_by_a_background_job(
    page: Page, tmp_path, build_app_services, pdfs
):
    # Every file counts as large here: once its password opens it, a job reads it again, with the password.
    with serve(build_app_services(tmp_path / "data"), ApiSettings(background_ingest_chars=0)) as server:
        open_new_chat(page, server.url)
        upload(page, pdfs / SHORT_LOCKED)
        row = upload_row(page, SHORT_LOCKED)
        password = row.get_by_label(f"Password for {SHORT_LOCKED}")
        password.fill("foo")
        row.get_by_role("button", name="Open").click()
        wait_until_uploaded(page, SHORT_LOCKED)
        expect(row).to_contain_text("Ready · 1 chunk · 1 page")
        expect(page.locator(".document")).to_have_count(1)
