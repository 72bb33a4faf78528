"""What a person trips over the first time they use the web chat: found by using it, kept fixed here."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.frontend.support import (
    open_new_chat,
    wait_for_answer,
)

PAPER = "academic_2col_squad_rajpurkar2016.pdf"
PAID_QUESTION = "How much were the crowdworkers paid per hour?"


def test_double_clicking_send_asks_once_and_does_not_stop_the_answer(page: Page, web):
    # Stop takes Send's place as soon as the question is sent, so a double-click's second click lands on it.
    open_new_chat(page, web.url)
    page.get_by_label("Ask a question about this chat's documents").fill("hi")
    page.get_by_role("button", name="Send question").dblclick()
    answer = wait_for_answer(page)
    expect(answer).not_to_have_class(re.compile(r"\bstopped\b"))
    expect(answer.locator(".answer-text")).to_contain_text("Hello")
    expect(page.locator(".message.user")).to_have_count(1)
