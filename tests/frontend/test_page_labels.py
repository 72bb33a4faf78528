"""A cited slide is named as a slide in the web chat: its source chip, its citation chip and the passage dialog, in
Chromium against the real app. The model is scripted (tests/rag/scripted.py) so the answer cites on demand;
upload, reading the deck, retrieval, grounding and SSE are real."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.api.server import RunningServer, serve
from tests.api.support import upload
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
