"""A person's journeys through the web chat, in headless Chromium, against the real app and the bundled models."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from backend.api.settings import ApiSettings
from backend.config import Settings
from backend.ingest.loaders import load_document
from backend.llm.factory import build_llm
from tests.api.server import serve
from tests.api.support import upload as upload_files
from tests.api.support import upload_paths
from tests.frontend.conftest import PHONE
from tests.frontend.support import (
    PAID_QUESTION,
    PAPER,
    ask,
    drop,
    last_answer,
    new_chat,
    open_new_chat,
    open_passage,
    record_answer_texts,
    upload,
    upload_row,
    wait_for_answer,
    wait_until_uploaded,
)
from tests.rag.scripted import ScriptedLLM
from tests.support.waiting import wait_for


def squashed(text: str) -> str:
    return " ".join(text.split())


def test_upload_ask_follow_citations_and_find_the_conversation_after_a_reload(page: Page, web, pdfs, screenshot_dir):
    chat_id = open_new_chat(page, web.url)
    page.screenshot(path=screenshot_dir / "empty-chat.png")

    upload(page, pdfs / PAPER)
    row = upload_row(page, PAPER)
    expect(row).to_have_attribute("data-state", "indexing")
    page.screenshot(path=screenshot_dir / "uploading.png")
    wait_until_uploaded(page, PAPER)
    expect(row).to_contain_text(re.compile(r"Ready · \d+ chunks · 10 pages"))
    expect(page.locator(".document").filter(has_text=PAPER)).to_be_visible()
    expect(page.locator("#document-count")).to_have_text("1")

    record_answer_texts(page)
    ask(page, PAID_QUESTION)
    expect(page.locator(".message.user").last).to_have_text(PAID_QUESTION)
    expect(page.get_by_role("button", name="Stop generating")).to_be_visible()
    expect(page.locator(".message.assistant.streaming .answer-text")).not_to_be_empty(timeout=240_000)
    page.screenshot(path=screenshot_dir / "streaming.png")
    answer = wait_for_answer(page)
    assert len(page.evaluate("window.answerTexts")) >= 3, "the answer did not arrive piece by piece"
    assert "Searching your documents…" in page.evaluate("window.statusTexts")
    # Evidence first: the quoted passages showed before any of the written answer, with their citations.
    evidence = page.evaluate("window.evidenceTexts")
    assert evidence and "“" in evidence[0] and not page.evaluate("window.textBeforeEvidence")
    expect(answer.locator(".evidence")).to_be_hidden()  # the finished answer (or its sources) replaces it
    expect(page.get_by_role("button", name="Send question")).to_be_visible()
    page.screenshot(path=screenshot_dir / "answer-with-citations.png")
    answer_text = answer.locator(".answer-text").inner_text()
    # The mark says what the server says this answer is.
    stored = httpx.get(f"{web.url}/chat/history/{chat_id}").json()["messages"][-1]["metadata"]
    expected_mark = {"extractive": ".mark-extractive", "generated": ".mark-grounded" if stored["is_grounded"]
                     else ".mark-ungrounded"}[stored["answer_kind"]]
    expect(answer.locator(".mark")).to_have_count(1)
    expect(answer.locator(expected_mark)).to_be_visible()

    # Every citation opens a passage that really is on the page it names, in the uploaded file.
    pages = load_document(PAPER, (pdfs / PAPER).read_bytes()).pages
    chips = answer.locator(".cite")
    assert chips.count() >= 1
    for index in range(chips.count()):
        filename, page_number, excerpt = open_passage(page, chips.nth(index))
        assert filename == PAPER
        assert squashed(excerpt) in squashed(pages[page_number - 1].text)
    page.locator(".source-chip").first.click()
    page.screenshot(path=screenshot_dir / "citation-passage.png")
    page.keyboard.press("Escape")

    ask(page, "What is a good recipe for chocolate cake?")
    honest = wait_for_answer(page)
    expect(honest.locator(".mark-not-found")).to_have_text("Not in your documents")
    expect(honest.locator(".cite")).to_have_count(0)

    page.reload()
    expect(page.locator(".message.user")).to_have_text([PAID_QUESTION, "What is a good recipe for chocolate cake?"])
    reloaded = page.locator(".message.assistant")
    expect(reloaded).to_have_count(2)
    expect(reloaded.first.locator(".answer-text")).to_have_text(answer_text)
    assert open_passage(page, reloaded.first.locator(".cite").first)[0] == PAPER
    expect(reloaded.last.locator(".mark-not-found")).to_be_visible()

    page.set_viewport_size(PHONE)
    expect(page.locator("#sidebar")).not_to_be_in_viewport()  # slid away, not caught mid-slide
    page.locator(".message.assistant").first.scroll_into_view_if_needed()
    page.screenshot(path=screenshot_dir / "phone.png")


def test_clear_conversation_empties_it_for_good(page: Page, web):
    open_new_chat(page, web.url)
    ask(page, "hi")  # a greeting is answered without the model
    expect(last_answer(page).locator(".answer-text")).to_contain_text("Hello")
    page.get_by_role("button", name="Clear conversation").click()
    page.get_by_role("dialog").get_by_role("button", name="Clear").click()
    expect(page.locator(".message")).to_have_count(0)
    expect(page.locator(".welcome")).to_be_visible()
    page.reload()
    expect(page.locator(".welcome")).to_be_visible()
    expect(page.locator(".message")).to_have_count(0)


def test_unreadable_files_say_why_and_leave_the_chat_as_it_was(page: Page, web, pdfs, screenshot_dir):
    open_new_chat(page, web.url)
    upload(page, pdfs / "encrypted_aes256_userpw_foo.pdf", pdfs / "malformed_header_and_eof_only.pdf")
    encrypted = upload_row(page, "encrypted_aes256_userpw_foo.pdf")
    corrupt = upload_row(page, "malformed_header_and_eof_only.pdf")
    expect(encrypted).to_have_attribute("data-state", "failed", timeout=60_000)
    expect(corrupt).to_have_attribute("data-state", "failed", timeout=60_000)
    expect(encrypted).to_contain_text("is password-protected: enter its password")
    expect(corrupt).to_contain_text("is damaged and cannot be read")
    page.screenshot(path=screenshot_dir / "upload-errors.png")
    expect(page.locator(".document")).to_have_count(0)
    expect(page.locator("#document-count")).to_have_text("0")


def test_dropped_files_indexed_in_the_background_show_their_percent(page: Page, tmp_path, build_app_services, pdfs):
    # Every file counts as large here, so each is indexed by a background job that the page follows.
    with serve(build_app_services(tmp_path / "data"), ApiSettings(background_ingest_chars=0)) as server:
        chat_id = open_new_chat(page, server.url)
        drop(page, pdfs / PAPER, pdfs / "encrypted_userpw_openpassword.pdf")
        row = upload_row(page, PAPER)
        expect(row).to_contain_text(re.compile(r"Indexing… \d+%"))

        # Looking at another chat meanwhile neither loses the file's progress nor shows it in the other chat.
        new_chat(page)
        expect(page.locator(".upload")).to_have_count(0)
        page.locator(f'.chat-item[data-chat-id="{chat_id}"] .chat-select').click()
        expect(upload_row(page, PAPER)).to_be_visible()

        wait_until_uploaded(page, PAPER)
        expect(row).to_contain_text(re.compile(r"Ready · \d+ chunks · 10 pages"))
        expect(upload_row(page, "encrypted_userpw_openpassword.pdf")).to_contain_text("is password-protected")
        expect(page.locator(".document")).to_have_count(1)
        expect(page.locator(f'.chat-item[data-chat-id="{chat_id}"]')).to_have_count(1)

        page.get_by_role("button", name=f"Delete {PAPER}").click()
        page.get_by_role("dialog").get_by_role("button", name="Remove").click()
        expect(page.locator(".document")).to_have_count(0)
        expect(page.locator("#document-count")).to_have_text("0")
        assert httpx.get(f"{server.url}/chat/{chat_id}/documents").json()["documents"] == []


@pytest.mark.parametrize("away", ["unreachable", "behind a proxy"])
def test_a_file_indexing_while_the_server_is_away_waits_for_it(
    page: Page, tmp_path, build_app_services, pdfs, away
):
    with serve(build_app_services(tmp_path / "data"), ApiSettings(background_ingest_chars=0)) as server:
        chat_id = open_new_chat(page, server.url)
        # Stand-in for a server restarting: the job's state cannot be asked for (the job itself goes on), and a
        # proxy in front of it (deploy/nginx) answers 502 meanwhile.
        def restarting(route):
            if away == "unreachable":
                route.abort()
            else:
                route.fulfill(status=502, body="<html>Bad Gateway</html>")

        page.route(f"**/chat/{chat_id}/documents/*", restarting)
        upload(page, pdfs / PAPER)
        row = upload_row(page, PAPER)
        expect(row).to_contain_text("Axiom cannot be reached: waiting for it to come back…")
        expect(row).to_have_attribute("data-state", "indexing")

        page.unroute(f"**/chat/{chat_id}/documents/*")
        wait_until_uploaded(page, PAPER)
        expect(row).to_contain_text(re.compile(r"Ready · \d+ chunks · 10 pages"))


def test_a_file_indexing_in_the_background_can_be_stopped_and_deleting_its_chat_stops_it_too(
    page: Page, tmp_path, build_app_services, pdfs
):
    with serve(build_app_services(tmp_path / "data"), ApiSettings(background_ingest_chars=0)) as server:
        chat_id = open_new_chat(page, server.url)
        drop(page, pdfs / PAPER)
        expect(upload_row(page, PAPER)).to_contain_text(re.compile(r"Indexing… \d+%"))
        upload_row(page, PAPER).get_by_role("button", name=f"Stop indexing {PAPER}").click()
        page.get_by_role("dialog").get_by_role("button", name="Stop").click()
        expect(upload_row(page, PAPER)).to_contain_text("Cancelled: nothing of it was kept.")
        expect(page.locator(".document")).to_have_count(0)
        assert server.services.documents.list(chat_id) == []

        # Deleting a chat while a file indexes into it stops that file and removes the chat with everything in it.
        drop(page, pdfs / PAPER)
        expect(page.locator(".upload").last).to_contain_text(re.compile(r"Indexing… \d+%"))
        page.locator(f'.chat-item[data-chat-id="{chat_id}"]').get_by_role("button", name=re.compile("^Delete")).click()
        page.get_by_role("dialog").get_by_role("button", name="Delete").click()
        expect(page.locator(f'.chat-item[data-chat-id="{chat_id}"]')).to_have_count(0)
        assert httpx.get(f"{server.url}/chat/{chat_id}/documents").status_code == 404
        assert not server.services.vectors.has_collection(chat_id)


def test_an_answer_goes_on_while_another_chat_is_open_and_is_there_on_return(page: Page, web, pdfs):
    chat_id = open_new_chat(page, web.url)
    upload(page, pdfs / PAPER)
    wait_until_uploaded(page, PAPER)
    ask(page, PAID_QUESTION)
    expect(page.locator(".message.assistant.streaming")).to_be_visible()
    new_chat(page)
    expect(page.locator(".message")).to_have_count(0)
    expect(page.get_by_role("button", name="Send question")).to_be_visible()  # this chat is not busy

    page.locator(f'.chat-item[data-chat-id="{chat_id}"] .chat-select').click()
    expect(page.locator(".message.user")).to_have_text([PAID_QUESTION])
    finished = wait_for_answer(page)
    expect(finished).not_to_have_class(re.compile(r"\b(failed|stopped)\b"))
    page.reload()
    expect(page.locator(".message.assistant")).to_have_count(1)


def test_stop_ends_the_answer_and_nothing_of_it_is_kept(page: Page, tmp_path, build_app_services, pdfs):
    # Long answers, so the stream is still running when Stop is pressed.
    with serve(build_app_services(tmp_path / "data", answer_max_tokens=400)) as server:
        chat_id = open_new_chat(page, server.url)
        upload(page, pdfs / PAPER)
        wait_until_uploaded(page, PAPER)

        ask(page, PAID_QUESTION)
        streaming = page.locator(".message.assistant.streaming .answer-text")
        expect(streaming).not_to_be_empty(timeout=240_000)
        page.get_by_role("button", name="Stop generating").click()

        stopped = last_answer(page)
        expect(stopped).to_have_class(re.compile(r"\bstopped\b"))
        expect(stopped).to_contain_text("Stopped. Neither this question nor its unfinished answer is saved.")
        expect(page.get_by_role("button", name="Send question")).to_be_visible()
        shown = stopped.locator(".answer-text").inner_text()
        page.wait_for_timeout(1500)
        assert stopped.locator(".answer-text").inner_text() == shown, "text kept arriving after Stop"

        history = httpx.get(f"{server.url}/chat/history/{chat_id}")
        assert history.status_code == 404, "the stopped answer (or its question) was saved"

        # The model is free again: the same question is answered to its end.
        ask(page, PAID_QUESTION)
        expect(wait_for_answer(page)).not_to_have_class(re.compile(r"\b(failed|stopped)\b"))


def test_a_model_that_does_not_answer_shows_the_error_and_a_retry(page: Page, tmp_path, build_app_services, pdfs,
                                                               screenshot_dir):
    # A real bundled model allowed no time without progress: every question meets the 503 path.
    impatient = build_llm(Settings(llm_stall_timeout=0.001, llm_batch_tokens=512, llm_threads=1))
    with serve(build_app_services(tmp_path / "data", llm=impatient)) as server:
        chat_id = open_new_chat(page, server.url)
        with httpx.Client(base_url=server.url, timeout=120) as client:
            assert upload_paths(client, chat_id, pdfs / PAPER).status_code == 200
        page.reload()

        ask(page, PAID_QUESTION)
        failed = wait_for_answer(page)
        expect(failed).to_have_class(re.compile(r"\bfailed\b"))
        expect(failed.locator(".error-title")).to_have_text("The language model did not answer.")
        expect(failed.locator(".error-message")).to_contain_text("made no progress")
        page.screenshot(path=screenshot_dir / "error.png")

        with page.expect_response(lambda response: response.url.endswith(f"/chat/{chat_id}/stream")):
            failed.get_by_role("button", name="Retry").click()
        expect(wait_for_answer(page)).to_have_class(re.compile(r"\bfailed\b"))
        expect(page.locator(".message.user")).to_have_count(1)  # retried, not asked twice
        expect(page.locator(".message.assistant")).to_have_count(1)

        # The question was kept: after a reload it is there, marked as not answered, with a way to ask again.
        page.reload()
        expect(page.locator(".message.user")).to_have_count(1)  # the retry did not keep a second copy
        expect(page.locator(".message.user").last).to_contain_text(PAID_QUESTION)
        expect(page.locator(".mark-unanswered").last).to_contain_text("Not answered")
        expect(page.get_by_role("button", name="Ask again").last).to_be_visible()


def test_chats_can_be_created_renamed_and_deleted(page: Page, web):
    first = open_new_chat(page, web.url)
    chat_id = new_chat(page)
    page.go_back()  # Back returns to the chat opened before
    expect(page.locator(f'.chat-item[data-chat-id="{first}"] .chat-select')).to_have_attribute("aria-current", "page")
    page.go_forward()
    item = page.locator(f'.chat-item[data-chat-id="{chat_id}"]')
    item.get_by_role("button", name=re.compile("^Rename")).click()
    page.get_by_label(re.compile("^New name for")).fill("Tax forms 2026")
    page.keyboard.press("Enter")
    expect(item.locator(".chat-select")).to_have_text("Tax forms 2026")
    expect(page.locator("#chat-title")).to_have_text("Tax forms 2026")

    item.get_by_role("button", name=re.compile("^Rename")).click()
    page.get_by_label(re.compile("^New name for")).fill("never saved")
    page.keyboard.press("Escape")
    expect(item.locator(".chat-select")).to_have_text("Tax forms 2026")

    page.reload()
    expect(page.locator(f'.chat-item[data-chat-id="{chat_id}"] .chat-select')).to_have_text("Tax forms 2026")
    expect(page.locator(f'.chat-item[data-chat-id="{chat_id}"] .chat-select')).to_have_attribute("aria-current", "page")

    page.locator(f'.chat-item[data-chat-id="{chat_id}"]').get_by_role("button", name=re.compile("^Delete")).click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(page.locator(f'.chat-item[data-chat-id="{chat_id}"]')).to_have_count(0)
    page.reload()
    expect(page.locator(".chat-item").first).to_be_visible()
    expect(page.locator(f'.chat-item[data-chat-id="{chat_id}"]')).to_have_count(0)

    # Asking in an older chat brings it to the top, now and after a reload.
    page.locator(f'.chat-item[data-chat-id="{first}"] .chat-select').click()
    ask(page, "hi")
    expect(page.locator(".chat-item").first).to_have_attribute("data-chat-id", first)
    expect(last_answer(page).locator(".answer-text")).to_contain_text("Hello")
    page.reload()
    expect(page.locator(".chat-item").first).to_have_attribute("data-chat-id", first)
    assert httpx.get(f"{web.url}/chat/history/{chat_id}").status_code == 404


def test_deleting_a_chat_whose_answer_is_being_written_stops_the_answer(
    page: Page, tmp_path, build_app_services
):
    # The answer would take 50 s to write (its words never repeat: a loop would be cut short), and the server
    # refuses it only at its end: the tab must stop it.
    words = [f"limb{number}" for number in range(1000)]
    slow = ScriptedLLM(" ".join([*words, "[Source 1]."]), seconds_per_word=0.05)
    with serve(build_app_services(tmp_path / "data", llm=slow)) as server:
        kept = open_new_chat(page, server.url)
        doomed = new_chat(page)
        notes = b"Axolotls can regrow their limbs, their hearts and even parts of their brains.\n"
        with httpx.Client(base_url=server.url, timeout=120) as client:
            assert upload_files(client, doomed, ("axolotl.txt", notes)).status_code == 200
        ask(page, "What can axolotls regrow?")
        expect(page.locator(".message.assistant.streaming .answer-text")).not_to_be_empty()

        page.locator(".chat-item.current").get_by_role("button", name=re.compile("^Delete")).click()
        page.get_by_role("dialog").get_by_role("button", name="Delete").click()
        expect(page.locator(".chat-item.current")).to_have_attribute("data-chat-id", kept)
        wait_for(lambda: slow.closed_streams == 1, "the deleted chat's answer to stop")
        assert slow.words_streamed < 100  # stopped, not written to its end
        expect(page.get_by_role("button", name="Send question")).to_be_visible()


def test_a_title_being_edited_is_kept_when_the_chat_asked_in_takes_its_question_as_title(page: Page, web):
    other = open_new_chat(page, web.url)
    asked_in = new_chat(page)
    held = []  # the rename after the question, answered only once another title is being edited
    page.route(f"**/chats/{asked_in}",
               lambda route: held.append(route) if route.request.method == "PATCH" else route.continue_())
    renamed = []
    page.on("request", lambda request: request.method == "PATCH" and renamed.append(request.url))
    ask(page, "hi")
    while not held:
        page.wait_for_timeout(50)
    item = page.locator(f'.chat-item[data-chat-id="{other}"]')
    item.get_by_role("button", name=re.compile("^Rename")).click()
    title = page.get_by_label(re.compile("^New name for"))
    page.keyboard.type("Half")
    with page.expect_response(lambda response: response.request.method == "PATCH"):
        held[0].continue_()
    expect(page.locator("#chat-title")).to_have_text("hi")
    expect(title).to_be_focused()  # still there, not saved half-typed
    expect(title).to_have_value("Half")
    page.keyboard.type(" typed")
    page.keyboard.press("Enter")
    expect(item.locator(".chat-select")).to_have_text("Half typed")
    expect(page.locator(f'.chat-item[data-chat-id="{asked_in}"] .chat-select')).to_have_text("hi")
    assert [url.rsplit("/", 1)[1] for url in renamed] == [asked_in, other]
    expect(last_answer(page).locator(".answer-text")).to_contain_text("Hello")


def test_enter_sends_and_shift_enter_starts_a_new_line(page: Page, web):
    open_new_chat(page, web.url)
    box = page.get_by_label("Ask a question about this chat's documents")
    box.fill("first line")
    box.press("Shift+Enter")
    box.press_sequentially("second line")
    expect(box).to_have_value("first line\nsecond line")
    expect(page.locator(".message")).to_have_count(0)

    box.fill("hi")
    box.press("Enter")
    expect(page.locator(".message.user")).to_have_text(["hi"])
    expect(box).to_have_value("")
    expect(last_answer(page).locator(".answer-text")).to_contain_text("Hello")
    expect(box).to_be_focused()  # the next question can be typed at once; nothing took the focus away
    expect(box).to_have_accessible_description(re.compile("^Enter sends; Shift\\+Enter starts a new line."))


def test_on_a_touch_screen_enter_starts_a_new_line_and_send_sends(browser: Browser, web):
    # A phone's keyboard has no Shift+Enter to reach for: Enter sending there left no way to type a second line.
    context = browser.new_context(viewport=PHONE, has_touch=True, is_mobile=True)
    try:
        page = context.new_page()
        open_new_chat(page, web.url)
        box = page.get_by_label("Ask a question about this chat's documents")
        expect(box).to_have_accessible_description(
            re.compile("^Enter starts a new line; Ctrl\\+Enter or the Send button sends.")
        )
        box.tap()
        box.press_sequentially("first line")
        box.press("Enter")
        box.press_sequentially("second line")
        expect(box).to_have_value("first line\nsecond line")
        expect(page.locator(".message")).to_have_count(0)

        page.get_by_role("button", name="Send question").tap()
        expect(page.locator(".message.user")).to_have_text(["first line\nsecond line"])
        expect(box).to_have_value("")

        # A tablet with a keyboard is a touch screen too: Ctrl+Enter sends there (and on every other device).
        wait_for_answer(page)
        box.press_sequentially("sent by keys")
        box.press("Control+Enter")
        expect(page.locator(".message.user")).to_have_text(["first line\nsecond line", "sent by keys"])
        expect(box).to_have_value("")

        # Nothing to drag files with: the documents panel asks to add them, not to drop them.
        page.get_by_role("button", name=re.compile("^Documents")).tap()
        expect(page.locator("#dropzone p")).to_have_text(
            "Add PDF, Word, PowerPoint, Excel, CSV, web pages, EPUB, TXT or MD files, or images of text",
            use_inner_text=True,
        )
    finally:
        context.close()


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 800}, PHONE], ids=["desktop", "phone"])
def test_every_control_is_named_and_the_page_fits_the_screen(page: Page, web, viewport):
    page.set_viewport_size(viewport)
    open_new_chat(page, web.url)
    ask(page, "hi")
    expect(last_answer(page).locator(".answer-text")).to_contain_text("Hello")
    unnamed = page.evaluate(
        """() => [...document.querySelectorAll('button, textarea, input, [role=button]')]
            .filter((node) => {
                const name = node.getAttribute('aria-label') || node.textContent.trim()
                    || (node.labels && [...node.labels].map((l) => l.textContent.trim()).join(''));
                return !name;
            })
            .map((node) => node.outerHTML.slice(0, 80))"""
    )
    assert unnamed == []
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    expect(page.get_by_label("Ask a question about this chat's documents")).to_be_in_viewport()

    if viewport == PHONE:
        chats_button = page.get_by_role("button", name="Show chats")
        expect(page.locator("#sidebar")).not_to_be_in_viewport()
        chats_button.click()
        expect(chats_button).to_have_attribute("aria-expanded", "true")
        expect(page.locator("#sidebar")).to_be_in_viewport()
        page.keyboard.press("Escape")
        expect(page.locator("#sidebar")).not_to_be_in_viewport()
        page.get_by_role("button", name=re.compile("^Documents")).click()
        expect(page.locator("#documents-panel")).to_be_in_viewport()
        expect(page.get_by_text("Choose files…")).to_be_visible()
        expect(page.locator("#dropzone p")).to_have_text(  # a narrow window with a mouse can still drop files
            "Drop PDF, Word, PowerPoint, Excel, CSV, web pages, EPUB, TXT or MD files, or images of text, here",
            use_inner_text=True,
        )


def test_too_big_and_unsupported_files_are_refused_with_the_reason(page: Page, tmp_path, build_app_services, pdfs):
    # A 100 kB limit makes the 430 kB paper "too big" without sending 50 MB through the test.
    with serve(build_app_services(tmp_path / "data", max_upload_bytes=100_000)) as server:
        open_new_chat(page, server.url)
        picture = tmp_path / "scan.pdf"
        picture.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(2048))  # a PNG named .pdf
        upload(page, pdfs / PAPER, picture)
        too_big, unsupported = upload_row(page, PAPER), upload_row(page, "scan.pdf")
        expect(too_big).to_have_attribute("data-state", "failed", timeout=60_000)
        expect(too_big).to_contain_text("is larger than the limit")
        expect(unsupported).to_have_attribute("data-state", "failed", timeout=60_000)
        expect(unsupported).to_contain_text("its content is not a PDF")
        expect(page.locator(".document")).to_have_count(0)


def test_a_scanned_pdf_is_read_and_its_citation_says_the_text_was_recognised(page: Page, web, pdfs, screenshot_dir):
    scan = "scanned_linn_two-column_brochure.pdf"  # an image of a page: no text layer at all
    open_new_chat(page, web.url)
    upload(page, pdfs / scan)
    wait_until_uploaded(page, scan)
    expect(upload_row(page, scan)).to_contain_text(re.compile(r"Ready · \d+ chunks · 1 page"))

    ask(page, "How many notes does a disk hold?")  # "holds over 110,000 notes per disk", only in the scan
    answer = wait_for_answer(page)
    expect(answer.locator(".mark-not-found")).to_have_count(0)
    # The answer's citations (when the model wrote them) and its listed sources open the recognised passage.
    chips = answer.locator(".cite, .source-chip")
    assert chips.count() >= 1
    for index in range(chips.count()):
        chips.nth(index).click()
        dialog = page.locator("#passage-dialog")
        expect(dialog.locator("#passage-title")).to_have_text(f"{scan} — Page 1 · recognised text")
        if index == 0:
            page.screenshot(path=screenshot_dir / "recognised-text-passage.png")
        page.keyboard.press("Escape")
        expect(dialog).to_be_hidden()
