"""Playwright (sync API) driving Debian's Chromium against the live server."""

import os
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
# Flags for a headless root sandbox with no network beyond loopback: without
# the background-networking ones Chromium keeps dialling out and failing.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(
    os.environ.get("MARQUEE_ARTIFACTS_DIR") or settings.BASE_DIR / "var/test-artifacts"
)


@pytest.fixture(scope="package")
def browser():
    # Playwright's sync API runs an event loop in this thread; Django refuses
    # ORM calls from a thread with a running loop unless told it is safe. It
    # is, here: the loop only drives the browser. Restored when the package
    # of browser tests is done.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
            )
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def new_page(browser, live_server, transactional_db):
    """Open pages in fresh browser contexts (separate cookies: separate shoppers)."""
    contexts = []

    def open_page():
        context = browser.new_context(base_url=live_server.url)
        context.set_default_timeout(10_000)
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture
def page(new_page):
    return new_page()


@pytest.fixture
def screenshot(request):
    """Save a full-page screenshot under var/test-artifacts/screenshots/."""

    def take(page, name: str) -> Path:
        folder = ARTIFACTS / "screenshots"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{request.node.name}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take
