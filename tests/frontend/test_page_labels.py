"""A cited slide is named as a slide in the web chat: its source chip, its citation chip and the passage dialog, in
Chromium against the real app; on a phone a chip cuts a long file name short, never the page. The model is scripted (tests/rag/scripted.py) so the answer cites on demand;
upload, reading the deck, retrieval, grounding and SSE are real."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.api.server import RunningServer, serve
from tests.api.support import upload
from tests.frontend.conftest import PHONE
from tests.frontend.support import ask, open_new_chat, wait_for_answer
from tests.rag.scripted import ScriptedLLM
from tests.support import documents

QUESTION = "How many axolotls were counted in the survey?"
ANSWER = "The survey counts list Axolotl | 1,204 [Source 1]."


@pytest.fixture(scope="module")
def server(build_app_services, tmp_path_factory) -> Iterator[RunningServer]:
    with serve(build_app_services(tmp_path_factory.mktemp("labels"), llm=ScriptedLLM(ANSWER))) as running:
        yield running


def test_a_cited_slide_is_named_slide_2_in_its_chips_and_passage(page: Page, server) -> None:
    chat_id = open_new_chat(page, server.url)
    with httpx.Client(base_url=server.url, timeout=120) as client:
        assert upload(client, chat_id, ("deck.pptx", documents.deck())).status_code == 200
    page.reload()

    ask(page, QUESTION)
    answer = wait_for_answer(page)

    # Which slide ranks first is retrieval's business; the survey's slide is among the sources, named as a slide.
    chip = answer.locator(".source-chip").filter(has_text="Slide 2")
    expect(chip).to_have_text(re.compile(r"^\d+ · deck\.pptx · Slide 2$"))
    cited = answer.locator(".answer-text .cite").first
    expect(cited).to_have_attribute("title", re.compile(r"^deck\.pptx, Slide \d$"))
    chip.click()
    expect(page.locator("#passage-title")).to_have_text("deck.pptx — Slide 2")
    page.keyboard.press("Escape")

    page.reload()  # read back from the history, the same
    expect(page.locator(".message.assistant .source-chip").filter(has_text="Slide 2")).to_have_count(1)


def test_on_a_phone_a_long_file_name_is_cut_short_in_its_chip_but_never_the_page(page: Page, server) -> None:
    page.set_viewport_size(PHONE)
    chat_id = open_new_chat(page, server.url)
    name = "axolotl-survey-counts-from-the-regional-wetlands-census-final-revised-2026.txt"
    with httpx.Client(base_url=server.url, timeout=120) as client:
        notes = b"The survey counts list Axolotl | 1,204 in the northern wetlands this spring.\n"
        assert upload(client, chat_id, (name, notes)).status_code == 200
    page.reload()

    ask(page, QUESTION)
    chip = wait_for_answer(page).locator(".source-chip").first
    expect(chip).to_have_text(f"1 · {name} · Page 1")
    # The page's words end inside the chip (what overflows it is cut off), and the chip inside the screen.
    label_end, chip_end, screen = chip.evaluate(
        """(chip) => {
            const walker = document.createTreeWalker(chip, NodeFilter.SHOW_TEXT);
            let node;
            while ((node = walker.nextNode()) && !node.data.endsWith("Page 1"));
            const range = document.createRange();
            range.setStart(node, node.data.length - "Page 1".length);
            range.setEnd(node, node.data.length);
            const padding = parseFloat(getComputedStyle(chip).paddingRight);
            return [range.getBoundingClientRect().right, chip.getBoundingClientRect().right - padding,
                    window.innerWidth];
        }"""
    )
    assert label_end <= chip_end + 0.5 and chip_end <= screen


def test_on_a_phone_a_passage_with_a_long_unbroken_word_wraps_inside_its_dialog(page: Page, server) -> None:
    page.set_viewport_size(PHONE)
    chat_id = open_new_chat(page, server.url)
    address = "https://wetlands.example.org/" + "census-2026/" * 12  # one word, several screens wide
    with httpx.Client(base_url=server.url, timeout=120) as client:
        notes = f"The survey counts list Axolotl | 1,204 in the northern wetlands, as {address} reports.\n"
        assert upload(client, chat_id, ("notes.txt", notes.encode())).status_code == 200
    page.reload()

    ask(page, QUESTION)
    wait_for_answer(page).locator(".source-chip").first.click()
    excerpt = page.locator("#passage-excerpt")
    expect(excerpt).to_contain_text("census-2026/census-2026/")
    # All of it is read by scrolling down, as any long passage is: none of it is hidden off to the side.
    scroll_width, client_width = excerpt.evaluate("(node) => [node.scrollWidth, node.clientWidth]")
    assert scroll_width <= client_width
