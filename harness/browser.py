"""A page in Debian's chromium, driven by playwright (the test extra) through its `executable_path`: no browser
download. `make test` installs chromium as it does redis-server."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from harness.extras import needs

__all__ = ["browser_page"]


@contextmanager
def browser_page() -> Iterator[Any]:
    """A fresh page whose uncaught script errors and console errors are collected in `page.errors`."""
    sync_api = needs("test", "playwright.sync_api")
    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("no chromium: install Debian's chromium package (make test does)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.set_default_timeout(15_000)  # a wait for an element the page never draws fails sooner than 30 s
            page.errors = []
            page.on("pageerror", lambda error: page.errors.append(str(error)))
            # A console error but a refused fetch (a 401 the page answers by asking for a token)
            page.on(
                "console",
                lambda message: (
                    message.type == "error"
                    and not message.text.startswith("Failed to load resource")
                    and page.errors.append(message.text)
                ),
            )
            page.on("dialog", lambda dialog: (page.errors.append(f"dialog: {dialog.message}"), dialog.dismiss()))
            yield page
        finally:
            browser.close()
