"""Small things in the web chat that looked careless: found by using it, kept fixed here."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.frontend.support import ask, open_new_chat


def test_a_title_taken_from_a_long_first_question_ends_at_a_word_with_an_ellipsis(page: Page, web):
    open_new_chat(page, web.url)
    # Only the title is looked at: the answer is not asked of the model (the stream is refused).
    page.route("**/chat/*/stream", lambda route: route.abort())
    ask(page, "What did the committee decide about the proposed budget for the new library building?")
    title = "What did the committee decide about the proposed budget for…"
    expect(page.locator("#chat-title")).to_have_text(title)
    expect(page.locator(".chat-item.current .chat-select")).to_have_text(title)
