"""Steps a person takes in the web chat, shared by the browser tests."""

from __future__ import annotations

import base64
import re
from pathlib import Path

from playwright.sync_api import Page, expect

ANSWER_SECONDS = 240  # the bundled 135M model on a busy 2-core machine; a finished answer usually takes seconds
INDEX_SECONDS = 120
# The shared paper the web chat tests upload, and a question it answers (the crowdworkers' hourly pay).
PAPER = "academic_2col_squad_rajpurkar2016.pdf"
PAID_QUESTION = "How much were the crowdworkers paid per hour?"


def open_new_chat(page: Page, url: str) -> str:
    """Opens the app, starts a new chat and returns its id (kept in the URL)."""
    page.goto(url)
    expect(page.locator(".chat-item").first).to_be_visible()
    return new_chat(page)


def new_chat(page: Page) -> str:
    """Starts a new chat in the open app and returns its id: always another one than the chat open before.

    "+ New chat" keeps an open chat that is new and unused, so while the open chat is still called "New chat"
    the new one is made as another tab would make it (through the app's own API client), then opened from the
    list once this tab has caught up with it.
    """
    current = page.locator(".chat-item.current .chat-select")
    before = page.locator(".chat-item").count()
    show_chats = page.get_by_role("button", name="Show chats")
    if current.count() == 1 and current.text_content() == "New chat":
        made = page.evaluate("async () => (await import('/assets/js/api.js')).api.createChat().then((c) => c.id)")
        page.evaluate("() => window.dispatchEvent(new Event('focus'))")  # catches up, as a focused tab does
        if show_chats.is_visible():
            show_chats.click()
        page.locator(f'.chat-item[data-chat-id="{made}"] .chat-select').click()
    else:
        if show_chats.is_visible():  # on a phone the chat list slides in on demand
            show_chats.click()
        page.get_by_role("button", name="+ New chat").click()
    expect(page.locator(".chat-item")).to_have_count(before + 1)
    chat_id = page.locator(".chat-item.current").get_attribute("data-chat-id")
    expect(page).to_have_url(re.compile(f"#chat={chat_id}$"))
    return chat_id


def upload(page: Page, *paths: Path) -> None:
    page.locator("#file-input").set_input_files([str(path) for path in paths])


def drop(page: Page, *paths: Path) -> None:
    """Drags files onto the drop zone the way a file manager does: dragenter, dragover, drop with a DataTransfer."""
    files = [{"name": path.name, "data": base64.b64encode(path.read_bytes()).decode()} for path in paths]
    page.evaluate(
        """(files) => {
            const transfer = new DataTransfer();
            for (const file of files) {
                const bytes = Uint8Array.from(atob(file.data), (c) => c.charCodeAt(0));
                transfer.items.add(new File([bytes], file.name));
            }
            const zone = document.getElementById('dropzone');
            for (const type of ['dragenter', 'dragover', 'drop']) {
                zone.dispatchEvent(new DragEvent(type, {dataTransfer: transfer, bubbles: true, cancelable: true}));
            }
        }""",
        files,
    )


def upload_row(page: Page, name: str):
    return page.locator(".upload").filter(has_text=name)


def wait_until_uploaded(page: Page, name: str) -> None:
    expect(upload_row(page, name)).to_have_attribute("data-state", "ready", timeout=INDEX_SECONDS * 1000)


def ask(page: Page, question: str) -> None:
    # Right after a (re)load the chat list may still be loading, and Enter before a chat is open does nothing.
    expect(page.locator(".chat-item.current")).to_have_count(1)
    page.get_by_label("Ask a question about this chat's documents").fill(question)
    page.keyboard.press("Enter")


def last_answer(page: Page):
    return page.locator(".message.assistant").last


def wait_for_answer(page: Page):
    """The last answer once its stream has ended (done, stopped or failed)."""
    answer = last_answer(page)
    expect(answer).not_to_have_attribute("aria-busy", "true", timeout=ANSWER_SECONDS * 1000)
    expect(answer).not_to_have_class(re.compile(r"\bstreaming\b"))
    return answer


def record_answer_texts(page: Page) -> None:
    """From now on, every distinct text the streaming answer shows is kept in window.answerTexts, every status
    line in window.statusTexts and every evidence shown in window.evidenceTexts; window.textBeforeEvidence is set if
    answer text showed while no evidence had been."""
    page.evaluate(
        """() => {
            window.answerTexts = [];
            window.statusTexts = [];
            window.evidenceTexts = [];
            window.textBeforeEvidence = false;
            const keep = (list, node) => {
                const text = node ? node.textContent : '';
                if (text && text !== list.at(-1)) list.push(text);
            };
            new MutationObserver(() => {
                const streaming = '.message.assistant.streaming';
                keep(window.evidenceTexts, document.querySelector(`${streaming} .evidence:not([hidden]) .evidence-text`));
                keep(window.answerTexts, document.querySelector(`${streaming} .answer-text`));
                keep(window.statusTexts, document.querySelector(`${streaming} .status-line`));
                if (window.answerTexts.length && !window.evidenceTexts.length) window.textBeforeEvidence = true;
            }).observe(document.getElementById('messages'), {subtree: true, childList: true, characterData: true});
        }"""
    )


def open_passage(page: Page, chip) -> tuple[str, int, str]:
    """Clicks a citation chip; returns the file name, page and excerpt the passage dialog shows, then closes it."""
    chip.click()
    dialog = page.locator("#passage-dialog")
    expect(dialog).to_be_visible()
    title = dialog.locator("#passage-title").inner_text()
    excerpt = dialog.locator("#passage-excerpt").inner_text()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    filename, page_number = re.fullmatch(r"(.+) — Page (\d+)(?: · recognised text)?", title).groups()
    return filename, int(page_number), excerpt
