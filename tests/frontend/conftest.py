"""The web chat in a real browser: Debian's Chromium driven by Playwright, against the real app on a real socket.

The browser is the one the project's setup installs (`make setup` puts Debian's chromium at /usr/bin/chromium);
Playwright never downloads one. Screenshots of the main states go to $AXIOM_SCREENSHOT_DIR (default
build/screenshots, git-ignored); the best are copied by hand into docs/screenshots/.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.api.server import RunningServer, serve

CHROMIUM = Path(os.environ.get("AXIOM_CHROMIUM", "/usr/bin/chromium"))
# As root and without network: no sandbox, and none of Chromium's calls home (this machine refuses them, many at
# a time, which slows every start).
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 375, "height": 740}


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.is_file():
        pytest.fail(f"no Chromium at {CHROMIUM}: run `make setup` (installs Debian's chromium) or set AXIOM_CHROMIUM")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh browser context per test (no shared storage), failing the test on any script error."""
    context = browser.new_context(viewport=DESKTOP)
    opened = context.new_page()
    script_errors: list[str] = []
    opened.on("pageerror", lambda error: script_errors.append(str(error)))
    yield opened
    context.close()
    assert not script_errors, f"the page raised: {script_errors}"


@pytest.fixture(scope="session")
def screenshot_dir() -> Path:
    default = Path(__file__).resolve().parents[2] / "build" / "screenshots"
    path = Path(os.environ.get("AXIOM_SCREENSHOT_DIR", default))
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def web(tmp_path_factory, build_app_services) -> Iterator[RunningServer]:
    """The app, with the bundled models, on a fresh data directory for the module."""
    with serve(build_app_services(tmp_path_factory.mktemp("web"))) as server:
        yield server
