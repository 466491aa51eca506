"""The timeline's search, launch-arrow toggle, event context and deep links, in a real browser on a
real H100 trace (tests/fixtures/web): a search counts and steps through the matching events in time
order and selects each, a clicked event shows its call stack and args, the arrows turn off, and
the window, selection, search and toggle survive a reload from the address alone."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from deuteron.formats import chrome_trace
from tests.helpers.browser import Watched, expect
from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO

pytestmark = pytest.mark.slow

TRACE = REPO / "tests" / "fixtures" / "web" / "h100_launch_bound.chrome_trace"


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("search")
    out = folder / "gpu.html"
    assert run_cli("serve", "--html", str(out), str(TRACE), cwd=folder).returncode == 0
    return out


def _matches(text: str) -> list[int]:
    """Event ids (start order, as the page numbers them) whose recorded name holds `text`."""
    c = chrome_trace.read_columns(TRACE)
    return [i for i, k in enumerate(c.name.tolist()) if text.lower() in c.names[k].lower()]


def _start(i: int) -> float:
    """Event i's start, relative to the trace's first (the page's time axis)."""
    c = chrome_trace.read_columns(TRACE)
    return float(c.start[i] - c.start.min())


def _shows(page: Any, t: float) -> None:
    """Wait until the drawn window holds time t (a frame is drawn on the next animation frame)."""
    page.wait_for_function(
        "t => { const d = document.querySelector('canvas.tl-canvas').dataset;"
        " return +d.startNs <= t && t <= +d.endNs; }",
        arg=t,
    )


def test_a_search_counts_steps_through_and_selects_the_matches(page_file: Path, watched: Watched) -> None:
    page = watched.page
    page.goto(page_file.as_uri() + "#timeline")
    canvas = page.locator("canvas.tl-canvas")
    expect(canvas).to_have_attribute("data-events", "210")
    want = _matches("add_kernel")
    assert 1 < len(want) < 210
    for _ in range(4):  # a window of 1/16 of the trace: each match moves it
        page.click("button[name=zoom-in]")
    page.click("button[name=zoom-out]")  # ... and back out by one: 1/8
    page.fill("input[name=search]", "ADD_kernel")
    found = page.locator(".tl-found")
    expect(found).to_have_text(f"{len(want)} of 210 events match")
    expect(canvas).to_have_attribute("data-matches", str(len(want)))
    page.press("input[name=search]", "Enter")
    expect(canvas).to_have_attribute("data-selected", str(want[0]))
    expect(page.locator(".tl-details")).to_have_attribute("data-event", "add_kernel")
    assert f"1 of {len(want)} shown" in found.inner_text()
    _shows(page, _start(want[0]))
    page.click("button[name=search-next]")
    expect(canvas).to_have_attribute("data-selected", str(want[1]))
    _shows(page, _start(want[1]))
    page.press("input[name=search]", "Shift+Enter")
    page.press("input[name=search]", "Shift+Enter")
    expect(canvas).to_have_attribute("data-selected", str(want[-1]))  # wraps to the last
    _shows(page, _start(want[-1]))
    expect(page).to_have_url(re.compile(r"#timeline\?.*q=ADD_kernel"))
    # the address is written 200 ms after the view settles (timeline's save()): wait for it, not read it
    expect(page).to_have_url(re.compile(rf"#timeline\?.*sel={want[-1]}(&|$)"))
    page.fill("input[name=search]", "no such kernel")
    expect(found).to_have_text("no event matches 'no such kernel'")
    expect(canvas).to_have_attribute("data-matches", "0")
    page.fill("input[name=search]", "")
    expect(found).to_be_hidden()
    expect(canvas).not_to_have_attribute("data-matches", re.compile(".*"))


def test_a_clicked_kernel_shows_its_call_stack_and_args(page_file: Path, watched: Watched) -> None:
    page = watched.page
    page.goto(page_file.as_uri() + "#timeline")
    canvas = page.locator("canvas.tl-canvas")
    expect(canvas).to_have_attribute("data-events", "210")
    box = canvas.bounding_box()
    assert box is not None
    details = page.locator(".tl-details")
    for x in range(190, int(box["width"]), 4):  # along the stream's lane, until a kernel is hit
        page.mouse.click(box["x"] + x, box["y"] + box["height"] - 12)
        if details.is_visible():
            break
    expect(details).to_be_visible()
    stack = details.locator(".tl-stack .frame")
    frames = stack.all_inner_texts()
    assert frames[:3] == ["ROOT", "step", "forward_backward"], frames
    assert frames[-1] == details.get_attribute("data-event")
    assert details.locator(".tl-args tr[data-arg=device] td").inner_text() == "0"
    assert details.locator(".tl-args tr[data-arg=stream] td").inner_text() == "7"


def test_the_launch_arrows_turn_off_and_stay_off_in_the_address(page_file: Path, watched: Watched) -> None:
    page = watched.page
    page.goto(page_file.as_uri() + "#timeline")
    canvas = page.locator("canvas.tl-canvas")
    expect(canvas).to_have_attribute("data-arrows", "true")
    assert int(canvas.get_attribute("data-flows-drawn") or 0) > 0
    page.uncheck("input[name=arrows]")
    expect(canvas).to_have_attribute("data-arrows", "false")
    expect(canvas).to_have_attribute("data-flows-drawn", "0")
    expect(page).to_have_url(re.compile(r"arrows=0"))
    page.check("input[name=arrows]")
    expect(canvas).to_have_attribute("data-arrows", "true")
    assert int(canvas.get_attribute("data-flows-drawn") or 0) > 0


def test_a_deep_link_restores_window_selection_search_and_arrows(page_file: Path, watched: Watched) -> None:
    page = watched.page
    want = _matches("add_kernel")
    page.goto(page_file.as_uri() + f"#timeline?t0=1000000&t1=2000000&sel={want[2]}&q=add_kernel&arrows=0")
    canvas = page.locator("canvas.tl-canvas")
    expect(canvas).to_have_attribute("data-events", "210")
    expect(canvas).to_have_attribute("data-start-ns", "1000000")
    expect(canvas).to_have_attribute("data-end-ns", "2000000")
    expect(canvas).to_have_attribute("data-selected", str(want[2]))
    expect(canvas).to_have_attribute("data-arrows", "false")
    expect(page.locator("input[name=search]")).to_have_value("add_kernel")
    expect(page.locator(".tl-found")).to_contain_text(f"3 of {len(want)} shown")
    expect(page.locator(".tl-details")).to_have_attribute("data-event", "add_kernel")
    # Zooming writes the new window back; a reload opens it again.
    page.click("button[name=zoom-in]")
    expect(page).to_have_url(re.compile(r"t0=1250000&t1=1750000"))
    page.reload()
    expect(canvas).to_have_attribute("data-start-ns", "1250000")
    expect(canvas).to_have_attribute("data-selected", str(want[2]))
