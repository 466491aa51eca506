"""The timeline of scopes inside kernels (``pl.scope`` spans per CTA and warp, or per interpreted
program) in a real browser, on traces made here by the real writers: a kernel's lanes grouped under
a header that folds them, labelled short ("CTA 0 · SM 124 · warp 1"), and the table of scopes
with numbers checked against the trace file; clicking a row highlights that scope's spans."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

import deuteron as proton
from tests.helpers.browser import Watched, expect
from tests.helpers.cli import run_cli, serving
from tests.helpers.instrumentation import file_recorded_launches
from tests.helpers.web_inputs import WebInputs

pytestmark = pytest.mark.slow

# Two interpreted kernels with scopes, one nested; 40 + 30 programs make 70 lanes inside kernels,
# past the 64 where only the first kernel starts unfolded.
SCOPED = """
import torch, triton, triton.language as tl
import deuteron.language as pl

@triton.jit
def scoped_add(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    with pl.scope("load"):
        a = tl.load(x_ptr + offs, mask=m)
        with pl.scope("inner"):
            b = tl.load(y_ptr + offs, mask=m)
    with pl.scope("store"):
        tl.store(o_ptr + offs, a + b, mask=m)

@triton.jit
def other(o_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    with pl.scope("work"):
        tl.store(o_ptr + offs, offs)

x = torch.ones(40 * 16)
scoped_add[(40,)](x, x, torch.empty_like(x), x.numel(), BLOCK=16)
other[(30,)](torch.empty(30 * 16, dtype=torch.int32), BLOCK=16)
"""


def _gpu_trace(folder: Path) -> Path:
    """The recorded H200 buffer filed through a real session, as the instrumentation backend files
    it after a drain (tests/helpers/instrumentation.py), written
    in Deuteron's trace shape."""
    sid = proton.start(str(folder / "gpu"), backend="interpreter")
    assert sid is not None
    file_recorded_launches(sid, "default_trace.bin")
    proton.finalize(output_format="hatchet,chrome_trace")
    return folder / "gpu.chrome_trace"


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("intra")
    (folder / "scoped.py").write_text(SCOPED)
    proc = run_cli("run", "-b", "interpreter", "--trace", "-n", "interp", "scoped.py", cwd=folder)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {"gpu": _gpu_trace(folder), "interp": folder / "interp.chrome_trace"}


def _spans(trace: Path) -> list[dict[str, Any]]:
    events = json.loads(trace.read_text())["traceEvents"]
    return [e for e in events if e.get("ph") == "X" and e.get("cat") == "intra"]


def _ns(v: float) -> str:
    """The page's fmtNs for times under a microsecond."""
    return f"{round(v)} ns"


def _column(page: Any, selector: str) -> list[str]:
    return page.locator(selector).evaluate_all("els => els.map(e => e.textContent)")


def test_a_gpu_kernels_warps_grouped_labelled_and_its_scopes_tabled(
    traces: dict[str, Path], watched: Watched
) -> None:
    spans = _spans(traces["gpu"])
    assert len(spans) == 48
    with serving(str(traces["gpu"]), cwd=traces["gpu"].parent) as url:
        page = watched.page
        page.goto(url + "#timeline")
        canvas = page.locator("canvas.tl-canvas")
        canvas.wait_for()
        header = page.locator("button.tl-group")
        expect(header).to_have_count(1)
        assert header.inner_text() == "▾ three — 4 CTAs × 4 warps"
        assert header.get_attribute("aria-expanded") == "true"
        # CTA 0 on SM 124, then 1 on 126, 2 on 128, 3 on 130; warps 0..3 in each (the recording's SMs).
        sms = {0: 124, 1: 126, 2: 128, 3: 130}
        want = [f"CTA {c} · SM {sms[c]} · warp {w}" for c in range(4) for w in range(4)]
        assert _column(page, ".tl-label.tl-intra > span") == want
        titles = page.locator(".tl-label.tl-intra").evaluate_all("els => els.map(e => e.title)")
        assert titles[1] == "three Core124 CTA0 · warp 1"
        # The table: a row per scope, in program order, numbers as the trace file holds them.
        rows = page.locator(".tl-scope-table tbody tr")
        expect(rows).to_have_count(3)
        assert [r.get_attribute("data-scope") for r in rows.all()] == ["load", "compute", "store"]
        for row in rows.all():
            scope = row.get_attribute("data-scope")
            durs = [e["dur"] * 1e3 for e in spans if e["name"] == scope]
            cells = row.locator("td").all_inner_texts()
            assert cells[:4] == ["three", scope, "16", "16"], cells
            assert cells[4:7] == [_ns(min(durs)), _ns(statistics.median(durs)), _ns(max(durs))], (
                scope,
                cells,
            )
            assert cells[7] == f"{max(durs) / statistics.median(durs):.2f}×"
        # A row highlights its scope's spans; clicking it again lets go.
        compute = page.locator('.tl-scope-table tr[data-scope="compute"]')
        compute.click()
        expect(canvas).to_have_attribute("data-highlight", "three · compute")
        expect(compute).to_have_class("sel")
        compute.click()
        expect(canvas).not_to_have_attribute("data-highlight", "three · compute")
        # Hovering a warp's lane names its scopes.
        box = canvas.bounding_box()
        first = page.locator(".tl-label.tl-intra").first.bounding_box()
        assert box is not None and first is not None
        seen = set()
        for x in range(200, int(box["width"]), 8):
            page.mouse.move(box["x"] + x, first["y"] + 8)
            seen.add(canvas.get_attribute("data-hover"))
        assert {"load", "compute", "store"} <= seen, seen
        # Folding the kernel leaves its header row only; unfolding brings the lanes back.
        header.click()
        expect(header).to_have_attribute("aria-expanded", "false")
        expect(page.locator(".tl-label.tl-intra")).to_have_count(0)
        expect(canvas).to_have_attribute("data-shown-lanes", "0")
        assert header.inner_text().startswith("▸ three")
        header.click()
        expect(page.locator(".tl-label.tl-intra")).to_have_count(16)


def test_interpreted_programs_fold_past_64_lanes_and_table_each_kernel(
    traces: dict[str, Path], watched: Watched
) -> None:
    spans = _spans(traces["interp"])
    out = traces["interp"].parent / "interp.html"
    assert run_cli("serve", "--html", str(out), str(traces["interp"]), cwd=out.parent).returncode == 0
    page = watched.page
    page.goto(out.as_uri())
    canvas = page.locator("canvas.tl-canvas")
    canvas.wait_for()
    headers = page.locator("button.tl-group")
    expect(headers).to_have_count(2)
    assert headers.all_inner_texts() == ["▾ scoped_add — 40 programs", "▸ other — 30 programs"]
    assert [h.get_attribute("aria-expanded") for h in headers.all()] == ["true", "false"]
    assert _column(page, ".tl-label.tl-intra > span") == [f"program {p}" for p in range(40)]
    assert "main thread" in _column(page, ".tl-label > span")
    expect(canvas).to_have_attribute("data-lanes", "71")
    expect(canvas).to_have_attribute("data-shown-lanes", "41")
    # Every kernel's scopes are in the table, folded or not.
    rows = page.locator(".tl-scope-table tbody tr")
    got = [(r.get_attribute("data-kernel"), r.get_attribute("data-scope")) for r in rows.all()]
    assert got == [
        ("scoped_add", "load"),
        ("scoped_add", "inner"),
        ("scoped_add", "store"),
        ("other", "work"),
    ]
    counts = [r.locator("td").nth(2).inner_text() for r in rows.all()]
    assert counts == ["40", "40", "40", "30"]
    assert len(spans) == 40 * 3 + 30
    # Unfolding the second kernel by its header row on the canvas (past the button, at the right).
    headers.nth(1).scroll_into_view_if_needed()
    second = headers.nth(1).bounding_box()
    box = canvas.bounding_box()
    assert second is not None and box is not None
    page.mouse.click(box["x"] + box["width"] - 40, second["y"] + 5)
    expect(headers.nth(1)).to_have_attribute("aria-expanded", "true")
    expect(canvas).to_have_attribute("data-shown-lanes", "71")
    expect(page.locator(".tl-label.tl-intra")).to_have_count(70)
    page.locator('.tl-scope-table tr[data-kernel="other"]').click()
    expect(canvas).to_have_attribute("data-highlight", "other · work")


def test_a_trace_without_scopes_inside_kernels_has_no_groups_or_table(
    web_inputs: WebInputs, watched: Watched, tmp_path: Path
) -> None:
    out = tmp_path / "plain.html"
    assert run_cli("serve", "--html", str(out), str(web_inputs.trace), cwd=tmp_path).returncode == 0
    page = watched.page
    page.goto(out.as_uri() + "#timeline")
    page.locator("canvas.tl-canvas[data-drawn]").wait_for()
    expect(page.locator(".tl-scopes")).to_have_count(0)
    expect(page.locator("button.tl-group")).to_have_count(0)
    assert page.locator(".tl-label").count() >= 1
