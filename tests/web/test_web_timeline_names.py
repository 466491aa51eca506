"""C++ kernels in the timeline by the names ``deuteron view`` gives them, on a CUPTI trace recorded
on an H100 (tests/fixtures/web): short in the labels, the tooltip, the details and the call stack,
the full demangled name and the recorded one in the details on demand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deuteron.render.web.data import WebData
from tests.helpers.browser import Watched, expect
from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO

pytestmark = pytest.mark.slow

TRACE = REPO / "tests" / "fixtures" / "web" / "h100_launch_bound.chrome_trace"


def _hover(page: Any, canvas: Any, box: dict[str, float], x: int) -> str | None:
    page.mouse.move(box["x"] + x, box["y"] + box["height"] - 12)
    return canvas.get_attribute("data-hover")


def test_a_kernels_details_give_its_short_full_and_recorded_names(watched: Watched, tmp_path: Path) -> None:
    data = WebData()
    data.add_file(str(TRACE))
    ref = data.index()["traces"][0]
    shown = {n for raw, n in zip(ref["names"], ref["display_names"], strict=True) if raw != n}
    assert shown and ref["frame_names"], "the fixture's kernels are mangled, in the stacks too"
    out = tmp_path / "gpu.html"
    assert run_cli("serve", "--html", str(out), str(TRACE), cwd=tmp_path).returncode == 0
    page = watched.page
    page.goto(out.as_uri())
    canvas = page.locator("canvas.tl-canvas")
    expect(canvas).to_have_attribute("data-events", "210")
    box = canvas.bounding_box()
    assert box is not None
    # Along the stream's lane: a kernel by its short name.
    x = next(x for x in range(190, int(box["width"]), 6) if _hover(page, canvas, box, x) in shown)
    assert not (page.locator(".tip").inner_text() or "").startswith("_Z")
    page.mouse.click(box["x"] + x, box["y"] + box["height"] - 12)
    details = page.locator(".tl-details")
    name = details.get_attribute("data-event")
    k = ref["display_names"].index(name)
    full = details.locator("details.tl-full")
    expect(full.locator(".tl-full-name")).to_have_text(ref["full_names"][k])
    expect(full.locator(".tl-full-name")).not_to_be_visible()
    full.locator("summary").click()
    expect(full.locator(".tl-full-name")).to_be_visible()
    expect(full.locator(".tl-raw code")).to_have_text(ref["names"][k])
    # Its call stack ends in the kernel's short name, its full name on hover.
    last = details.locator(".tl-stack .frame.last")
    if last.count():
        assert not (last.text_content() or "").startswith("_Z")
        title = last.get_attribute("title")
        assert title is None or title in {full for _short, full in ref["frame_names"].values()}
