"""The web chat while the vector store is down: a real `chroma run` server is stopped while a file is indexed in
the background, and started again (tests/api/test_vector_store_down.py covers the same outage over HTTP)."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from backend.api.settings import ApiSettings
from tests.api.server import serve
from tests.frontend.support import open_new_chat, upload, upload_row, wait_until_uploaded
from tests.support.chroma_server import start_chroma_server

NOTES = "axolotl.txt"
# Long enough to see the row count down, short enough to keep the test quick once Chroma is back.
RETRY_SECONDS = 10.0
WAITING = re.compile(r"The vector store cannot be reached — trying again (in \d+ s|now)")


def test_a_file_waiting_for_the_vector_store_says_so_and_is_indexed_once_it_is_back(
    page: Page, tmp_path, build_app_services, screenshot_dir
):
    """The upload row and the chat's listing say the vector store cannot be reached and when the job tries again,
    with the last try's error as their tooltip; once Chroma is back the job is taken again and the file is ready."""
    notes = tmp_path / NOTES
    notes.write_text("The axolotl is a salamander that keeps its larval gills for its whole life.")
    (tmp_path / "chroma").mkdir()
    chroma = start_chroma_server(tmp_path / "chroma")
    try:
        services = build_app_services(
            tmp_path / "axiom", chroma_host=chroma.host, chroma_port=chroma.port, chroma_timeout_seconds=2.0
        )
        settings = ApiSettings(background_ingest_chars=0, ingest_retry_seconds=RETRY_SECONDS)
        with serve(services, settings) as server:
            chat_id = open_new_chat(page, server.url)
            row = upload_row(page, NOTES)
            status = row.locator(".upload-status")
            # The chat open in a second tab lists the job it did not start.
            other_tab = page.context.new_page()
            with chroma.down():
                upload(page, notes)
                expect(status).to_have_text(WAITING, timeout=60_000)
                expect(row).to_have_attribute("data-state", "retrying")
                expect(status).to_have_attribute("title", re.compile("vector store", re.IGNORECASE))
                page.screenshot(path=screenshot_dir / "upload-waiting-for-vector-store.png")

                other_tab.goto(f"{server.url}/#chat={chat_id}")
                listed = other_tab.locator(".document.indexing").filter(has_text=NOTES)
                expect(listed.locator(".document-meta")).to_have_text(WAITING)
                expect(listed).to_have_attribute("data-state", "retrying")
                expect(listed.locator(".document-meta")).to_have_attribute(
                    "title", re.compile("vector store", re.IGNORECASE)
                )

            wait_until_uploaded(page, NOTES)
            expect(row).to_contain_text(re.compile(r"Ready · 1 chunk · 1 page"))
            expect(status).not_to_have_attribute("title", re.compile("."))
            expect(other_tab.locator(".document").filter(has_text=NOTES)).to_have_count(1)
            expect(other_tab.locator(".document.indexing")).to_have_count(0)
    finally:
        chroma.stop()
