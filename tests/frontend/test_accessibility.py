"""The web chat is usable by everyone: axe-core (bundled by axe-playwright-python) audits every view against
the WCAG 2.1 A and AA rules, in light and dark colours, on a desktop and a phone, in Chromium against the real
app; every action is done with the keyboard alone; the question box's hint fits a 320 px screen.

The model is scripted and holds its answer part-way until released (a stand-in: the bundled model cannot be
made to pause mid-answer), so the streaming answer is audited as it stands still; upload, reading, retrieval,
grounding and SSE are real.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import httpx
import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, Route, expect

from tests.api.server import RunningServer, serve
from tests.frontend.support import ask, last_answer, open_new_chat, upload, upload_row, wait_for_answer
from tests.rag.scripted import ScriptedLLM
from tests.support import documents

QUESTION = "How many axolotls were counted in the survey?"
ANSWER = "The survey counts list Axolotl | 1,204 [Source 1]. Axolotls regrow their limbs [Source 2]."
LOCKED = "encrypted_userpw_openpassword.pdf"
DAMAGED = "malformed_header_and_eof_only.pdf"
# The chat's layouts: a desktop's three columns, and a phone's one column with panels that slide in.
LAYOUTS = {"1280x800": {"width": 1280, "height": 800}, "390x844": {"width": 390, "height": 844}}
SCHEMES = ("light", "dark")
# Every WCAG 2.1 A and AA rule axe-core has; none is turned off.
WCAG_21_AA = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
              "resultTypes": ["violations"]}
AXE = Axe()


class HeldLLM(ScriptedLLM):
    """Scripted words that stop after the first few until `release` is set (or the answer is stopped)."""

    def __init__(self, answer: str) -> None:
        super().__init__(answer)
        self.release = threading.Event()

    @contextmanager
    def answering(self, answer: str) -> Iterator[None]:
        """Answers `answer` instead, for a while."""
        self._answers, before = [answer], self._answers
        try:
            yield
        finally:
            self._answers = before

    def stream(self, messages, params, cancelled=None):
        for index, word in enumerate(super().stream(messages, params, cancelled)):
            while index == 4 and not self.release.wait(0.05):
                if cancelled is not None and cancelled():
                    return
            yield word


@pytest.fixture(scope="module")
def held() -> HeldLLM:
    return HeldLLM(ANSWER)


@pytest.fixture(scope="module")
def server(build_app_services, tmp_path_factory, held) -> Iterator[RunningServer]:
    with serve(build_app_services(tmp_path_factory.mktemp("a11y"), llm=held)) as running:
        yield running


def unreachable(route: Route) -> None:
    """Stand-in for a server that is down: its API cannot be reached (the page's own files still load)."""
    path = urlsplit(route.request.url).path
    if path == "/" or path.startswith("/assets/"):
        route.fallback()
    else:
        route.abort()


def narrow(page: Page) -> bool:
    return page.get_by_role("button", name="Show chats").is_visible()


def show_documents(page: Page) -> None:
    if not page.locator("#documents-panel").is_visible():
        page.get_by_role("button", name=re.compile("^Documents")).click()
    expect(page.locator("#documents-panel")).to_be_in_viewport()


def show_chats(page: Page) -> None:
    if narrow(page):
        page.get_by_role("button", name="Show chats").click()
    expect(page.locator("#sidebar")).to_be_in_viewport()


def current_chat(page: Page):
    return page.locator(".chat-item.current")


# The nearest live region around a node, if any (a role=log or =status is one without saying aria-live).
LIVE_REGION_AROUND = """(node) => node.closest(
    '[aria-live]:not([aria-live=off]), [role=log], [role=status], [role=alert], [role=marquee], [role=timer]'
)?.outerHTML.slice(0, 120) ?? null"""


def record_announcements(page: Page) -> None:
    """From now on every text the page's announcers (its status regions for screen readers: the page's, and
    each dialog's) say is kept in window.announced (emptied at each call); window.announcedIn is where the
    last was said (a dialog's id, or "page")."""
    page.evaluate(
        """() => {
            window.announced = [];
            if (window.recording) return;
            window.recording = true;
            for (const announcer of document.querySelectorAll('.announcer')) {
                new MutationObserver(() => {
                    if (!announcer.textContent) return;
                    window.announced.push(announcer.textContent);
                    window.announcedIn = announcer.closest('dialog')?.id ?? 'page';
                }).observe(announcer, {subtree: true, childList: true, characterData: true});
            }
        }"""
    )


def heard(page: Page, region: str) -> bool:
    """Whether a screen reader hears the status region `region` (a selector): whether it is in the
    accessibility tree, not left out of it (a region outside an open modal dialog is, with the rest of the page)."""
    cdp = page.context.new_cdp_session(page)
    try:
        root = cdp.send("DOM.getDocument")["root"]["nodeId"]
        node_id = cdp.send("DOM.querySelector", {"nodeId": root, "selector": region})["nodeId"]
        nodes = cdp.send("Accessibility.getPartialAXTree", {"nodeId": node_id, "fetchRelatives": False})["nodes"]
        return not nodes[0].get("ignored", False)
    finally:
        cdp.detach()


TWO_FRAMES = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"


class Audit:
    """Runs axe on a view in every colour scheme and layout; `reveal` brings the view back after the layout
    changed (a panel that slid away, a dialog), `conceal` puts it away before the next one."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.violations: list[str] = []

    def __call__(self, view: str, reveal: Callable[[], None] = lambda: None,
                 conceal: Callable[[], None] = lambda: None) -> None:
        for scheme in SCHEMES:
            self.page.emulate_media(color_scheme=scheme)
            for layout, viewport in LAYOUTS.items():
                self.page.set_viewport_size(viewport)
                # The page lays itself out again on the media queries' change events, sent before a frame.
                self.page.evaluate(TWO_FRAMES)
                reveal()
                results = AXE.run(self.page, options=WCAG_21_AA)
                if results.violations_count:
                    self.violations.append(f"{view} ({scheme}, {layout}): {results.generate_report()}")
                conceal()
        self.page.emulate_media(color_scheme="light")
        self.page.set_viewport_size(LAYOUTS["1280x800"])


def test_every_view_passes_the_wcag_21_aa_audit(page: Page, server, held, pdfs, tmp_path) -> None:
    held.release.clear()
    audit = Audit(page)
    chat_id = open_new_chat(page, server.url)
    audit("the empty first view")

    deck = tmp_path / "deck.pptx"
    deck.write_bytes(documents.deck())
    upload(page, deck)
    expect(upload_row(page, "deck.pptx")).to_have_attribute("data-state", "ready", timeout=60_000)

    record_announcements(page)
    ask(page, QUESTION)
    streamed = page.locator(".message.assistant.streaming .answer-text")
    expect(streamed).to_contain_text("The survey counts list")
    # A screen reader is not read the answer again at each token: no live region holds the streamed text.
    assert streamed.evaluate(LIVE_REGION_AROUND) is None
    # Its cursor blinks, unless the person's system asks for less motion.
    cursor = "(text) => getComputedStyle(text.lastElementChild, '::after').animationName"
    assert streamed.evaluate(cursor) == "blink"
    page.emulate_media(reduced_motion="reduce")
    assert streamed.evaluate(cursor) == "none"
    page.emulate_media(reduced_motion="no-preference")
    audit("an answer streaming")
    held.release.set()
    answer = wait_for_answer(page)
    # It hears what is going on, then the answer once it is written, once.
    announced = page.evaluate("window.announced")
    assert "Thinking…" in announced[0]
    assert announced[-1].startswith(answer.locator(".answer-text").inner_text())
    assert not any("The survey counts list" in text for text in announced[:-1]), announced
    expect(answer.locator(".cite").first).to_be_visible()

    def open_citation() -> None:
        answer.locator(".cite").first.click()
        expect(page.locator("#passage-dialog")).to_be_visible()

    def close_dialog() -> None:
        page.keyboard.press("Escape")
        expect(page.locator("dialog[open]")).to_have_count(0)

    audit("an answer with its citation opened", reveal=open_citation, conceal=close_dialog)

    # The not-found reply with its closest passages, as the pipeline stores it (which of its judgements says
    # "not found" is not the page's business): read back from the history.
    with httpx.Client(base_url=server.url) as client:
        stored = client.get(f"/chat/history/{chat_id}").json()["messages"][-1]
        session_id = next(chat["session_id"] for chat in client.get("/chats").json()["chats"]
                          if chat["id"] == chat_id)
    closest = ("Your documents touch on this, but I couldn't find the answer in them.\n\n"
               "The closest passages, which do not answer the question:\n"
               "“Axolotls regrow their limbs” [Source 1]")
    sources = stored["metadata"]["sources"][:1]
    server.services.memory.add_exchange(
        session_id, "Where do axolotls live?", closest,
        {"answer_kind": "not_found", "evidence_reason": "closest", "is_grounded": True, "sources": sources},
        chat_id=chat_id,
    )
    page.reload()
    expect(last_answer(page).locator(".mark-not-answered")).to_be_visible()
    expect(last_answer(page).get_by_role("list", name="Closest passages, not an answer")).to_be_visible()
    audit("the not-found reply with its closest passages")

    # Uploads: one that failed, a locked PDF asking for its password, one in progress (held on its way).
    upload(page, pdfs / DAMAGED, pdfs / LOCKED)
    expect(upload_row(page, DAMAGED)).to_have_attribute("data-state", "failed", timeout=60_000)
    expect(upload_row(page, LOCKED).get_by_label(f"Password for {LOCKED}")).to_be_visible(timeout=60_000)
    held_uploads: list[Route] = []
    page.route(f"**/chat/{chat_id}/documents*", lambda route: held_uploads.append(route)
               if route.request.method == "POST" else route.fallback())
    upload(page, deck)
    expect(upload_row(page, "deck.pptx").last).to_have_attribute("data-state", "uploading")
    audit("uploads failed, locked and in progress", reveal=lambda: show_documents(page))
    for route in held_uploads:
        route.abort()
    page.unroute_all()

    def rename() -> None:
        show_chats(page)
        current_chat(page).get_by_role("button", name=re.compile("^Rename")).click()
        expect(page.get_by_label(re.compile("^New name for"))).to_be_focused()

    def cancel_rename() -> None:
        page.keyboard.press("Escape")
        expect(page.get_by_label(re.compile("^New name for"))).to_have_count(0)

    audit("a chat being renamed", reveal=rename, conceal=cancel_rename)

    def confirm_delete() -> None:
        show_chats(page)
        current_chat(page).get_by_role("button", name=re.compile("^Delete")).click()
        expect(page.locator("#confirm-dialog")).to_be_visible()

    audit("a deletion to confirm", reveal=confirm_delete, conceal=close_dialog)

    # Axiom away: the notice says so, and a question asked meanwhile fails with a Retry.
    page.route(f"{server.url}/**", unreachable)
    ask(page, "hi")
    expect(last_answer(page)).to_have_class(re.compile(r"\bfailed\b"))
    confirm_delete()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(page.locator("#notice")).to_be_visible()
    audit("Axiom unreachable: its notice and a failed answer")
    page.unroute_all(behavior="ignoreErrors")

    # A server that asks for an API key (a stand-in 401: this one has none): its dialog, in every layout.
    page.route("**/chats", lambda route: route.fulfill(status=401, json={
        "error": "UNAUTHORIZED", "message": "This server needs an API key.", "details": {}}))
    page.reload()
    expect(page.locator("#key-dialog")).to_be_visible()
    audit("the API key asked for")
    page.unroute_all(behavior="ignoreErrors")

    assert not audit.violations, "\n\n".join(audit.violations)


def answer_held_mid_stream(page: Page, server, held, tmp_path) -> str:
    """A new chat holding the deck, its answer to QUESTION held part-way through; returns the chat's id."""
    held.release.clear()
    chat_id = open_new_chat(page, server.url)
    deck = tmp_path / "deck.pptx"
    deck.write_bytes(documents.deck())
    upload(page, deck)
    expect(upload_row(page, "deck.pptx")).to_have_attribute("data-state", "ready", timeout=60_000)
    ask(page, QUESTION)
    expect(page.locator(".message.assistant.streaming .answer-text")).to_contain_text("The survey counts list")
    return chat_id


def test_an_answer_ending_behind_an_open_dialog_is_still_heard(page: Page, server, held, tmp_path) -> None:
    answer_held_mid_stream(page, server, held, tmp_path)
    # A modal dialog opened meanwhile (here Clear's confirmation) makes the rest of the page inert.
    page.get_by_role("button", name="Clear conversation").click()
    expect(page.locator("#confirm-dialog")).to_be_visible()
    record_announcements(page)
    # The page's status region is silent now; the dialog's is heard.
    assert heard(page, "#confirm-dialog .announcer") and not heard(page, "#announcer")
    held.release.set()
    expect(last_answer(page)).not_to_have_class(re.compile(r"\bstreaming\b"), timeout=60_000)
    said = last_answer(page).locator(".answer-text").text_content()
    announced = page.evaluate("window.announced")
    assert announced and announced[-1].startswith(said), announced
    assert page.evaluate("window.announcedIn") == "confirm-dialog"
    page.get_by_role("dialog").get_by_role("button", name="Cancel").click()
    expect(page.locator("#confirm-dialog")).to_be_hidden()


def test_only_the_chat_on_screen_is_announced(page: Page, server, held, tmp_path) -> None:
    chat_id = answer_held_mid_stream(page, server, held, tmp_path)
    # Left while it is written: it goes on, and is saved, without a word in the chat now open.
    page.locator(".chat-item:not(.current) .chat-select").first.click()
    expect(page.locator(".chat-item.current")).not_to_have_attribute("data-chat-id", chat_id)
    record_announcements(page)
    held.release.set()
    page.wait_for_function(
        # A 404 until the exchange is saved, when the answer ends.
        "async (url) => { const reply = await fetch(url); return reply.ok && (await reply.json()).messages.length === 2; }",
        arg=f"/chat/history/{chat_id}", polling=200, timeout=60_000,
    )
    assert page.evaluate("window.announced") == []


def test_a_stopped_or_failed_answer_is_said_what_became_of_it(page: Page, server, held, tmp_path) -> None:
    answer_held_mid_stream(page, server, held, tmp_path)
    record_announcements(page)
    page.get_by_role("button", name="Stop generating").click()
    expect(last_answer(page)).to_have_class(re.compile(r"\bstopped\b"))
    # What became of it, not its unfinished text.
    assert page.evaluate("window.announced") == [last_answer(page).locator(".mark-stopped").text_content()]

    # A failed one is an alert (a live region of its own), read as it is shown, with its Retry.
    held.release.set()
    page.route("**/stream", lambda route: route.abort())
    ask(page, "hi")
    expect(last_answer(page)).to_have_class(re.compile(r"\bfailed\b"))
    assert last_answer(page).locator(".error-title").evaluate(LIVE_REGION_AROUND) is not None
    page.unroute_all(behavior="ignoreErrors")


def test_an_uploads_steps_are_announced_once_each(page: Page, server, tmp_path) -> None:
    open_new_chat(page, server.url)
    notes = tmp_path / "notes.txt"
    notes.write_text("Axolotls regrow their limbs and hearts. " * 4000)  # 160 kB
    # Sent at 50 kB/s (Chromium's network emulation), its row counts many percents on the way.
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions",
             {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": 50_000})
    record_announcements(page)
    page.evaluate(
        """() => { window.shown = new Set(); new MutationObserver(() => document.querySelectorAll('.upload-status')
            .forEach((status) => window.shown.add(status.textContent)))
            .observe(document.getElementById('upload-list'), {subtree: true, childList: true, characterData: true});
        }"""
    )
    upload(page, notes)
    expect(upload_row(page, "notes.txt")).to_have_attribute("data-state", "ready", timeout=60_000)
    shown = page.evaluate("[...window.shown]")
    assert len([text for text in shown if text.startswith("Uploading")]) > 3, shown
    # Its steps are said once each, not each percent (the list of uploads is no live region).
    assert upload_row(page, "notes.txt").locator(".upload-status").evaluate(LIVE_REGION_AROUND) is None
    announced = page.evaluate("window.announced")
    assert len([text for text in announced if text.startswith("notes.txt: Uploading")]) == 1, announced
    assert announced[-1].startswith("notes.txt: Ready · "), announced
    assert len(announced) == len(set(announced)), announced


# The answer copies the document, so that it is grounded: it has the mark saying so, and a note under it.
BRIDGE = ("Ada Finchley built the granite bridge over the river Quorra in 1931. "
          "The bridge has seven arches and a clock tower.\n")
BRIDGE_ANSWER = ("Ada Finchley built the granite bridge over the river Quorra in 1931 [Source 1]. "
                 "The bridge has seven arches and a clock tower [Source 1].")


def test_an_answer_is_heard_with_all_its_notes(page: Page, server, held, tmp_path) -> None:
    held.release.set()
    chat_id = open_new_chat(page, server.url)
    bridge = tmp_path / "bridge.txt"
    bridge.write_text(BRIDGE)
    upload(page, bridge)
    expect(upload_row(page, "bridge.txt")).to_have_attribute("data-state", "ready", timeout=60_000)
    # A file still on its way when the question is asked: the answer notes it may not have searched it.
    page.route(f"**/chat/{chat_id}/documents*", lambda route: None if route.request.method == "POST"
               else route.fallback())
    deck = tmp_path / "deck.pptx"
    deck.write_bytes(documents.deck())
    upload(page, deck)
    expect(upload_row(page, "deck.pptx")).to_have_attribute("data-state", "uploading")
    record_announcements(page)
    with held.answering(BRIDGE_ANSWER):
        ask(page, "Who built the granite bridge over the river Quorra, and what does it have?")
        answer = wait_for_answer(page)
    expect(answer.locator(".mark-unsearched")).to_be_visible()
    spoken = page.evaluate("window.announced")[-1]
    notes = answer.locator(".mark").all_text_contents()
    assert len(notes) == 2, notes  # what kind of answer it is, and the file it may not have searched
    assert spoken.startswith(answer.locator(".answer-text").text_content())
    assert all(note in spoken for note in notes), spoken
    page.unroute_all(behavior="ignoreErrors")


def test_the_question_boxs_hint_is_never_cut_off_even_320_px_wide(page: Page, server) -> None:
    open_new_chat(page, server.url)
    box = page.get_by_label("Ask a question about this chat's documents")
    fits = "(box) => box.placeholder.length > 0 && box.scrollHeight <= box.clientHeight"
    expect(box).to_have_attribute("placeholder", "Ask about your documents…")
    assert box.evaluate(fits)

    page.set_viewport_size({"width": 320, "height": 640})
    expect(box).to_have_attribute("placeholder", "Ask a question…")  # a shorter hint, on one line
    assert box.evaluate(fits)
    assert page.evaluate("document.documentElement.scrollWidth") <= 320
    box.fill("hi")
    box.fill("")
    assert box.evaluate(fits)
    # Larger text (a person's zoom or font size): the box grows to show the hint whole.
    box.evaluate("(box) => { box.style.fontSize = '30px'; }")
    page.evaluate("window.dispatchEvent(new Event('resize'))")
    assert box.evaluate(fits)


def test_what_was_announced_is_not_left_to_be_read_again(page: Page, server, held) -> None:
    held.release.set()
    page.clock.install()  # the page's timers, run ahead below rather than waited for
    open_new_chat(page, server.url)
    ask(page, "hi")
    answer = wait_for_answer(page)
    announcer = page.locator("#announcer")
    expect(announcer).to_have_text(answer.locator(".answer-text").text_content())
    # Said: a screen reader reading the page through does not meet the answer again after the conversation.
    page.clock.run_for(10_000)
    expect(announcer).to_be_empty()


def test_the_page_itself_never_scrolls_at_any_width(page: Page, server) -> None:
    """Only the conversation and the panels scroll: nothing hidden for screen readers (the status region after
    the layout) makes the page taller than the screen."""
    open_new_chat(page, server.url)
    for viewport in [*LAYOUTS.values(), {"width": 320, "height": 640}]:
        page.set_viewport_size(viewport)
        page.evaluate(TWO_FRAMES)
        size = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
        assert size == [viewport["width"], viewport["height"]], (viewport, size)


# What has the keyboard's focus: its name, and whether it shows a focus ring (the hidden file input shows it
# on its visible label, "Choose files…").
FOCUSED = """(within) => {
    const node = document.activeElement;
    const name = node.getAttribute('aria-label') || node.labels?.[0]?.textContent || node.textContent || '';
    const ring = getComputedStyle(node.id === 'file-input' ? node.labels[0] : node);
    return {name: name.trim(), tag: node.tagName, within: node.closest(within) !== null,
            ring: ring.outlineStyle !== 'none' && parseFloat(ring.outlineWidth) >= 2
                && ring.opacity !== '0'};
}"""


def tab_to(page: Page, name: str, backwards: bool = False, within: str = "body") -> None:
    """Presses Tab (or Shift+Tab) until the control whose name starts with `name` (inside `within`) has the
    focus; every control passed on the way shows its focus ring."""
    key = "Shift+Tab" if backwards else "Tab"
    passed = []
    for _ in range(60):
        page.keyboard.press(key)
        focused = page.evaluate(FOCUSED, within)
        if focused["tag"] == "BODY":  # past the page's last control, out to the browser's, then round again
            continue
        assert focused["ring"], f"no visible focus ring on {focused}"
        if focused["name"].startswith(name) and focused["within"]:
            return
        passed.append(focused["name"])
    raise AssertionError(f"{key} never reaches {name!r}; it passes {passed}")


def test_every_action_is_done_with_the_keyboard_alone(page: Page, server, held, tmp_path) -> None:
    held.release.set()  # the scripted answer is not held here
    # Playwright takes the file chooser over only once asked to: asked early, it is ready for the key press.
    page.on("filechooser", lambda chooser: None)
    open_new_chat(page, server.url)
    deck = tmp_path / "deck.pptx"
    deck.write_bytes(documents.deck())

    # Upload: the file input's chooser opens from the keyboard.
    tab_to(page, "Choose files…")
    with page.expect_file_chooser() as chooser:
        page.keyboard.press("Space")
    chooser.value.set_files(deck)
    expect(upload_row(page, "deck.pptx")).to_have_attribute("data-state", "ready", timeout=60_000)

    # Ask, then open a citation and close it again.
    tab_to(page, "Ask a question about this chat's documents", backwards=True)
    page.keyboard.type(QUESTION)
    page.keyboard.press("Enter")
    answer = wait_for_answer(page)
    tab_to(page, "Source 1", backwards=True)
    page.keyboard.press("Enter")
    expect(page.locator("#passage-dialog")).to_be_visible()
    expect(page.locator("#passage-dialog").get_by_role("button", name="Close")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.locator("#passage-dialog")).to_be_hidden()
    expect(answer.locator(".cite").first).to_be_focused()  # back where it was opened from

    # Rename the open chat.
    tab_to(page, "Rename", backwards=True, within=".chat-item.current")
    page.keyboard.press("Enter")
    page.keyboard.press("ControlOrMeta+A")
    page.keyboard.type("Axolotl survey")
    page.keyboard.press("Enter")
    expect(current_chat(page).locator(".chat-select")).to_have_text("Axolotl survey")
    expect(current_chat(page).locator(".chat-select")).to_be_focused()

    # Retry an answer that failed (stand-in for a server that cannot be reached).
    page.route("**/stream", lambda route: route.abort())
    tab_to(page, "Ask a question about this chat's documents")
    page.keyboard.type("hi")
    page.keyboard.press("Enter")
    expect(last_answer(page)).to_have_class(re.compile(r"\bfailed\b"))
    page.unroute("**/stream")
    tab_to(page, "Retry", backwards=True)
    page.keyboard.press("Enter")
    expect(last_answer(page).locator(".answer-text")).to_contain_text("Hello")

    # Clear the conversation, confirmed in its dialog.
    tab_to(page, "Clear conversation", backwards=True)
    page.keyboard.press("Enter")
    dialog = page.locator("#confirm-dialog")
    expect(dialog).to_be_visible()
    tab_to(page, "Clear")
    page.keyboard.press("Enter")
    expect(page.locator(".message")).to_have_count(0)

    # A new chat, then delete the one used so far, confirmed in its dialog.
    chats = page.locator(".chat-item").count()
    tab_to(page, "+ New chat", backwards=True)
    page.keyboard.press("Enter")
    expect(page.locator(".chat-item")).to_have_count(chats + 1)
    expect(page.get_by_label("Ask a question about this chat's documents")).to_be_focused()
    tab_to(page, "Delete “Axolotl survey”", backwards=True)
    page.keyboard.press("Enter")
    expect(dialog).to_be_visible()
    tab_to(page, "Delete")
    page.keyboard.press("Enter")
    expect(page.locator(".chat-item")).to_have_count(chats)
    expect(page.locator(".chat-item .chat-select").filter(has_text="Axolotl survey")).to_have_count(0)
