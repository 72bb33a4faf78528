"""The web chat putting itself right: once Axiom can be reached again, and when Back leads to a chat deleted since."""

from __future__ import annotations

import re
from itertools import pairwise
from urllib.parse import urlsplit

import httpx
from playwright.sync_api import Page, Route, expect

from tests.frontend.support import new_chat, open_new_chat

QUESTION_BOX = "Ask a question about this chat's documents"
UNREACHABLE = "Axiom could not be reached. Is the server still running?"
COMES_BACK_MS = 30_000  # the page asks Axiom's /health every few seconds while it waits for it


def chat_item(page: Page, chat_id: str):
    return page.locator(f'.chat-item[data-chat-id="{chat_id}"]')


def delete_chat(page: Page, chat_id: str) -> None:
    chat_item(page, chat_id).get_by_role("button", name=re.compile("^Delete")).click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()


def abort_api(route: Route) -> None:
    """Stand-in for a server that is down: its API cannot be reached (the page's assets are still served)."""
    path = urlsplit(route.request.url).path
    if path == "/" or path.startswith("/assets/"):
        route.fallback()
    else:
        route.abort()


def answer_database_unavailable(route: Route) -> None:
    """Stand-in for Axiom waiting for its database: its own 503, in the JSON error contract."""
    body = {"error": "DATABASE_UNAVAILABLE", "message": "The database cannot be reached.", "details": {}}
    route.fulfill(status=503, json=body, headers={"retry-after": "1"})


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

    # While Axiom is still down, the notice stays: every request to it fails (not only the ones waited for, so a
    # catch-up that happens to reach it cannot end the wait), while the page's own files still load.
    page.route(f"{web.url}/**", abort_api)
    delete_chat(page, kept)
    expect(notice).to_contain_text(UNREACHABLE)
    for _ in range(2):
        with page.expect_request("**/health", timeout=COMES_BACK_MS):
            pass
    expect(notice).to_contain_text(UNREACHABLE)


def test_a_chat_list_that_could_not_be_loaded_loads_once_axiom_answers_again(page: Page, web):
    # Stand-in for a server that is down when the page is opened.
    for route in ("**/chats", "**/health"):
        page.route(route, lambda route: route.abort())
    page.goto(web.url)
    failed = page.locator(".message.failed")
    expect(failed.locator(".error-message")).to_have_text(UNREACHABLE, timeout=COMES_BACK_MS)
    expect(failed.get_by_role("button", name="Retry")).to_be_visible()
    expect(page.locator("#engine-info")).to_be_empty()

    page.unroute_all()
    expect(page.locator(".chat-item.current")).to_have_count(1, timeout=COMES_BACK_MS)
    expect(page.locator("#engine-info")).to_contain_text("Answers by", timeout=COMES_BACK_MS)
    expect(page.locator(".message.failed")).to_have_count(0)
    expect(page.locator(".welcome")).to_be_visible()


def test_a_chat_list_refused_while_axiom_waits_for_its_database_loads_once_it_is_back(page: Page, web):
    for route in ("**/chats", "**/health"):
        page.route(route, answer_database_unavailable)
    page.goto(web.url)
    failed = page.locator(".message.failed")
    expect(failed.locator(".error-message")).to_have_text("The database cannot be reached.", timeout=COMES_BACK_MS)
    with page.expect_request("**/health", timeout=COMES_BACK_MS):  # still waiting: a 503 is not Axiom back
        pass
    expect(failed).to_have_count(1)

    page.unroute_all()  # the database is back: no Retry is needed
    expect(page.locator(".chat-item.current")).to_have_count(1, timeout=COMES_BACK_MS)
    expect(page.locator("#engine-info")).to_contain_text("Answers by", timeout=COMES_BACK_MS)
    expect(page.locator(".message.failed")).to_have_count(0)


def rename_current(page: Page, title: str) -> None:
    page.locator(".chat-item.current").get_by_role("button", name=re.compile("^Rename")).click()
    page.get_by_label(re.compile("^New name for")).fill(title)
    page.keyboard.press("Enter")
    expect(page.locator("#chat-title")).to_have_text(title)


def expect_open(page: Page, chat_id: str) -> None:
    expect(page.locator(".chat-item.current")).to_have_attribute("data-chat-id", chat_id)
    expect(page).to_have_url(re.compile(f"#chat={chat_id}$"))


def open_chat_list(page: Page, url: str) -> str:
    """Opens the app; returns the id of the chat it opens."""
    page.goto(url)
    expect(page.locator(".chat-item.current")).to_have_count(1)
    return page.locator(".chat-item.current").get_attribute("data-chat-id")


def test_back_never_opens_a_chat_deleted_here(page: Page, web):
    first = open_chat_list(page, web.url)
    kept = new_chat(page)
    rename_current(page, "Kept")
    doomed = new_chat(page)
    rename_current(page, "Doomed")
    chat_item(page, kept).locator(".chat-select").click()
    expect_open(page, kept)
    delete_chat(page, doomed)  # not the open one: Back still leads to it
    expect(chat_item(page, doomed)).to_have_count(0)

    page.go_back()
    expect(page.locator("#notice")).to_contain_text("“Doomed” was deleted, so it cannot be opened again.")
    expect_open(page, kept)  # the address is the open chat's again, not the dead one's
    expect(page.locator("#chat-title")).to_have_text("Kept")

    # The open chat deleted: the chat shown instead takes its place in the history, so Back skips the dead one,
    # and the entries of the chat open now too: Back leads to the chat before it.
    page.locator("#dismiss-notice").click()
    other = new_chat(page)
    delete_chat(page, other)
    expect_open(page, kept)
    page.go_back()
    expect_open(page, first)
    expect(page.locator("#notice")).to_be_hidden()
    page.reload()
    expect_open(page, first)
    expect(page.locator("#notice")).to_be_hidden()


def test_back_never_opens_a_chat_deleted_elsewhere_and_a_dead_address_says_so(page: Page, web):
    kept = open_new_chat(page, web.url)
    doomed = new_chat(page)
    chat_item(page, kept).locator(".chat-select").click()
    expect_open(page, kept)
    opened: list[str] = []
    page.on("request", lambda request: doomed in request.url and opened.append(request.url))
    assert httpx.delete(f"{web.url}/chats/{doomed}").status_code == 200  # another client; this tab has not caught up

    page.go_back()
    expect(page.locator("#notice")).to_contain_text("“New chat” was deleted, so it cannot be opened again.")
    expect_open(page, kept)
    expect(chat_item(page, doomed)).to_have_count(0)
    expect(page.get_by_label(QUESTION_BOX)).to_be_editable()  # the chat left open, which is still there
    assert opened == []  # the dead chat was never opened, not even for a moment

    # Its address opened later (a bookmark): another chat opens, and the notice says why.
    # A new page: going to it here would only change the hash (a popstate), not load the page.
    bookmark = page.context.new_page()
    bookmark.goto(f"{web.url}/#chat={doomed}")
    expect(bookmark.locator(".chat-item.current")).to_have_count(1)
    expect(bookmark.locator("#notice")).to_contain_text("The chat at that address cannot be found")
    expect(bookmark).not_to_have_url(re.compile(f"#chat={doomed}$"))


def test_back_and_forward_step_over_the_entries_left_by_a_chat_deleted_since(page: Page, web):
    opened = open_chat_list(page, web.url)
    first = new_chat(page)
    kept = new_chat(page)
    doomed = new_chat(page)
    chat_item(page, kept).locator(".chat-select").click()
    last = new_chat(page)  # the history: opened, first, kept, doomed, kept, last
    assert httpx.delete(f"{web.url}/chats/{doomed}").status_code == 200

    page.go_back()
    expect_open(page, kept)
    page.go_back()  # onto the dead chat's entry, which the open chat takes the place of
    expect(page.locator("#notice")).to_contain_text("was deleted, so it cannot be opened again.")
    expect_open(page, kept)
    page.go_back()  # not onto the kept chat's own entry again, where Back would seem to do nothing
    expect_open(page, first)
    page.go_forward()
    expect_open(page, kept)
    page.go_forward()  # over both entries of the chat open, to the chat after them
    expect_open(page, last)
    page.go_back()
    expect_open(page, kept)
    page.go_back()
    expect_open(page, first)

    # The dead chat's address typed in the address bar: an entry of the page's own, which the open chat then
    # takes the place of, and which Back steps over too.
    page.goto(f"{web.url}/#chat={doomed}")
    expect(page.locator("#notice")).to_contain_text("was deleted, so it cannot be opened again.")
    expect_open(page, first)
    page.go_back()
    expect_open(page, opened)


def test_two_quick_backs_open_the_chat_two_entries_back_without_leaving_the_page(page: Page, web):
    # The second Back came while the first one's chat was still opening (the list asked for again first): it was
    # taken for one onto the chat still shown, and went on over it, out of the page.
    page.goto("about:blank")
    first = open_chat_list(page, web.url)
    new_chat(page)
    chat_item(page, first).locator(".chat-select").click()
    expect_open(page, first)  # the history: about:blank, first, second, first
    held: list[Route] = []
    page.route("**/chats", lambda route: held.append(route) if route.request.method == "GET" else route.fallback())
    listings: list[str] = []

    def listed_twice(request) -> bool:  # the list asked for again by each Back
        if request.url.endswith("/chats"):
            listings.append(request.url)
        return len(listings) == 2

    with page.expect_request(listed_twice, timeout=10_000):
        page.evaluate("""() => {
            addEventListener('popstate', () => history.back(), { once: true });
            history.back();
        }""")
    for route in held:
        route.continue_()
    page.unroute_all()
    expect_open(page, first)
    assert page.url.startswith(web.url)


def test_back_and_forward_over_entries_an_older_page_left_do_not_go_on_by_themselves(page: Page, web):
    # Chromium keeps the history across reloads: entries the page made before it numbered them have no number.
    # One taken for new, numbered after the one left, and its neighbour of the same chat sent Back and Forward
    # over each other without end.
    first = open_chat_list(page, web.url)
    second = new_chat(page)
    page.evaluate(f"""() => {{
        history.replaceState(null, '', '#chat={second}');
        history.pushState(null, '', '#chat={second}');
    }}""")  # as the older page left them: the open chat's entry twice (the second one once a deleted chat's)
    page.reload()
    expect_open(page, second)
    page.evaluate("() => { window.moves = 0; addEventListener('popstate', () => { window.moves += 1; }); }")
    page.go_back()  # onto the older entry of the chat open: where it lies is not known, so it is not stepped over
    page.go_forward()
    page.wait_for_timeout(500)  # time for a few hundred moves, had they gone on
    assert page.evaluate("() => window.moves") == 2
    expect_open(page, second)
    page.go_back()
    page.go_back()
    expect_open(page, first)
    page.go_forward()
    expect_open(page, second)

# Each /health the page asks for, at the page's (Playwright's fake) clock, and a promise that resolves once the
# last one has failed or answered and the page has done what follows (its rejection's handlers are microtasks:
# a message posted after it is handled after them).
WATCH_HEALTH = """
    window.healthAsked = [];
    window.healthSettled = Promise.resolve();
    window.pageHidden = false;
    Object.defineProperty(document, 'hidden', { get: () => window.pageHidden });
    Object.defineProperty(document, 'visibilityState', { get: () => window.pageHidden ? 'hidden' : 'visible' });
    const fetchFromNetwork = window.fetch;
    window.fetch = (resource, options) => {
        const response = fetchFromNetwork(resource, options);
        if (String(resource).endsWith('/health')) {
            window.healthAsked.push(Date.now());
            window.healthSettled = response.catch(() => {}).then(() => new Promise((resolve) => {
                const channel = new MessageChannel();
                channel.port1.onmessage = resolve;
                channel.port2.postMessage(null);
            }));
        }
        return response;
    };
"""


def test_while_axiom_is_away_its_health_is_asked_less_and_less_often_and_not_while_the_page_is_hidden(
    page: Page, web
):
    page.clock.install()
    page.clock.pause_at(1_000_000_000_000)  # the page's timers run only when the test moves its clock on
    page.add_init_script(WATCH_HEALTH)
    page.route(f"{web.url}/**", abort_api)  # Axiom is down as the page opens
    page.goto(web.url)
    expect(page.locator(".message.failed .error-message")).to_have_text(UNREACHABLE)

    def health_asked_after(milliseconds: int) -> list[int]:
        """Moves the clock on one second at a time; the gaps between the /health asked for until then."""
        for _ in range(milliseconds // 1000):
            page.clock.run_for(1000)
            page.evaluate("() => window.healthSettled")
        asked = page.evaluate("() => window.healthAsked")
        return [later - earlier for earlier, later in pairwise(asked)]

    # Asked at once (the models' names), then 3 s after, then each time twice as long after, up to 30 s.
    assert health_asked_after(110_000) == [3000, 6000, 12000, 24000, 30000, 30000]

    asked = len(page.evaluate("() => window.healthAsked"))
    page.evaluate("() => { window.pageHidden = true; document.dispatchEvent(new Event('visibilitychange')); }")
    health_asked_after(120_000)
    assert len(page.evaluate("() => window.healthAsked")) == asked  # none while nobody sees the page

    page.evaluate("() => { window.pageHidden = false; document.dispatchEvent(new Event('visibilitychange')); }")
    page.evaluate("() => window.healthSettled")
    assert len(page.evaluate("() => window.healthAsked")) == asked + 1  # at once when it is shown again
    page.evaluate("() => window.dispatchEvent(new Event('online'))")
    page.evaluate("() => window.healthSettled")
    assert len(page.evaluate("() => window.healthAsked")) == asked + 2  # and when the device is online again

    page.unroute_all()  # Axiom is back: the next check finds it, and the chat list loads by itself
    health_asked_after(30_000)
    expect(page.locator(".chat-item.current")).to_have_count(1)
    expect(page.locator(".message.failed")).to_have_count(0)


def test_a_conversation_that_could_not_be_loaded_loads_once_axiom_answers_again(page: Page, web):
    asked_in = open_new_chat(page, web.url)
    page.get_by_label(QUESTION_BOX).fill("hi")  # a greeting is answered without the model
    page.keyboard.press("Enter")
    expect(page.locator(".message.assistant .answer-text")).to_contain_text("Hello")
    new_chat(page)

    page.route(f"{web.url}/**", abort_api)  # Axiom goes down; the person opens the chat asked in
    chat_item(page, asked_in).locator(".chat-select").click()
    expect(page.locator(".message.failed .error-message")).to_have_text(UNREACHABLE)

    page.unroute_all()  # back: no Retry is needed
    expect(page.locator(".message.user")).to_have_text("hi", timeout=COMES_BACK_MS)
    expect(page.locator(".message.failed")).to_have_count(0)


def test_a_question_asked_while_the_conversation_could_not_be_loaded_is_kept_once_axiom_is_back(page: Page, web):
    # Loading the conversation by itself once Axiom was back drew it again, over the question that failed
    # meanwhile: its text was lost.
    asked_in = open_new_chat(page, web.url)
    page.get_by_label(QUESTION_BOX).fill("hi")
    page.keyboard.press("Enter")
    expect(page.locator(".message.assistant .answer-text")).to_contain_text("Hello")
    new_chat(page)
    page.route(f"{web.url}/**", abort_api)
    chat_item(page, asked_in).locator(".chat-select").click()
    expect(page.locator(".message.failed .error-message")).to_have_text(UNREACHABLE)
    question = "What did the board decide about the budget?"
    page.get_by_label(QUESTION_BOX).fill(question)
    page.keyboard.press("Enter")
    expect(page.locator(".message.failed")).to_have_count(2)

    page.unroute_all()
    # Waits with the page for Axiom: this runs after what waited for it before (the conversation's loading).
    page.evaluate("""async () => {
        const { whenBack } = await import('/assets/js/api.js');
        await new Promise((resolve) => whenBack({ status: 0 }, resolve));
    }""")
    expect(page.locator(".message.user")).to_have_text([question])
    expect(page.locator(".message.failed")).to_have_count(2)  # each with its Retry
