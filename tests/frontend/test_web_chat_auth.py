"""The web chat on a server that asks for API keys (AXIOM_AUTH=api-key): the key is asked for once, in a dialog,
kept for the tab's session and sent with every request (uploads and the answer's stream too). The LLM is scripted:
what the model says is not what is tested here."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.api.server import serve
from tests.frontend.support import ask, new_chat, upload, wait_for_answer, wait_until_uploaded
from tests.rag.scripted import ScriptedLLM

NOTES = "axolotl.txt"
ANSWER = "Axolotls regrow their limbs [Source 1]."


@pytest.fixture(scope="module")
def web(tmp_path_factory, build_app_services):
    services = build_app_services(tmp_path_factory.mktemp("web-auth"), llm=ScriptedLLM(*[ANSWER] * 10),
                                  auth="api-key")
    with serve(services) as server:
        yield server


def enter_key(page: Page, key: str) -> None:
    dialog = page.get_by_role("dialog", name="API key")
    expect(dialog).to_be_visible()
    dialog.get_by_label("Your API key").fill(key)
    dialog.get_by_role("button", name="Continue").click()


def test_the_key_is_asked_for_once_and_kept_for_the_session(page: Page, web, tmp_path, screenshot_dir):
    key = web.services.users.create_key("alice").key
    stranger = web.services.users.create_key("mallory").key
    page.goto(web.url)
    dialog = page.get_by_role("dialog", name="API key")
    expect(dialog).to_be_visible()
    expect(page.get_by_role("alert").filter(has_text="not accepted")).to_be_hidden()
    page.keyboard.press("Escape")  # nothing works without a key: the dialog stays
    expect(dialog).to_be_visible()

    enter_key(page, "axk_not-a-key")
    expect(page.get_by_role("alert").filter(has_text="not accepted")).to_be_visible()
    page.screenshot(path=screenshot_dir / "api-key.png")
    enter_key(page, key)
    expect(dialog).to_be_hidden()
    expect(page.locator(".chat-item").first).to_be_visible()

    chat_id = new_chat(page)
    notes = tmp_path / NOTES
    notes.write_text("Axolotls can regrow their limbs, their hearts and even parts of their brains.")
    upload(page, notes)
    wait_until_uploaded(page, NOTES)
    ask(page, "What can axolotls regrow?")
    expect(wait_for_answer(page).locator(".answer-text")).to_contain_text("regrow their limbs")

    page.reload()
    expect(page.locator(".message.assistant .answer-text")).to_contain_text("regrow their limbs")
    expect(page.locator(".document").filter(has_text=NOTES)).to_be_visible()
    expect(dialog).to_be_hidden()
    ask(page, "And their hearts?")
    expect(page.locator(".message.assistant")).to_have_count(2)
    wait_for_answer(page)

    # The chat is the key holder's: another user's key does not reach it.
    assert httpx.get(f"{web.url}/chat/{chat_id}/documents", headers={"Authorization": f"Bearer {key}"}).is_success
    assert httpx.get(f"{web.url}/chat/{chat_id}/documents",
                     headers={"Authorization": f"Bearer {stranger}"}).status_code == 404
