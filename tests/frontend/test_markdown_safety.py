"""Answers and quoted evidence render as formatted text, and no HTML from a model or a document reaches
the page as markup: in Chromium, against the real app. The model is scripted (tests/rag/scripted.py): the
bundled 135M model cannot write hostile markdown on demand; everything else (upload, retrieval, grounding,
SSE) is real."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.api.server import RunningServer, serve
from tests.api.support import upload
from tests.frontend.support import ask, open_new_chat, record_answer_texts, wait_for_answer
from tests.rag.scripted import ScriptedLLM

DOCUMENT = (
    "The Quorra bridge\n\n"
    "Ada Finchley built the granite bridge over the river Quorra in 1931. "
    "The bridge has seven arches <img src=/hostile-document.png onerror=alert('document')> "
    "and a clock tower. "
    "Its plans are kept at [the city archive](javascript:alert('document-link')) in Lisbon. "
    "<script>alert('document-script')</script>\n"
)
QUESTION = "Who built the granite bridge over the river Quorra, and what does it have?"
# A "- " list whose items copy the document (to be grounded), with its markup and a link of its own.
ANSWER = (
    "- Ada Finchley built the granite bridge over the river Quorra in **1931** [Source 1].\n"
    "- The bridge has seven arches <img src=/hostile-answer.png onerror=alert('answer')> and a clock tower "
    "[Source 1].\n"
    "- Its plans are kept at [the city archive](javascript:alert('answer-link')) in Lisbon [Source 1]."
)

# What renderMarkdown is asked to render in the page: the hostile inputs of markdown.test.js, now through
# DOMPurify and into a real DOM.
HOSTILE = [
    "<img src=/hostile-1.png onerror=alert(1)>",
    "<script>alert(2)</script>",
    "[x](javascript:alert(3))",
    "[x](jav&#x61;script:alert(4))",
    "<a href=javascript:alert(5)>x</a>",
    "<svg onload=alert(6)></svg>",
    "<iframe src=javascript:alert(7)></iframe>",
    "![pic](/hostile-8.png)",
    "<javascript:alert(9)>",
    "<div style=background:url(/hostile-10.png)>styled</div>",
    "`<img src=/hostile-11.png onerror=alert(11)>`",
    "<details open ontoggle=alert(12)>",
]
# What no rendered answer may contain: elements that load or run something, handlers, links to other schemes.
UNSAFE = """(root) => [...root.querySelectorAll('*')].filter((node) =>
    ['IMG', 'SCRIPT', 'IFRAME', 'SVG', 'OBJECT', 'EMBED', 'STYLE', 'DETAILS', 'INPUT', 'FORM'].includes(
        node.tagName.toUpperCase())
    || [...node.attributes].some((a) => a.name.startsWith('on') || a.name === 'style')
    || (node.tagName === 'A' && !/^(https?|mailto):/i.test(node.getAttribute('href') || ''))
).map((node) => node.outerHTML)"""


@pytest.fixture(scope="module")
def server(build_app_services, tmp_path_factory) -> Iterator[RunningServer]:
    llm = ScriptedLLM(ANSWER, seconds_per_word=0.02)  # slow enough that the answer is seen streaming
    with serve(build_app_services(tmp_path_factory.mktemp("markdown"), llm=llm)) as running:
        yield running


@pytest.fixture
def watched(page: Page) -> dict[str, list]:
    """Dialogs (an alert that fired), requests for the hostile images and anything the page's Content Security
    Policy blocked (the app itself must need nothing it forbids), recorded from the start."""
    seen: dict[str, list] = {"dialogs": [], "requests": [], "blocked": []}

    def on_dialog(dialog) -> None:
        seen["dialogs"].append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("request", lambda request: "hostile" in request.url and seen["requests"].append(request.url))
    page.on("console", lambda message: "Content Security Policy" in message.text
            and seen["blocked"].append(message.text))
    return seen


def watch_for_unsafe_nodes(page: Page) -> None:
    """From now on, any unsafe element ever added to the conversation, even for one frame while the answer
    streams, is kept in window.unsafeNodes."""
    page.evaluate(
        f"""() => {{
            const unsafe = {UNSAFE};
            window.unsafeNodes = [];
            new MutationObserver((records) => {{
                for (const record of records) for (const node of record.addedNodes) {{
                    if (node.nodeType !== Node.ELEMENT_NODE) continue;
                    const box = document.createElement('div');
                    box.append(node.cloneNode(true));
                    window.unsafeNodes.push(...unsafe(box));
                }}
            }}).observe(document.getElementById('messages'), {{subtree: true, childList: true}});
        }}"""
    )


def test_render_markdown_formats_text_and_never_makes_markup_of_it(page: Page, server, watched):
    page.goto(server.url)
    rendered = page.evaluate(
        f"""async (hostile) => {{
            const {{ renderMarkdown }} = await import('/assets/js/markdown.js');
            const chip = (n) => Object.assign(
                document.createElement('button'), {{className: 'cite', textContent: n}});
            const render = (text) => {{
                const box = document.createElement('div');
                box.append(renderMarkdown(text, chip));
                document.body.append(box);  // attached, so anything that could load or run would
                return box;
            }};
            const unsafe = {UNSAFE};
            const list = render(
                '- one **bold** [Source 1]\\n- two `code` *em* [Source 2]\\n\\nSee [Source 3].');
            const link = render('[the site](https://example.org) and [Source 4](https://example.org)');
            return {{
                hostile: hostile.map((text) => {{
                    const box = render(text);
                    return {{text: box.textContent.trim(), unsafe: unsafe(box)}};
                }}),
                list: list.innerHTML,
                chipsInItems: [...list.querySelectorAll('li > button.cite')].map((chip) => chip.textContent),
                link: [...link.querySelectorAll('a')].map((a) => [a.href, a.target, a.rel, a.textContent]),
                linkChips: [...link.querySelectorAll('button.cite')].map((chip) => chip.textContent),
            }};
        }}""",
        HOSTILE,
    )
    for text, result in zip(HOSTILE, rendered["hostile"], strict=True):
        assert result["unsafe"] == [], text
    shown = {text: result["text"] for text, result in zip(HOSTILE, rendered["hostile"], strict=True)}
    assert shown["<img src=/hostile-1.png onerror=alert(1)>"] == "<img src=/hostile-1.png onerror=alert(1)>"
    assert shown["<script>alert(2)</script>"] == "<script>alert(2)</script>"
    assert shown["[x](javascript:alert(3))"] == "x"
    assert shown["![pic](/hostile-8.png)"] == "pic"
    assert "<li>one <strong>bold</strong> <button" in rendered["list"]
    assert "<code>code</code> <em>em</em>" in rendered["list"]
    assert rendered["chipsInItems"] == ["1", "2"]
    assert rendered["link"][0] == ["https://example.org/", "_blank", "noopener noreferrer", "the site"]
    # A citation is never made a link: "[Source 4](url)" is the chip, then the address as a link of its own.
    assert rendered["linkChips"] == ["4"]
    assert [text for *_, text in rendered["link"]] == ["the site", "https://example.org"]
    page.wait_for_timeout(300)  # time for an image request or an onerror, were there any
    assert watched == {"dialogs": [], "requests": [], "blocked": []}


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_hostile_document_and_answer_show_as_text_in_a_formatted_list(
    page: Page, server, watched, screenshot_dir, scheme
):
    page.emulate_media(color_scheme=scheme)
    chat_id = open_new_chat(page, server.url)
    with httpx.Client(base_url=server.url, timeout=120) as client:
        assert upload(client, chat_id, ("quorra.txt", DOCUMENT.encode())).status_code == 200
    page.reload()
    watch_for_unsafe_nodes(page)
    record_answer_texts(page)

    ask(page, QUESTION)
    answer = wait_for_answer(page)
    page.screenshot(path=screenshot_dir / f"markdown-answer-{scheme}.png")

    # The document's quoted evidence showed while the model wrote, its markup as text.
    evidence = page.evaluate("window.evidenceTexts")
    document_markup = "<img src=/hostile-document.png onerror=alert('document')>"
    assert any(document_markup in text for text in evidence), evidence
    streamed = page.evaluate("window.answerTexts")
    assert len(streamed) >= 3, "the answer did not render as it streamed"

    # The model's own markup showed as text while it streamed (whether its answer was then kept or replaced).
    assert any("<img src=/hostile-answer.png onerror=alert('answer')>" in text for text in streamed), streamed

    # The answer, the model's list or the document's quotes (an extractive answer), is a list with a citation
    # in each item, and no raw "- " markers; the markup of the document or of the model in it is text.
    items = answer.locator(".answer-text ul > li")
    expect(items.first).to_be_visible()
    assert items.count() >= 2
    for index in range(items.count()):
        expect(items.nth(index).locator(".cite")).to_have_count(1)
    shown = answer.locator(".answer-text").inner_text()
    assert not re.search(r"^\s*- ", shown, re.MULTILINE), shown
    markup = r"<img src=/hostile-(document|answer)\.png onerror=alert\('(document|answer)'\)>"
    assert re.search(markup, shown), shown

    assert page.evaluate("window.unsafeNodes") == []
    assert page.evaluate(f"({UNSAFE})(document.getElementById('messages'))") == []
    page.wait_for_timeout(300)
    assert watched == {"dialogs": [], "requests": [], "blocked": []}

    # Read back from history, it renders the same.
    item_count = items.count()
    page.reload()
    expect(page.locator(".message.assistant .answer-text ul > li")).to_have_count(item_count)
    assert page.evaluate(f"({UNSAFE})(document.getElementById('messages'))") == []
