"""What a person trips over the first time they use the web chat: found by using it, kept fixed here."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from tests.frontend.conftest import DESKTOP, PHONE
from tests.frontend.support import (
    PAID_QUESTION,
    PAPER,
    ask,
    last_answer,
    new_chat,
    open_new_chat,
    upload,
    upload_row,
    wait_for_answer,
    wait_until_uploaded,
)


def test_double_clicking_send_asks_once_and_does_not_stop_the_answer(page: Page, web):
    # Stop takes Send's place as soon as the question is sent, so a double-click's second click lands on it.
    open_new_chat(page, web.url)
    page.get_by_label("Ask a question about this chat's documents").fill("hi")
    page.get_by_role("button", name="Send question").dblclick()
    answer = wait_for_answer(page)
    expect(answer).not_to_have_class(re.compile(r"\bstopped\b"))
    expect(answer.locator(".answer-text")).to_contain_text("Hello")
    expect(page.locator(".message.user")).to_have_count(1)


def test_holding_enter_on_send_asks_once_and_does_not_stop_the_answer(page: Page, web):
    # The focus moves from Send to Stop as the question goes; the held key's repeats then land on Stop.
    open_new_chat(page, web.url)
    page.get_by_label("Ask a question about this chat's documents").fill("hi")
    page.get_by_role("button", name="Send question").focus()
    page.keyboard.down("Enter")
    page.keyboard.down("Enter")  # the key is still down: a repeat
    page.keyboard.up("Enter")
    answer = wait_for_answer(page)
    expect(answer).not_to_have_class(re.compile(r"\bstopped\b"))
    expect(page.locator(".message.user")).to_have_count(1)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_add_documents_in_an_empty_chat_opens_the_file_picker(page: Page, web, tmp_path, viewport):
    # On a wide screen the documents panel is open already: the button must do something a person can see.
    page.set_viewport_size(viewport)
    open_new_chat(page, web.url)
    notes = tmp_path / "notes.txt"
    notes.write_text("The meeting moved to Thursday at ten.\n")
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Add documents").click()
    chooser.value.set_files(str(notes))
    expect(page.locator("#documents-panel")).to_be_in_viewport()
    wait_until_uploaded(page, "notes.txt")
    expect(page.locator("#document-count")).to_have_text("1")


def test_the_conversation_follows_an_answer_to_its_end(page: Page, web, pdfs):
    # On a phone the evidence and the final answer each arrive as a block taller than the distance the page
    # allows for "still at the end"; the conversation must follow them all the same.
    page.set_viewport_size(PHONE)
    open_new_chat(page, web.url)
    page.get_by_role("button", name=re.compile("^Documents")).click()
    upload(page, pdfs / PAPER)
    wait_until_uploaded(page, PAPER)
    page.keyboard.press("Escape")
    for _ in range(4):  # earlier exchanges, so the conversation is taller than the screen
        ask(page, "hi")
        wait_for_answer(page)
    ask(page, PAID_QUESTION)
    answer = wait_for_answer(page)
    expect(answer.locator(".answer-footer")).to_be_in_viewport()
    expect(page.get_by_label("Ask a question about this chat's documents")).to_be_in_viewport()


def test_an_answer_asked_while_a_file_is_still_uploading_says_so(page: Page, web, pdfs, tmp_path):
    chat_id = open_new_chat(page, web.url)
    upload(page, pdfs / PAPER)
    wait_until_uploaded(page, PAPER)

    # Stand-in for a slow upload: the browser holds the second file's request until the answer is in.
    held: list[Route] = []

    def hold_uploads(route: Route) -> None:
        if route.request.method == "POST":
            held.append(route)
        else:
            route.continue_()

    page.route(f"**/chat/{chat_id}/documents", hold_uploads)
    notes = tmp_path / "minutes.txt"
    notes.write_text("The crowdworkers' pay is not discussed in these minutes.\n")
    upload(page, notes)
    expect(upload_row(page, "minutes.txt")).to_have_attribute("data-state", re.compile("uploading|indexing"))

    ask(page, PAID_QUESTION)
    answer = wait_for_answer(page)
    expect(answer.locator(".mark-unsearched")).to_have_text(
        "“minutes.txt” was still being indexed when you asked, so this answer may not include it. "
        "Ask again when it is ready."
    )

    assert len(held) == 1
    held[0].continue_()
    wait_until_uploaded(page, "minutes.txt")


def test_leaving_the_page_while_an_answer_is_written_asks_first(page: Page, web, pdfs):
    # Closing the stream stops the answer on the server and keeps nothing of it, not even the question.
    open_new_chat(page, web.url)
    upload(page, pdfs / PAPER)
    wait_until_uploaded(page, PAPER)
    ask(page, PAID_QUESTION)
    expect(page.locator(".message.assistant.streaming")).to_be_visible()
    with page.expect_event("dialog") as leaving:
        page.close(run_before_unload=True)
    assert leaving.value.type == "beforeunload"
    leaving.value.dismiss()  # "stay on the page"
    answer = wait_for_answer(page)
    expect(answer).not_to_have_class(re.compile(r"\b(stopped|failed)\b"))


def test_choose_files_shows_the_keyboard_focus(page: Page, web):
    # The file input is visually hidden; its "Choose files…" label must show where the focus is.
    open_new_chat(page, web.url)
    page.get_by_label("Ask a question about this chat's documents").focus()
    choose = page.locator("label[for=file-input]")
    expect(choose).not_to_have_css("outline-style", "solid")
    for _ in range(10):  # Send, then the documents panel
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "file-input":
            break
    expect(choose).to_have_css("outline-style", "solid")


def test_right_to_left_questions_and_titles_read_right_to_left(page: Page, web):
    open_new_chat(page, web.url)
    question = "ما هو موضوع هذه الوثيقة؟"  # "What is this document about?"
    ask(page, question)
    wait_for_answer(page)
    expect(page.locator(".message.user p")).to_have_css("direction", "rtl")
    # The chat took the question as its title: the list cuts it off at its end, which is on the left.
    expect(page.locator(".chat-item.current .chat-select")).to_have_text(question)
    expect(page.locator(".chat-item.current .chat-select")).to_have_css("direction", "rtl")
    expect(page.locator("#chat-title")).to_have_css("direction", "rtl")
    expect(last_answer(page).locator(".answer-text")).to_have_css("direction", "ltr")  # the reply is in English


def test_the_browser_tab_is_named_after_the_chat_once_it_has_a_title(page: Page, web):
    open_new_chat(page, web.url)
    expect(page).to_have_title("New chat — Axiom")
    ask(page, "hi")  # a new chat takes its first question as its title
    expect(page.locator("#chat-title")).to_have_text("hi")
    expect(page).to_have_title("hi — Axiom")


def test_a_question_pasted_past_the_limit_says_it_was_cut(page: Page, web):
    open_new_chat(page, web.url)
    box = page.get_by_label("Ask a question about this chat's documents")
    count = page.locator("#composer-count")
    box.focus()
    page.keyboard.insert_text("why " * 460)  # 1,840 characters: close to the limit
    expect(count).to_have_text("1,840 of 2,000 characters")
    page.keyboard.insert_text("why " * 300)  # the browser keeps the first 2,000 characters, silently
    expect(box).to_have_value(("why " * 760)[:2000])
    expect(count).to_have_text("A question can have at most 2,000 characters: anything past that was cut off.")
    box.press("Enter")
    expect(page.locator(".message.user")).to_have_count(1)
    expect(count).to_be_hidden()  # the composer is empty again


@pytest.mark.parametrize("touch", [False, True], ids=["mouse", "touch"])
def test_another_chats_rename_and_delete_show_on_hover_or_on_a_touch_screen_always(browser: Browser, web, touch):
    # Hidden until hovered, they could not be found on a touch screen, and a tap there still hit them unseen.
    context = browser.new_context(viewport=PHONE, has_touch=touch)
    try:
        page = context.new_page()
        open_new_chat(page, web.url)
        page.get_by_role("button", name="Show chats").click()
        other = page.locator(".chat-item:not(.current)").first
        buttons = other.get_by_role("button", name=re.compile("^(Rename|Delete) "))
        expect(buttons).to_have_count(2)
        for index in range(2):
            expect(buttons.nth(index)).to_have_css("opacity", "1" if touch else "0")
        if not touch:
            other.hover()
            expect(buttons.first).to_have_css("opacity", "1")
    finally:
        context.close()


BAD_GATEWAY = "<html><body><h1>502 Bad Gateway</h1></body></html>"  # nginx's page


def test_an_answer_cut_off_refused_as_busy_or_unreachable_says_so_and_its_retry_asks_again(page: Page, web):
    chat_id = open_new_chat(page, web.url)
    # Stand-in for a server that went away mid-answer: the stream breaks off after a token, without its end.
    cut = 'event: token\ndata: {"type": "token", "content": "Hel"}\n\n'
    page.route(f"**/chat/{chat_id}/stream",
               lambda route: route.fulfill(status=200, content_type="text/event-stream", body=cut))
    ask(page, "hi")
    failed = wait_for_answer(page)
    expect(failed.locator(".error-title")).to_have_text("The connection was lost.")
    expect(failed.locator(".error-message")).to_have_text(
        "The connection to Axiom was lost before the answer finished.")

    # Stand-in for a server already answering AXIOM_MAX_QUESTIONS_IN_FLIGHT questions: its 503, as documented.
    busy = {"error": "SERVER_BUSY", "message": "Too many questions at once.", "details": {"retry_after_seconds": 1}}
    page.unroute(f"**/chat/{chat_id}/stream")
    page.route(f"**/chat/{chat_id}/stream", lambda route: route.fulfill(status=503, json=busy))
    failed.get_by_role("button", name="Retry").click()
    expect(last_answer(page).locator(".error-title")).to_have_text("Axiom is busy.")

    # Stand-in for a proxy in front of a server that is down (deploy/nginx): its 502 page, in HTML.
    page.unroute(f"**/chat/{chat_id}/stream")
    page.route(f"**/chat/{chat_id}/stream", lambda route: route.fulfill(status=502, body=BAD_GATEWAY))
    last_answer(page).get_by_role("button", name="Retry").click()
    expect(last_answer(page).locator(".error-title")).to_have_text("No connection.")
    expect(last_answer(page).locator(".error-message")).to_have_text(
        "Axiom could not be reached. Is the server still running?")

    page.unroute(f"**/chat/{chat_id}/stream")
    last_answer(page).get_by_role("button", name="Retry").click()
    expect(last_answer(page).locator(".answer-text")).to_contain_text("Hello")
    expect(page.locator(".message.user")).to_have_count(1)
    expect(page.locator(".message.failed")).to_have_count(0)


TABLET = {"width": 900, "height": 700}


@pytest.mark.parametrize(
    ("viewport", "toggle", "panel"),
    [(PHONE, "Show chats", "#sidebar"), (PHONE, "^Documents", "#documents-panel"),
     (TABLET, "^Documents", "#documents-panel")],
    ids=["phone-chats", "phone-documents", "tablet-documents"],
)
def test_the_tab_key_stays_in_a_panel_slid_over_the_page(page: Page, web, viewport, toggle, panel):
    # What the panel covers is behind the scrim: the focus moving there could not be seen.
    page.set_viewport_size(viewport)
    open_new_chat(page, web.url)
    button = page.get_by_role("button", name=re.compile(toggle))
    button.click()
    expect(page.locator(panel)).to_be_in_viewport()
    controls = page.evaluate(f"document.querySelectorAll('{panel} button, {panel} input').length")
    for _ in range(controls + 3):
        page.keyboard.press("Tab")
        focused = page.evaluate("(document.activeElement.id || document.activeElement.tagName)")
        assert page.evaluate(f"document.activeElement.closest('{panel}') !== null"
                             " || document.activeElement === document.body"), focused
    page.keyboard.press("Escape")
    expect(page.locator(panel)).not_to_be_in_viewport()
    expect(button).to_be_focused()


def test_a_file_sent_while_a_proxy_says_axiom_is_down_says_it_could_not_be_reached(page: Page, web, tmp_path):
    chat_id = open_new_chat(page, web.url)
    # Stand-in for a proxy in front of a server that is down (deploy/nginx): its 502 page, in HTML.
    page.route(f"**/chat/{chat_id}/documents", lambda route: route.fulfill(status=502, body=BAD_GATEWAY)
               if route.request.method == "POST" else route.continue_())
    notes = tmp_path / "notes.txt"
    notes.write_text("The meeting moved to Thursday at ten.\n")
    upload(page, notes)
    row = upload_row(page, "notes.txt")
    expect(row).to_have_attribute("data-state", "failed")
    expect(row).to_contain_text("Axiom could not be reached. Is the server still running?")


def test_deleting_another_chat_with_the_keyboard_leaves_the_focus_in_the_chat_list(page: Page, web):
    # The Delete button goes with its chat: the focus fell back to the page's start, the place in the list lost.
    opened = open_new_chat(page, web.url)
    new_chat(page)
    listed = page.locator(".chat-item").evaluate_all("items => items.map((item) => item.dataset.chatId)")
    took_its_place = listed[listed.index(opened) + 1]  # newest first: the chat the page opened with is after it
    doomed = page.locator(f'.chat-item[data-chat-id="{opened}"]')
    doomed.get_by_role("button", name=re.compile("^Delete")).focus()
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_role("button", name="Delete")).to_be_visible()
    page.keyboard.press("Tab")  # Cancel has the focus first
    page.keyboard.press("Enter")
    expect(doomed).to_have_count(0)
    expect(page.locator(f'.chat-item[data-chat-id="{took_its_place}"] .chat-select')).to_be_focused()


# Stand-ins for an input method (Japanese, Chinese, Korean): the Enter that picks the word it composed is the input
# method's, not the person's. Chromium marks its keydown isComposing; Safari ends the composition first, so its
# keydown says so only by its keyCode, 229.
_INPUT_METHOD_ENTERS = {
    "composing": {"key": "Enter", "code": "Enter", "isComposing": True, "bubbles": True, "cancelable": True},
    "after its composition ended": {"key": "Enter", "code": "Enter", "keyCode": 229, "bubbles": True,
                                    "cancelable": True},
}


@pytest.mark.parametrize("kind", list(_INPUT_METHOD_ENTERS))
def test_the_enter_that_confirms_an_input_methods_word_neither_sends_nor_ends_a_rename(page: Page, web, kind):
    confirming_enter = _INPUT_METHOD_ENTERS[kind]
    open_new_chat(page, web.url)
    box = page.get_by_label("Ask a question about this chat's documents")
    box.fill("日本語")
    box.dispatch_event("keydown", confirming_enter)
    expect(box).to_have_value("日本語")
    expect(page.locator(".message.user")).to_have_count(0)

    page.locator(".chat-item.current").get_by_role("button", name=re.compile("^Rename")).click()
    title = page.get_by_label(re.compile("^New name for"))
    title.fill("日本語の")
    title.dispatch_event("keydown", confirming_enter)
    expect(title).to_be_focused()  # still being typed
    title.fill("日本語のチャット")
    title.press("Enter")
    expect(page.locator("#chat-title")).to_have_text("日本語のチャット")


def test_escape_that_cancels_a_deletion_in_a_slid_over_panel_leaves_the_panel_open(page: Page, web):
    # Escape closed the dialog and the chats panel behind it: the focus, given back to the Delete button then
    # hidden, fell to the page's start.
    page.set_viewport_size(PHONE)
    open_new_chat(page, web.url)
    page.get_by_role("button", name="Show chats").click()
    delete = page.locator(".chat-item.current").get_by_role("button", name=re.compile("^Delete"))
    delete.click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(page.get_by_role("button", name="Show chats")).to_have_attribute("aria-expanded", "true")
    expect(delete).to_be_focused()
