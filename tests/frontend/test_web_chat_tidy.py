"""Small things in the web chat that looked careless: found by using it, kept fixed here."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Page, Route, expect

from tests.frontend.conftest import DESKTOP, PHONE
from tests.frontend.support import (
    ask,
    last_answer,
    new_chat,
    open_new_chat,
    upload,
    wait_for_answer,
    wait_until_uploaded,
)


def test_a_title_taken_from_a_long_first_question_ends_at_a_word_with_an_ellipsis(page: Page, web):
    open_new_chat(page, web.url)
    # Only the title is looked at: the answer is not asked of the model (the stream is refused).
    page.route("**/chat/*/stream", lambda route: route.abort())
    ask(page, "What did the committee decide about the proposed budget for the new library building?")
    title = "What did the committee decide about the proposed budget for…"
    expect(page.locator("#chat-title")).to_have_text(title)
    expect(page.locator(".chat-item.current .chat-select")).to_have_text(title)


def test_clear_conversation_is_offered_only_when_there_is_a_conversation(page: Page, web):
    clear = page.get_by_role("button", name="Clear conversation")
    asked_in = open_new_chat(page, web.url)
    expect(clear).to_be_disabled()
    ask(page, "hi")  # a greeting is answered without the model
    expect(last_answer(page).locator(".answer-text")).to_contain_text("Hello")
    expect(clear).to_be_enabled()
    new_chat(page)
    expect(clear).to_be_disabled()
    page.locator(f'.chat-item[data-chat-id="{asked_in}"] .chat-select').click()
    expect(page.locator(".message.user")).to_have_count(1)
    expect(clear).to_be_enabled()
    clear.click()
    page.get_by_role("dialog").get_by_role("button", name="Clear").click()
    expect(page.locator(".message")).to_have_count(0)
    expect(clear).to_be_disabled()


def test_clearing_the_conversation_with_the_keyboard_leaves_the_focus_in_the_question_box(page: Page, web):
    # Clear goes off once there is nothing to clear: the focus on it fell back to the page's start.
    open_new_chat(page, web.url)
    ask(page, "hi")  # a greeting is answered without the model
    expect(last_answer(page).locator(".answer-text")).to_contain_text("Hello")
    page.get_by_role("button", name="Clear conversation").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("dialog").get_by_role("button", name="Clear")).to_be_visible()
    page.keyboard.press("Tab")  # Cancel has the focus first
    page.keyboard.press("Enter")
    expect(page.locator(".message")).to_have_count(0)
    expect(page.get_by_label("Ask a question about this chat's documents")).to_be_focused()


def test_new_chat_keeps_an_open_chat_that_is_new_and_unused(page: Page, web, tmp_path):
    unused = open_new_chat(page, web.url)
    count = page.locator(".chat-item").count()
    page.get_by_role("button", name="+ New chat").click()
    expect(page.locator(".chat-item.current")).to_have_attribute("data-chat-id", unused)
    expect(page.get_by_label("Ask a question about this chat's documents")).to_be_focused()
    expect(page.locator(".chat-item")).to_have_count(count)
    # A document makes it used, as a question does: then a new chat is made.
    notes = tmp_path / "notes.txt"
    notes.write_text("The meeting moved to Thursday at ten.\n")
    upload(page, notes)
    wait_until_uploaded(page, "notes.txt")
    page.get_by_role("button", name="+ New chat").click()
    expect(page.locator(".chat-item")).to_have_count(count + 1)
    expect(page.locator(".chat-item.current")).not_to_have_attribute("data-chat-id", unused)
    ask(page, "hi")
    expect(last_answer(page).locator(".answer-text")).to_contain_text("Hello")
    page.get_by_role("button", name="+ New chat").click()
    expect(page.locator(".chat-item")).to_have_count(count + 2)


@pytest.mark.parametrize(
    ("viewport", "documents_open"),
    [(DESKTOP, True), (DESKTOP, False), ({"width": 1920, "height": 1000}, True), (PHONE, False)],
    ids=["desktop", "desktop-documents-closed", "wide", "phone"],
)
def test_a_question_ends_where_its_answer_ends(page: Page, web, viewport, documents_open):
    # In a conversation wider than its column, questions sat at the window's edge, far right of their answers.
    page.set_viewport_size(viewport)
    open_new_chat(page, web.url)
    documents = page.get_by_role("button", name=re.compile("^Documents"))
    if (documents.get_attribute("aria-expanded") == "true") != documents_open:
        documents.click()
    if documents_open and viewport is not PHONE:
        expect(page.locator("#documents-panel")).to_be_in_viewport()
    ask(page, "hi")
    expect(last_answer(page).locator(".answer-text")).to_contain_text("Hello")
    question, answer = (page.locator(f".message.{role}").last.bounding_box() for role in ("user", "assistant"))
    assert abs((question["x"] + question["width"]) - (answer["x"] + answer["width"])) <= 1, (question, answer)


def test_on_a_phone_a_notice_naming_a_long_unbroken_title_wraps_and_can_be_dismissed(page: Page, web):
    # The title ran off the screen, the page scrolled sideways and the notice's ✕ was out of sight.
    page.set_viewport_size(PHONE)
    open_new_chat(page, web.url)
    title = "Quarterly_report_" + "Z" * 83  # one word, the longest title a chat can have
    chat_id = httpx.post(f"{web.url}/chats", json={"title": title}).json()["id"]
    page.goto(f"{web.url}/#chat={chat_id}")
    page.reload()
    expect(page.locator("#chat-title")).to_have_text(title)
    assert httpx.delete(f"{web.url}/chats/{chat_id}").status_code == 200  # another client
    page.evaluate("window.dispatchEvent(new Event('focus'))")  # catches up, as a focused tab does
    notice = page.locator("#notice")
    expect(notice).to_contain_text(f"“{title}” was deleted")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    dismiss = page.get_by_role("button", name="Dismiss this message")
    expect(dismiss).to_be_in_viewport(ratio=1)
    dismiss.click()
    expect(notice).to_be_hidden()


def test_on_a_phone_a_long_unbroken_file_name_in_an_answers_note_wraps(page: Page, web, tmp_path):
    # The note ran off the screen, and the conversation scrolled sideways to show it.
    page.set_viewport_size(PHONE)
    chat_id = open_new_chat(page, web.url)
    # Stand-in for a slow upload: the browser holds the file's request until the answer is in.
    held: list[Route] = []
    page.route(f"**/chat/{chat_id}/documents", lambda route: held.append(route) if route.request.method == "POST"
               else route.continue_())
    notes = tmp_path / ("minutes_of_the_regional_wetlands_census_board_" + "x" * 40 + ".txt")
    notes.write_text("The board met on Thursday.\n")
    page.get_by_role("button", name=re.compile("^Documents")).click()
    upload(page, notes)
    page.get_by_role("button", name="Close documents").click()
    ask(page, "When did the board meet?")
    note = wait_for_answer(page).locator(".mark-unsearched")
    expect(note).to_contain_text(notes.name)
    assert page.locator("#messages").evaluate("(log) => log.scrollWidth <= log.clientWidth")
    held[0].continue_()
