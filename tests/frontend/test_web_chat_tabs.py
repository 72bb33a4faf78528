"""Two tabs of one browser on the same chats, and changes made by other clients: each tab catches up without a
reload, leaves a chat deleted elsewhere, and asks for no history a new chat cannot have."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.api.server import serve
from tests.api.support import upload_paths
from tests.frontend.conftest import DESKTOP
from tests.frontend.support import (
    PAID_QUESTION,
    PAPER,
    ask,
    last_answer,
    new_chat,
    open_new_chat,
    upload,
    wait_for_answer,
    wait_until_uploaded,
)

QUESTION_BOX = "Ask a question about this chat's documents"


@pytest.fixture
def tabs(browser: Browser) -> Iterator[tuple[Page, Page]]:
    """Two pages in one browser context (one browser's two tabs: they share a BroadcastChannel), failing the test
    on any script error in either."""
    context = browser.new_context(viewport=DESKTOP)
    pages = (context.new_page(), context.new_page())
    script_errors: list[str] = []
    for opened in pages:
        opened.on("pageerror", lambda error: script_errors.append(str(error)))
    yield pages
    context.close()
    assert not script_errors, f"a page raised: {script_errors}"


def open_chat(page: Page, url: str, chat_id: str) -> None:
    page.goto(f"{url}/#chat={chat_id}")
    expect(page.locator(".chat-item.current")).to_have_attribute("data-chat-id", chat_id)


def chat_item(page: Page, chat_id: str):
    return page.locator(f'.chat-item[data-chat-id="{chat_id}"]')


def shown_again(page: Page) -> None:
    """The tab is shown again (as when its browser tab is picked), and has caught up: a second catch-up's first
    request starts only once the first one has ended. Headless pages are always visible, so the event is sent here."""
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    with page.expect_request(lambda request: request.url.endswith("/chats")):
        page.evaluate("window.dispatchEvent(new Event('focus'))")


def test_opening_a_new_chat_asks_for_no_history_and_logs_no_error(page: Page, tmp_path, build_app_services):
    console_errors: list[str] = []
    page.on("console", lambda message: message.type == "error" and console_errors.append(message.text))
    history_requests: list[str] = []
    page.on("request", lambda request: "/chat/history/" in request.url and history_requests.append(request.url))
    with serve(build_app_services(tmp_path / "data")) as server:
        open_new_chat(page, server.url)  # the first visit makes a chat, then "+ New chat" another
        expect(page.locator(".welcome")).to_be_visible()
        page.reload()
        expect(page.locator(".welcome")).to_be_visible()
        expect(page.locator(".chat-item")).to_have_count(2)
        assert console_errors == []
        shown_again(page)  # catching up asks for no history either
        assert history_requests == []
        assert console_errors == []

        # Once asked in, the chat's history is read again (and found).
        ask(page, "hi")
        expect(last_answer(page).locator(".answer-text")).to_contain_text("Hello")
        with page.expect_response(lambda response: "/chat/history/" in response.url) as history:
            page.reload()
        assert history.value.status == 200
        expect(page.locator(".message.user")).to_have_text(["hi"])
        assert console_errors == []


def test_a_chat_found_empty_is_not_asked_for_its_history_again_until_it_changes(page: Page, web):
    chat_id = open_new_chat(page, web.url)
    with httpx.Client(base_url=web.url, timeout=120) as client:
        assert client.patch(f"/chats/{chat_id}", json={"title": "Named, never asked"}).status_code == 200
        with page.expect_response(lambda response: "/chat/history/" in response.url) as history:
            page.reload()  # named: its history is asked for once, and is the documented 404
        assert history.value.status == 404
        expect(page.locator(".welcome")).to_be_visible()
        history_requests: list[str] = []
        page.on("request", lambda request: "/chat/history/" in request.url and history_requests.append(request.url))
        shown_again(page)
        shown_again(page)
        assert history_requests == []

        # A message from elsewhere moves the chat's updated_at: its history is read again.
        greeting = {"message": "hi", "chat_id": chat_id, "session_id": chat_id}
        assert client.post("/chat/", json=greeting).status_code == 200
        shown_again(page)
        expect(page.locator(".message.user")).to_have_text(["hi"])
        assert history_requests


def test_a_second_tab_sees_the_first_tabs_answers_chats_and_documents(tabs, web, tmp_path):
    first, second = tabs
    chat_id = open_new_chat(first, web.url)
    open_chat(second, web.url, chat_id)
    draft = second.get_by_label(QUESTION_BOX)
    draft.fill("a question half written")

    ask(first, "hi")  # a greeting is answered without the model
    expect(last_answer(first).locator(".answer-text")).to_contain_text("Hello")
    expect(second.locator(".message.user")).to_have_text(["hi"])
    expect(last_answer(second).locator(".answer-text")).to_contain_text("Hello")
    expect(second.locator("#chat-title")).to_have_text("hi")  # the first question named the chat
    expect(draft).to_have_value("a question half written")

    notes = tmp_path / "notes.txt"
    notes.write_text("The meeting moved to Thursday at ten.\n")
    upload(first, notes)
    wait_until_uploaded(first, "notes.txt")
    expect(second.locator(".document").filter(has_text="notes.txt")).to_be_visible()
    expect(second.locator("#document-count")).to_have_text("1")
    expect(second.locator(".upload")).to_have_count(0)  # the other tab's upload rows are its own

    other = new_chat(first)
    item = chat_item(first, other)
    item.get_by_role("button", name=re.compile("^Rename")).click()
    first.get_by_label(re.compile("^New name for")).fill("Meeting notes")
    first.keyboard.press("Enter")
    expect(chat_item(second, other).locator(".chat-select")).to_have_text("Meeting notes")
    expect(second.locator(".chat-item.current")).to_have_attribute("data-chat-id", chat_id)  # still where it was

    # Catching up with nothing new draws nothing again: the same nodes, the same scroll, the draft untouched.
    second.evaluate("document.querySelector('.message.assistant').dataset.probe = 'kept'")
    second.evaluate("document.querySelector('.document').dataset.probe = 'kept'")
    second.evaluate("document.querySelector('.chat-item').dataset.probe = 'kept'")
    shown_again(second)
    expect(second.locator(".message.assistant")).to_have_attribute("data-probe", "kept")
    expect(second.locator(".document")).to_have_attribute("data-probe", "kept")
    expect(second.locator(".chat-item").first).to_have_attribute("data-probe", "kept")
    expect(draft).to_have_value("a question half written")

    # And the first tab sees what the second does: a conversation cleared there is cleared here.
    chat_item(first, chat_id).locator(".chat-select").click()
    expect(first.locator(".message.user")).to_have_text(["hi"])
    second.get_by_role("button", name="Clear conversation").click()
    second.get_by_role("dialog").get_by_role("button", name="Clear").click()
    expect(first.locator(".message")).to_have_count(0)
    expect(first.locator(".welcome")).to_be_visible()


def test_a_tab_shown_again_catches_up_with_other_clients_even_without_broadcastchannel(page: Page, web, tmp_path):
    page.add_init_script("delete window.BroadcastChannel")  # a browser without it: announcing does nothing
    chat_id = open_new_chat(page, web.url)
    assert page.evaluate("typeof BroadcastChannel") == "undefined"
    page.get_by_label(QUESTION_BOX).fill("a draft")

    notes = tmp_path / "minutes.txt"
    notes.write_text("The budget was approved on Monday.\n")
    with httpx.Client(base_url=web.url, timeout=120) as client:
        assert client.patch(f"/chats/{chat_id}", json={"title": "Budget"}).status_code == 200
        assert upload_paths(client, chat_id, notes).status_code == 200
        asked = client.post("/chat/", json={"message": "hi", "chat_id": chat_id, "session_id": chat_id})
        assert asked.status_code == 200
        made = client.post("/chats", json={"title": "Made by the API"}).json()["id"]

    shown_again(page)
    expect(page.locator("#chat-title")).to_have_text("Budget")
    expect(chat_item(page, chat_id).locator(".chat-select")).to_have_text("Budget")
    expect(chat_item(page, made)).to_be_visible()
    expect(page.locator(".document").filter(has_text="minutes.txt")).to_be_visible()
    expect(page.locator(".message.user")).to_have_text(["hi"])
    expect(last_answer(page).locator(".answer-text")).to_contain_text("Hello")
    expect(page.get_by_label(QUESTION_BOX)).to_have_value("a draft")


def test_an_answer_from_elsewhere_is_followed_at_the_end_and_leaves_a_reader_scrolled_up_in_place(page: Page, web):
    chat_id = open_new_chat(page, web.url)
    greeting = {"message": "hi", "chat_id": chat_id, "session_id": chat_id}  # answered without the model
    with httpx.Client(base_url=web.url, timeout=120) as client:
        for _ in range(12):
            assert client.post("/chat/", json=greeting).status_code == 200
        page.reload()
        expect(page.locator(".message.user")).to_have_count(12)
        log = page.locator("#messages")
        assert log.evaluate("node => node.scrollHeight > 2 * node.clientHeight"), "too short to scroll"

        assert client.post("/chat/", json=greeting).status_code == 200
        shown_again(page)
        expect(page.locator(".message.user")).to_have_count(13)
        assert log.evaluate("node => node.scrollHeight - node.scrollTop - node.clientHeight < 2")

        log.evaluate("node => { node.scrollTop = 200; }")
        page.wait_for_function("() => document.getElementById('messages').scrollTop === 200")
        assert client.post("/chat/", json=greeting).status_code == 200
        shown_again(page)
        expect(page.locator(".message.user")).to_have_count(14)
        assert log.evaluate("node => node.scrollTop") == 200


def test_a_chat_deleted_in_another_tab_is_left_with_a_notice(tabs, web):
    first, second = tabs
    kept = open_new_chat(first, web.url)
    doomed = new_chat(first)
    ask(first, "hi")
    expect(last_answer(first).locator(".answer-text")).to_contain_text("Hello")
    open_chat(second, web.url, doomed)
    expect(second.locator(".message.user")).to_have_text(["hi"])
    second.get_by_label(QUESTION_BOX).fill("typed into a chat about to go")

    chat_item(first, doomed).get_by_role("button", name=re.compile("^Delete")).click()
    first.get_by_role("dialog").get_by_role("button", name="Delete").click()

    expect(second.locator("#notice")).to_contain_text("“hi” was deleted in another tab or window")
    expect(chat_item(second, doomed)).to_have_count(0)
    expect(second.locator(".chat-item.current")).to_have_attribute("data-chat-id", kept)
    expect(second).to_have_url(re.compile(f"#chat={kept}$"))
    expect(second.locator(".message")).to_have_count(0)
    expect(second.get_by_label(QUESTION_BOX)).to_have_value("typed into a chat about to go")  # not lost


def test_a_chat_deleted_by_another_client_is_left_when_the_tab_is_shown_again(page: Page, web):
    kept = open_new_chat(page, web.url)
    doomed = new_chat(page)
    assert httpx.delete(f"{web.url}/chats/{doomed}").status_code == 200
    shown_again(page)
    expect(page.locator("#notice")).to_contain_text("“New chat” was deleted in another tab or window")
    expect(chat_item(page, doomed)).to_have_count(0)
    expect(page.locator(".chat-item.current")).to_have_attribute("data-chat-id", kept)


def test_deleting_a_chat_another_tab_deleted_while_the_dialog_was_open_ends_quietly(page: Page, web):
    # The catch-up meanwhile took the chat off the list: its place there was lost, and looking for the chat that
    # took it raised an error, shown in the notice as if the deletion had failed.
    doomed = open_new_chat(page, web.url)
    kept = new_chat(page)
    chat_item(page, doomed).get_by_role("button", name=re.compile("^Delete")).click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    assert httpx.delete(f"{web.url}/chats/{doomed}").status_code == 200  # another tab or client
    shown_again(page)
    expect(chat_item(page, doomed)).to_have_count(0)

    with page.expect_response(lambda response: response.request.method == "DELETE"):
        dialog.get_by_role("button", name="Delete").click()
    expect(chat_item(page, kept).locator(".chat-select")).to_be_focused()  # the open chat, not the page's start
    expect(page.locator("#notice")).to_be_hidden()

def test_an_upload_or_question_refused_because_the_chat_was_deleted_says_so_and_leaves_it(page: Page, web, tmp_path):
    # The real server refuses both with 410 CHAT_DELETED rather than making the chat again.
    kept = open_new_chat(page, web.url)
    doomed = new_chat(page)
    assert httpx.delete(f"{web.url}/chats/{doomed}").status_code == 200

    ask(page, "When is the meeting?")
    notice = page.locator("#notice")
    expect(notice).to_contain_text("“New chat” was deleted in another tab or window")  # not renamed: refused too
    expect(notice).to_contain_text("Your question was not sent: it is back in the question box.")
    expect(page.get_by_label(QUESTION_BOX)).to_have_value("When is the meeting?")
    expect(page.locator(".chat-item.current")).to_have_attribute("data-chat-id", kept)
    expect(page.locator(".message")).to_have_count(0)  # the chat opened instead shows nothing of it
    page.get_by_role("button", name="Dismiss this message").click()
    page.get_by_label(QUESTION_BOX).fill("")

    again = new_chat(page)
    assert httpx.delete(f"{web.url}/chats/{again}").status_code == 200
    notes = tmp_path / "notes.txt"
    notes.write_text("Anything.\n")
    upload(page, notes)
    expect(notice).to_contain_text("“New chat” was deleted in another tab or window")
    expect(notice).to_contain_text("“notes.txt” was not added.")
    expect(page.locator(".upload")).to_have_count(0)
    expect(chat_item(page, again)).to_have_count(0)
    expect(page.locator(".chat-item.current")).not_to_have_attribute("data-chat-id", again)


def test_a_question_refused_in_a_chat_that_is_still_there_is_not_taken_for_a_deletion(page: Page, web):
    kept = open_new_chat(page, web.url)
    ask(page, "hi")
    expect(last_answer(page).locator(".answer-text")).to_contain_text("Hello")
    chat_id = new_chat(page)

    # Stand-in for a tab holding another chat's session: its question goes to the real server with the session of
    # the chat asked in above, which refuses it with 404 NOT_FOUND (a session of another chat).
    def with_kept_session(route):
        route.continue_(post_data=json.dumps({**json.loads(route.request.post_data), "session_id": kept}))

    page.route(f"**/chat/{chat_id}/stream", with_kept_session)
    ask(page, "Is this sent?")
    failed = last_answer(page)
    expect(failed.locator(".error-message")).to_contain_text("a session belongs to the chat it was started in")
    expect(failed.locator(".error-title")).to_have_text("Something went wrong.")
    expect(page.locator("#notice")).to_be_hidden()
    expect(page.locator(".chat-item.current")).to_have_attribute("data-chat-id", chat_id)

    # Stand-in: a question refused as sent to a deleted chat (410 CHAT_DELETED) that is there again when this tab
    # catches up (made again elsewhere meanwhile): the catch-up finds it, and forgets the refusal.
    page.unroute(f"**/chat/{chat_id}/stream")
    refusal = {"error": "CHAT_DELETED", "message": "It was deleted.", "details": {"chat_id": chat_id}}
    page.route(f"**/chat/{chat_id}/stream", lambda route: route.fulfill(status=410, json=refusal))
    with page.expect_response(lambda response: response.url.endswith(f"/chat/{chat_id}/documents")):
        ask(page, "Refused?")
    expect(last_answer(page).locator(".error-title")).to_have_text("This chat is no longer there.")
    expect(last_answer(page).get_by_role("button", name="Retry")).to_have_count(0)  # never retried
    expect(page.locator(".chat-item.current")).to_have_attribute("data-chat-id", chat_id)

    # Deleted for real later: the notice does not speak of the question refused before.
    assert httpx.delete(f"{web.url}/chats/{chat_id}").status_code == 200
    expect_deleted_without_a_question_back(page, "was deleted in another tab or window")


def test_an_answer_ended_because_its_chat_was_deleted_leaves_the_chat_at_once(page: Page, web):
    kept = open_new_chat(page, web.url)
    doomed = new_chat(page)
    # Stand-in for the timing: the chat is deleted (by the real server) while its answer is being written, and the
    # route answers with the stream the server then ends that way (a token, then the error event CHAT_DELETED).
    refusal = {
        "type": "error", "error": "CHAT_DELETED", "details": {"chat_id": doomed},
        "message": "“New chat” was deleted while this answer was being written: the question and its answer were "
                   "not saved.",
    }
    stream = 'event: token\ndata: {"type": "token", "content": "Hel"}\n\n' + f"event: error\ndata: {json.dumps(refusal)}\n\n"

    def deleted_meanwhile(route):
        assert httpx.delete(f"{web.url}/chats/{doomed}").status_code == 200
        route.fulfill(status=200, content_type="text/event-stream", body=stream)

    page.route(f"**/chat/{doomed}/stream", deleted_meanwhile)
    # The failed answer shows until the tab leaves the chat: it never offers a Retry, which could not work.
    page.evaluate(
        """() => {
            window.failures = [];
            new MutationObserver(() => {
                for (const node of document.querySelectorAll('#messages .message.failed')) {
                    const retry = [...node.querySelectorAll('button')].some((b) => b.textContent === 'Retry');
                    window.failures.push([node.querySelector('.error-title').textContent, retry]);
                }
            }).observe(document.getElementById('messages'), {subtree: true, childList: true});
        }"""
    )
    ask(page, "When is the meeting?")
    notice = page.locator("#notice")
    expect(notice).to_contain_text("was deleted in another tab or window")
    expect(notice).to_contain_text("Your question was not sent: it is back in the question box.")
    expect(page.get_by_label(QUESTION_BOX)).to_have_value("When is the meeting?")
    expect(chat_item(page, doomed)).to_have_count(0)
    expect(page.locator(".chat-item.current")).to_have_attribute("data-chat-id", kept)
    failures = page.evaluate("window.failures")
    assert failures and all(failure == ["This chat is no longer there.", False] for failure in failures)


def test_a_question_refused_in_a_chat_left_meanwhile_is_not_reported_by_a_later_deletion(page: Page, web):
    kept = open_new_chat(page, web.url)
    doomed = new_chat(page)
    # Stand-in for the timing: the answer's stream is held while the person opens another chat, and the chat
    # is deleted (by the real server) before the stream ends, then with the error event CHAT_DELETED.
    held = []
    page.route(f"**/chat/{doomed}/stream", lambda route: held.append(route))  # (Playwright wants a function)
    with page.expect_request(f"**/chat/{doomed}/stream"):
        ask(page, "When is the meeting?")
    chat_item(page, kept).locator(".chat-select").click()
    expect(page.locator(".chat-item.current")).to_have_attribute("data-chat-id", kept)
    while not held:  # the route's handler runs while Playwright waits
        page.wait_for_timeout(20)
    assert httpx.delete(f"{web.url}/chats/{doomed}").status_code == 200
    refusal = {"type": "error", "error": "CHAT_DELETED", "details": {"chat_id": doomed}, "message": "Gone."}
    stream = f"event: error\ndata: {json.dumps(refusal)}\n\n"
    held[0].fulfill(status=200, content_type="text/event-stream", body=stream)
    expect(chat_item(page, doomed)).to_have_count(0)  # the refusal's catch-up takes it off the list
    expect(page.locator("#notice")).to_be_hidden()  # the chat open is not the one deleted

    # The same id made again (POST /chats with its id), opened, then deleted elsewhere: the notice speaks only
    # of this deletion, not of the question refused in the chat before.
    with httpx.Client(base_url=web.url, timeout=120) as client:
        assert client.post("/chats", json={"id": doomed, "title": "Made again"}).status_code == 201
        shown_again(page)
        chat_item(page, doomed).locator(".chat-select").click()
        expect(page.locator(".welcome")).to_be_visible()
        assert client.delete(f"/chats/{doomed}").status_code == 200
    expect_deleted_without_a_question_back(page, "“Made again” was deleted in another tab or window")


def test_a_chat_deleted_when_no_new_chat_can_be_made_is_still_announced(tabs, tmp_path, build_app_services):
    first, second = tabs
    with serve(build_app_services(tmp_path / "data")) as server:
        first.goto(server.url)
        expect(first.locator(".chat-item")).to_have_count(1)  # the first visit makes the only chat
        only = first.locator(".chat-item").get_attribute("data-chat-id")
        open_chat(second, server.url, only)
        # Stand-in: the server unreachable when the first tab, left without a chat, makes a new one.
        first.route("**/chats", lambda route: route.abort() if route.request.method == "POST" else route.continue_())
        chat_item(first, only).get_by_role("button", name=re.compile("^Delete")).click()
        first.get_by_role("dialog").get_by_role("button", name="Delete").click()
        expect(first.locator("#notice")).to_contain_text("Axiom could not be reached")
        expect(first.locator(".chat-item")).to_have_count(0)
        expect(second.locator("#notice")).to_contain_text("was deleted in another tab or window")  # announced
        expect(chat_item(second, only)).to_have_count(0)

        first.unroute("**/chats")
        new_chat(first)


def test_an_answer_streaming_in_one_tab_goes_on_while_the_other_changes_things(tabs, web, pdfs):
    first, second = tabs
    chat_id = open_new_chat(first, web.url)
    with httpx.Client(base_url=web.url, timeout=120) as client:
        assert upload_paths(client, chat_id, pdfs / PAPER).status_code == 200
    open_chat(second, web.url, chat_id)
    expect(second.locator(".document").filter(has_text=PAPER)).to_be_visible()

    ask(first, PAID_QUESTION)
    streaming = first.locator(".message.assistant.streaming")
    expect(streaming).to_be_visible()
    streaming.evaluate("node => { node.dataset.probe = 'kept'; }")
    # The other tab renames the chat (announced) and the streaming tab is shown again: both catch up.
    second.locator(".chat-item.current").get_by_role("button", name=re.compile("^Rename")).click()
    second.get_by_label(re.compile("^New name for")).fill("Crowdworkers")
    second.keyboard.press("Enter")
    expect(first.locator("#chat-title")).to_have_text("Crowdworkers")
    shown_again(first)

    answer = wait_for_answer(first)
    expect(answer).to_have_attribute("data-probe", "kept")  # the same answer, never drawn again mid-stream
    expect(answer).not_to_have_class(re.compile(r"\b(failed|stopped)\b"))
    expect(first.locator(".message.user")).to_have_text([PAID_QUESTION])
    # The finished answer reaches the other tab.
    expect(second.locator(".message.user")).to_have_text([PAID_QUESTION])
    expect(last_answer(second).locator(".answer-text")).to_have_text(answer.locator(".answer-text").inner_text())


def expect_deleted_without_a_question_back(page, announced: str) -> None:
    """Shown again, the tab announces the deletion and puts no question refused before back in the box."""
    shown_again(page)
    notice = page.locator("#notice")
    expect(notice).to_contain_text(announced)
    expect(notice).not_to_contain_text("not sent")
    expect(page.get_by_label(QUESTION_BOX)).to_have_value("")
