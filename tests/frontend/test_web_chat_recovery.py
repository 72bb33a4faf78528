"""The web chat putting itself right: once Axiom can be reached again, and when Back leads to a chat deleted since."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import Page, expect

from tests.frontend.support import new_chat, open_new_chat

QUESTION_BOX = "Ask a question about this chat's documents"
UNREACHABLE = "Axiom could not be reached. Is the server still running?"
COMES_BACK_MS = 30_000  # the page asks Axiom's /health every few seconds while it waits for it


def chat_item(page: Page, chat_id: str):
    return page.locator(f'.chat-item[data-chat-id="{chat_id}"]')


def delete_chat(page: Page, chat_id: str) -> None:
    chat_item(page, chat_id).get_by_role("button", name=re.compile("^Delete")).click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()


def test_could_not_be_reached_goes_away_once_axiom_answers_again(page: Page, web):
    kept = open_new_chat(page, web.url)
    # Stand-in for a server that is down while a chat is deleted: the request never reaches it.
    page.route(f"**/chats/{kept}", lambda route: route.abort())
    delete_chat(page, kept)
    notice = page.locator("#notice")
    expect(notice).to_contain_text(UNREACHABLE)
    expect(chat_item(page, kept)).to_have_count(1)  # nothing was deleted

    page.unroute(f"**/chats/{kept}")  # the server is back: no request of the person's is needed to see so
    expect(notice).to_be_hidden(timeout=COMES_BACK_MS)

    # While Axiom is still down, the notice stays.
    page.route("**/health", lambda route: route.abort())
    page.route(f"**/chats/{kept}", lambda route: route.abort())
    delete_chat(page, kept)
    expect(notice).to_contain_text(UNREACHABLE)
    for _ in range(2):
        with page.expect_request("**/health", timeout=COMES_BACK_MS):
            pass
    expect(notice).to_contain_text(UNREACHABLE)


def test_a_chat_list_that_could_not_be_loaded_loads_once_axiom_answers_again(page: Page, web):
    # Stand-in for a server that is down when the page is opened.
    page.route("**/chats", lambda route: route.abort())
    page.goto(web.url)
    failed = page.locator(".message.failed")
    expect(failed.locator(".error-message")).to_have_text(UNREACHABLE)
    expect(failed.get_by_role("button", name="Retry")).to_be_visible()

    page.unroute("**/chats")
    expect(page.locator(".chat-item.current")).to_have_count(1, timeout=COMES_BACK_MS)
    expect(page.locator(".message.failed")).to_have_count(0)
    expect(page.locator(".welcome")).to_be_visible()
