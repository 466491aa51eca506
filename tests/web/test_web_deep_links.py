"""Deep links set on a page already open, in a real browser: a link copied from another browser tab
(a zoomed and picked frame of the profile, the flat view's picked name, the timeline's window,
selected event and search, an explained kernel) and put into the address of an open page with
``location.hash = …`` (what pasting it into the same tab's address bar does) brings back its tab,
its zoom and its selection, whether that tab was never shown, shown before and hidden, or shown;
and applying it again after the state moved on brings it back again."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.browser import Watched, expect
from tests.helpers.cli import serving
from tests.helpers.web_inputs import WebInputs

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(web_inputs: WebInputs) -> Iterator[str]:
    """The example's profile, its trace and its explain report on one page: three tabs."""
    files = (web_inputs.profile, web_inputs.trace, web_inputs.explain)
    with serving(*(str(f) for f in files), cwd=web_inputs.folder) as url:
        yield url


@pytest.fixture
def other(watched: Watched) -> Iterator[Any]:
    """A second browser tab of the same browser, where the links are copied from; its errors fail
    the test as the first one's do."""
    page = watched.page.context.new_page()
    page.on("console", lambda m: watched.errors.append(f"other tab: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: watched.errors.append(f"other tab: {e}"))
    yield page
    page.close()


def _hash(url: str) -> str:
    return url[url.index("#") :]


def _set_hash(page: Any, link: str) -> None:
    """Put a copied link's hash into the open page's address, as pasting it into the address bar
    of the same tab does (a same-document navigation: no reload)."""
    page.evaluate("h => { window.__sameDocument = true; location.hash = h; }", _hash(link))


def _same_document(page: Any) -> None:
    assert page.evaluate("window.__sameDocument === true"), "the page was reloaded"


def _tab_shown(page: Any, view: str) -> None:
    expect(page.locator(f"button[data-view={view}]")).to_have_attribute("aria-selected", "true")
    expect(page.locator(f"#view-{view}")).to_be_visible()


def test_a_profile_link_set_on_an_open_page_restores_tab_zoom_and_selection(
    served: str, watched: Watched, other: Any
) -> None:
    # The link: in another browser tab, zoom into ROOT's first child, pick the kernel below it.
    other.goto(served + "#profile")
    canvas = other.locator("canvas.flame-canvas[data-drawn]")
    canvas.wait_for()
    canvas.click(position={"x": 5, "y": 27})  # depth 1, the leftmost (largest) child of ROOT
    zoom_name = canvas.get_attribute("data-zoom")
    kernel = {"vector_add": "add_kernel", "matmul": "matmul_kernel"}[zoom_name or ""]
    zoom = canvas.get_attribute("data-zoom-node")
    row = other.locator(f".ptable tr[data-name={kernel}]")
    sel = row.get_attribute("data-node")
    row.locator(".nm").click()
    expect(canvas).to_have_attribute("data-selected", sel or "")
    expect(canvas).to_have_attribute("data-zoom-node", zoom or "")
    expect(other).to_have_url(re.compile(rf"#profile\?zoom={zoom}&sel={sel}$"))
    link = other.url

    page = watched.page
    flame = page.locator("canvas.flame-canvas")

    def restored() -> None:
        _tab_shown(page, "profile")
        expect(flame).to_have_attribute("data-zoom-node", zoom or "")
        expect(flame).to_have_attribute("data-zoom", zoom_name or "")
        expect(flame).to_have_attribute("data-selected", sel or "")
        expect(page.locator(".ptable tr.sel")).to_have_attribute("data-node", sel or "")
        expect(page.locator(".flame-details")).to_have_attribute("data-node", sel or "")
        expect(page).to_have_url(re.compile(re.escape(_hash(link)) + "$"))
        _same_document(page)

    # The profile shown once, then another tab: the link brings the profile back as it names it.
    page.goto(served + "#profile")
    flame.wait_for()
    expect(flame).to_have_attribute("data-zoom-node", "0")
    page.click("button[data-view=timeline]")
    _tab_shown(page, "timeline")
    _set_hash(page, link)
    restored()
    # Moved on while shown (zoom reset, another frame picked): the same link again.
    page.click("button[name=reset-zoom]")
    expect(flame).to_have_attribute("data-zoom-node", "0")
    other_kernel = "matmul_kernel" if kernel == "add_kernel" else "add_kernel"
    page.locator(f".ptable tr[data-name={other_kernel}] .nm").click()
    expect(page).not_to_have_url(re.compile(re.escape(_hash(link)) + "$"))
    _set_hash(page, link)
    restored()

    # The flat view's picked name, copied from the other tab, then the flame graph's link again.
    other.check("input[name=flat]")
    other.click(f".flat-table tr[data-name={other_kernel}]")
    expect(other).to_have_url(re.compile(rf"#profile\?flat=1&frame={other_kernel}&zoom={zoom}&sel={sel}$"))
    flat_link = other.url
    _set_hash(page, flat_link)
    expect(page.locator(".profile-flat")).to_have_attribute("data-selected", other_kernel)
    expect(page.locator("input[name=flat]")).to_be_checked()
    expect(flame).to_be_hidden()
    _set_hash(page, link)
    expect(page.locator("input[name=flat]")).not_to_be_checked()
    expect(flame).to_be_visible()
    restored()


def test_a_timeline_link_set_on_an_open_page_restores_window_selection_and_search(
    served: str, watched: Watched, other: Any
) -> None:
    # The link: in another browser tab, find matmul_kernel, select its first event, zoom in.
    other.goto(served + "#timeline")
    tl = other.locator("canvas.tl-canvas[data-drawn]")
    tl.wait_for()
    other.fill("input[name=search]", "matmul_kernel")
    other.press("input[name=search]", "Enter")
    expect(other.locator(".tl-details")).to_have_attribute("data-event", "matmul_kernel")
    other.click("button[name=zoom-in]")
    other.click("button[name=zoom-in]")
    expect(other).to_have_url(re.compile(r"#timeline\?t0=-?\d+&t1=\d+&sel=\d+&q=matmul_kernel$"))
    link = other.url
    found = re.search(r"t0=(-?\d+)&t1=(\d+)&sel=(\d+)", link)
    assert found, link
    t0, t1, sel = (int(x) for x in found.groups())

    page = watched.page
    canvas = page.locator("canvas.tl-canvas")

    def restored() -> None:
        _tab_shown(page, "timeline")
        expect(canvas).to_have_attribute("data-selected", str(sel))
        expect(page.locator(".tl-details")).to_have_attribute("data-event", "matmul_kernel")
        expect(page.locator("input[name=search]")).to_have_value("matmul_kernel")
        expect(canvas).to_have_attribute("data-matches", "2")
        # The window is drawn a frame later: wait for it (to the ns the address rounds to).
        drawn = (
            "([t0, t1]) => { const c = document.querySelector('canvas.tl-canvas');"
            " return Math.abs(c.dataset.startNs - t0) <= 1 && Math.abs(c.dataset.endNs - t1) <= 1; }"
        )
        try:
            page.wait_for_function(drawn, arg=[t0, t1], timeout=5000)
        except Exception as error:
            shown = (canvas.get_attribute("data-start-ns"), canvas.get_attribute("data-end-ns"))
            raise AssertionError(f"window {shown} drawn, the link names {(t0, t1)}") from error
        _same_document(page)

    # The timeline shown at its defaults, then the profile tab: the link brings the timeline back.
    page.goto(served + "#timeline")
    canvas.wait_for()
    whole = (canvas.get_attribute("data-start-ns"), canvas.get_attribute("data-end-ns"))
    assert whole != (str(t0), str(t1)), whole  # the link names another window than the default
    page.click("button[data-view=profile]")
    _tab_shown(page, "profile")
    _set_hash(page, link)
    restored()
    # Moved on while shown (the whole trace, the next match): the same link again.
    page.click("button[name=reset]")
    page.press("input[name=search]", "Enter")
    expect(canvas).not_to_have_attribute("data-selected", str(sel))
    expect(page).not_to_have_url(re.compile(re.escape(_hash(link)) + "$"))
    _set_hash(page, link)
    restored()


def test_an_explain_link_set_on_an_open_page_shows_its_kernel(
    served: str, watched: Watched, other: Any
) -> None:
    other.goto(served + "#explain")
    buttons = other.locator("button.exp-kbtn")
    expect(buttons.first).to_have_attribute("aria-pressed", "true")
    second = buttons.nth(1)
    kernel = second.get_attribute("data-kernel")
    second.click()
    expect(other).to_have_url(re.compile(rf"#explain\?kernel={kernel}"))
    link = other.url

    page = watched.page
    page.goto(served + "#explain")
    first = page.locator("button.exp-kbtn").first
    expect(first).to_have_attribute("aria-pressed", "true")
    page.click("button[data-view=profile]")
    _set_hash(page, link)
    _tab_shown(page, "explain")
    expect(page.locator(f"button.exp-kbtn[data-kernel={kernel}]")).to_have_attribute("aria-pressed", "true")
    expect(first).to_have_attribute("aria-pressed", "false")
    _same_document(page)
