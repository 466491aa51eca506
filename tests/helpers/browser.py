"""Playwright driving Debian's Chromium for the web UI's tests: one browser per session, a page
per test that fails the test on any console error or page error and keeps a screenshot (in the
test's own temporary folder: pytest keeps the last runs' under its base temporary folder).

Without Playwright or Chromium the browser tests are skipped, unless DEUTERON_REQUIRE_BROWSER=1
(CI sets it), where their absence fails them."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips (or, in CI, fails) these tests
    expect = None  # type: ignore[assignment]

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str | None:
    for candidate in (os.environ.get("DEUTERON_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and os.path.isfile(candidate):
            return candidate
    return None


def _missing(why: str) -> None:
    if os.environ.get("DEUTERON_REQUIRE_BROWSER") == "1":
        pytest.fail(f"browser tests required but {why}")
    pytest.skip(why)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("Playwright is not installed (pip install playwright)")
    path = chromium_path()
    if path is None:
        _missing("Chromium is not installed (apt-get install chromium)")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@dataclass
class Watched:
    """A page, with what it said and asked for; its screenshots go to ``folder``."""

    page: Any
    folder: Path
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def shot(self, name: str) -> Path:
        path = self.folder / f"{name}.png"
        self.page.screenshot(path=str(path))
        return path


@pytest.fixture
def watched(browser: Any, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    w = Watched(page, tmp_path)
    page.on(
        "console", lambda m: w.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None
    )
    page.on("pageerror", lambda e: w.errors.append(f"page error: {e}"))
    page.on("request", lambda r: w.requests.append(r.url))
    yield w
    try:
        w.shot(request.node.name.replace("/", "_"))
    finally:
        context.close()
    assert not w.errors, w.errors
