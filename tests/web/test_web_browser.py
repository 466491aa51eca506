"""The web UI in a real browser (Chromium driven by Playwright), on real files: each view shows
the expected names and numbers, clicking and filtering work, no console errors, and no request
leaves the server (or, for the ``--html`` file, the file)."""

from __future__ import annotations

import json
import re
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from deuteron.formats import hatchet
from deuteron.model.tree import Profile
from deuteron.render.notebook import profile_html
from deuteron.render.web.data import WebData
from deuteron.render.web.packed import unpack
from deuteron.render.web.profile import profile_data
from tests.helpers.browser import Watched, expect
from tests.helpers.cli import run_cli, serving
from tests.helpers.paths import REPO
from tests.helpers.web_inputs import WebInputs

pytestmark = pytest.mark.slow


def _people(v: float) -> str:
    """The page's number format (dom.ts fmt) for values the tests look at."""
    if float(v).is_integer() and abs(v) < 1e6:
        return f"{int(v):,}"
    if abs(v) >= 100:
        return f"{v:.1f}"
    return f"{v:.3g}" if abs(v) >= 1e-3 else f"{v:.2e}"


def _only_from(requests: list[str], origin: str) -> list[str]:
    return [r for r in requests if not r.startswith(origin) and not r.startswith("data:")]


@pytest.fixture(scope="module")
def served(web_inputs: WebInputs) -> Any:
    files = [web_inputs.profile, web_inputs.trace, web_inputs.record, web_inputs.report, web_inputs.explain]
    with serving(*map(str, files), "--base", str(web_inputs.base), cwd=web_inputs.folder) as url:
        yield url


def test_profile_view_flame_graph_and_table(served: str, web_inputs: WebInputs, watched: Watched) -> None:
    page = watched.page
    page.goto(served + "#profile")
    flame = page.locator("canvas.flame-canvas")
    flame.wait_for()
    assert flame.get_attribute("data-zoom") == "ROOT" and flame.get_attribute("data-column") == "time/ms"
    assert int(flame.get_attribute("data-drawn") or 0) >= 5
    data = profile_data(hatchet.read(web_inputs.profile), "p", hatchet.read(web_inputs.base), "b")
    names = [data["names"][i] for i in data["name_id"]]
    row = page.locator('.ptable tbody tr[data-name="add_kernel"]')
    ms = data["values"][0][names.index("add_kernel")]
    count = data["values"][data["columns"].index("count")][names.index("add_kernel")]
    assert _people(ms) in row.inner_text() and _people(count) in row.inner_text()
    headers = page.locator(".ptable th").all_inner_texts()
    assert any("base time/ms" in h for h in headers) and any("ratio" in h for h in headers), headers
    page.click(".profile-meta summary")  # the metadata card opens on a click (closed at first)
    assert page.locator(".profile-meta").inner_text().count("deuteron run") == 1
    # Hover across the first level of the flame graph until it names a frame, then zoom into it.
    box = flame.bounding_box()
    assert box is not None
    hovered = None
    for step in range(1, 40):
        page.mouse.move(box["x"] + box["width"] * step / 40, box["y"] + 18 * 1.5)
        hovered = flame.get_attribute("data-hover")
        if hovered == "matmul":
            break
    assert hovered == "matmul"
    assert page.locator(".flame-box .tip").inner_text().startswith("matmul")
    page.mouse.click(box["x"] + box["width"] * step / 40, box["y"] + 18 * 1.5)
    expect(flame).to_have_attribute("data-zoom", "matmul")
    expect(page.locator('.ptable tbody tr.sel[data-name="matmul"]')).to_have_count(1)
    page.click("button[name=reset-zoom]")
    expect(flame).to_have_attribute("data-zoom", "ROOT")


def test_profile_filter_sort_and_bad_regex(served: str, watched: Watched) -> None:
    page = watched.page
    page.goto(served + "#profile")
    page.locator("canvas.flame-canvas").wait_for()
    page.fill("input[name=filter]", "add_")
    expect(page.locator(".profile-slot")).to_have_attribute("data-matches", "1")
    shown = page.locator(".ptable tbody tr").evaluate_all("rows => rows.map(r => r.dataset.name)")
    assert "add_kernel" in shown and "matmul_kernel" not in shown
    page.fill("input[name=filter]", "(")
    expect(page.locator(".filter-error")).to_be_visible()
    page.fill("input[name=filter]", "")
    expect(page.locator(".ptable tbody tr[data-name=matmul_kernel]")).to_have_count(1)
    # Column 0 is the name: a first click sorts siblings by name descending, a second ascending.
    first_child = page.locator(".ptable tbody tr[data-node]").nth(1)
    page.click('.ptable th[data-col="0"]')
    expect(first_child).to_have_attribute("data-name", "vector_add")
    expect(page.locator('.ptable th[data-col="0"]')).to_contain_text("▼")
    page.click('.ptable th[data-col="0"]')
    expect(first_child).to_have_attribute("data-name", "matmul")
    expect(page.locator('.ptable th[data-col="0"]')).to_contain_text("▲")


def test_timeline_view(served: str, web_inputs: WebInputs, watched: Watched) -> None:
    page = watched.page
    page.goto(served + "#timeline")
    canvas = page.locator("canvas.tl-canvas")
    canvas.wait_for()
    with urllib.request.urlopen(served + "api/index.json") as reply:
        index = json.loads(reply.read())
    ref = index["traces"][0]
    assert int(canvas.get_attribute("data-events") or 0) == ref["count"] > 0
    assert int(canvas.get_attribute("data-lanes") or 0) == len(ref["lanes"])
    assert int(canvas.get_attribute("data-drawn") or 0) > 0
    before = canvas.get_attribute("data-end-ns") or "0"
    page.click("button[name=zoom-in]")
    expect(canvas).not_to_have_attribute("data-end-ns", before)
    assert float(canvas.get_attribute("data-end-ns") or 0) < float(before)
    page.click("button[name=reset]")
    box = canvas.bounding_box()
    assert box is not None
    seen = set()
    for x in range(0, int(box["width"]), 15):  # hover along the first lane
        page.mouse.move(box["x"] + x, box["y"] + 30)
        if canvas.get_attribute("data-hover"):
            seen.add(canvas.get_attribute("data-hover"))
    assert seen & {"vector_add", "matmul", "add_kernel", "matmul_kernel"}, seen


def _cells(data: WebData, url: str) -> dict[str, Any]:
    return unpack(data.answer(url)[1])


def test_accesses_view_every_launch_programs_cells_and_findings(
    served: str, web_inputs: WebInputs, watched: Watched
) -> None:
    data = WebData()
    data.add_file(str(web_inputs.record))
    data.add_file(str(web_inputs.report))
    data.index()
    launch0 = data.answer("/api/access/0/0.json")[1]
    src = launch0["tensors"][0]
    page = watched.page
    page.goto(served + "#accesses")
    page.wait_for_selector("#view-accesses[data-state=ready][data-launch='0']")
    canvas = page.locator('canvas[data-tensor="src"]')
    cells = _cells(data, src["slice_urls"][0])
    assert int(canvas.get_attribute("data-bins-touched") or 0) == len(set(cells["bin"].tolist()))
    assert int(canvas.get_attribute("data-findings") or 0) == 0, "the finding's element is past the end"
    assert page.locator(".acc-ftable tr[data-kind=out-of-bounds]").count() >= 1
    # One program: the cells it touched, and no more.
    page.select_option("[name=program]", "4")
    mine = {b for p, b in zip(cells["program"].tolist(), cells["bin"].tolist(), strict=True) if p == 4}
    expect(canvas).to_have_attribute("data-bins-selected", str(len(mine)))
    page.select_option("[name=program]", "all")
    expect(canvas).to_have_attribute("data-program", "all")
    # Click the top-left cell: the column-0 tiles' loads and the overrunning column-1 tiles' loads.
    box = canvas.bounding_box()
    assert box is not None
    page.mouse.click(
        box["x"] + box["width"] / src["bin_cols"] / 2, box["y"] + box["height"] / src["bin_rows"] * 1.5
    )
    panel = page.locator(".acc-details[data-cell='1,0']")
    panel.wait_for()
    touching = Counter(
        tuple(launch0["programs"][p])
        for p, b in zip(cells["program"].tolist(), cells["bin"].tolist(), strict=True)
        if b == 1 * src["bin_cols"]
    )
    shown = panel.locator("tr[data-program]").evaluate_all("rows => rows.map(r => r.dataset.program)")
    assert {tuple(map(int, s.split(","))) for s in shown} == set(touching), (shown, touching)
    assert panel.locator("pre[data-source] .ln.hl").count() >= 1
    # Slice 1 of the 3-D tensor, then the second launch (the transposed view).
    page.fill('input[name=slice][data-tensor="src"]', "1")
    page.dispatch_event('input[name=slice][data-tensor="src"]', "change")
    expect(canvas).to_have_attribute("data-slice", "1")
    cells1 = _cells(data, src["slice_urls"][1])
    expect(canvas).to_have_attribute("data-bins-touched", str(len(set(cells1["bin"].tolist()))))
    page.select_option("select[name=launch]", "1")
    page.wait_for_selector("#view-accesses[data-state=ready][data-launch='1']")
    launch1 = data.answer("/api/access/0/1.json")[1]
    t1 = launch1["tensors"][0]
    expected = len(set(_cells(data, t1["slice_urls"][0])["bin"].tolist()))
    assert (
        int(page.locator('canvas[data-tensor="src"]').get_attribute("data-bins-touched") or 0)
        == expected
        == 32 * 16
    )
    page.select_option("select[name=mode]", "1")
    expect(page.locator('canvas[data-tensor="src"]')).to_have_attribute("data-mode", re.compile("^(1|heat)$"))


def test_explain_view_source_and_stages_linked(served: str, web_inputs: WebInputs, watched: Watched) -> None:
    doc = json.loads(web_inputs.explain.read_text())
    page = watched.page
    page.goto(served + "#explain")
    page.locator("button[data-kernel]").first.wait_for()
    assert page.locator("button[data-kernel]").count() == len(doc["kernels"])
    kernel = doc["kernels"][0]
    stage = page.locator("pre[data-stage]")
    name = stage.get_attribute("data-stage")
    src = kernel["stage_text"][name]["src"]
    line = Counter(s for s in src if s is not None).most_common(1)[0][0]
    page.locator(f'pre[data-source] .ln[data-line="{line}"]').click()
    expect(stage).to_have_attribute("data-highlighted", str(src.count(line)))
    page.locator('[data-stage-tab="ptx"]').click()
    expect(page.locator("pre[data-stage]:visible")).to_have_attribute("data-stage", "ptx")
    ptx = page.locator('pre[data-stage="ptx"]')
    expect(ptx).to_have_attribute("data-highlighted", str(kernel["stage_text"]["ptx"]["src"].count(line)))
    cards = page.locator("[data-card=resources]").inner_text()
    assert str(kernel["registers"]) in cards


def test_no_request_leaves_the_server(served: str, watched: Watched) -> None:
    page = watched.page
    for view in ("profile", "timeline", "accesses", "explain"):
        page.goto(served + "#" + view)
        page.wait_for_load_state("networkidle")
    origin = "{0.scheme}://{0.netloc}/".format(urlsplit(served))
    assert watched.requests and not _only_from(watched.requests, origin)


def test_standalone_file_with_all_network_blocked(
    web_inputs: WebInputs, watched: Watched, tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    files = [web_inputs.profile, web_inputs.trace, web_inputs.record, web_inputs.report, web_inputs.explain]
    proc = run_cli("serve", "--html", str(out), *map(str, files), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    page = watched.page
    blocked: list[str] = []

    def gate(route: Any) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", gate)
    page.goto(out.as_uri())
    tabs = page.locator("nav.tabs button").all_inner_texts()
    assert tabs == ["Profile", "Timeline", "Accesses", "Explain"]
    page.locator("canvas.flame-canvas[data-drawn]").wait_for()
    page.click("nav.tabs button[data-view=timeline]")
    assert int(page.locator("canvas.tl-canvas").get_attribute("data-events") or 0) > 0
    page.click("nav.tabs button[data-view=accesses]")
    page.wait_for_selector("#view-accesses[data-state=ready]")
    assert int(page.locator('canvas[data-tensor="dst"]').get_attribute("data-bins-touched") or 0) > 0
    page.click("nav.tabs button[data-view=explain]")
    page.locator("pre[data-stage]").wait_for()
    assert page.locator(".mode").inner_text() == "standalone file"
    assert not blocked and all(r.startswith("file://") for r in watched.requests), (blocked, watched.requests)


def test_notebook_repr_renders_inline(web_inputs: WebInputs, watched: Watched) -> None:
    html = profile_html(hatchet.read(web_inputs.profile), "notebook")
    assert html.startswith("<iframe srcdoc=")
    page = watched.page
    page.set_content(f"<html><body>{html}</body></html>")
    frame = page.frame_locator("iframe")
    frame.locator("canvas.flame-canvas[data-drawn]").wait_for()
    assert "add_kernel" in frame.locator(".ptable").inner_text()


def test_page_without_data_says_so(browser: Any, tmp_path: Path) -> None:
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    from deuteron.render.web.page import standalone_page

    data = WebData()
    page.set_content(standalone_page(data.embedded(), "empty"))
    assert "Nothing to show" in page.locator("main").inner_text()
    assert not errors
    page.close()


def test_served_page_shows_an_error_for_a_damaged_answer(web_inputs: WebInputs, watched: Watched) -> None:
    with serving(str(web_inputs.profile), cwd=web_inputs.folder) as url:
        page = watched.page
        page.route(re.compile(r".*/api/index\.json$"), lambda r: r.fulfill(status=500, body="boom"))
        page.goto(url)
        assert "500" in page.locator(".error").inner_text()
        watched.errors.clear()  # the failed request is logged by the browser itself


HOSTILE = '</script><script>alert("script")</script><img src=x onerror="alert(1)">'


def test_hostile_names_and_messages_show_as_text(
    web_inputs: WebInputs, watched: Watched, tmp_path: Path
) -> None:
    """Names, messages and source text from a file are data, never markup, in both page forms."""
    profile = hatchet.read(web_inputs.profile)
    profile.root.child(HOSTILE).add("time (ns)", 1e6)
    hatchet.write(profile, tmp_path / "hostile.hatchet")
    report = json.loads(web_inputs.report.read_text())
    report["findings"][0]["message"] = HOSTILE
    (tmp_path / "hostile.json").write_text(json.dumps(report))
    page = watched.page
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    out = tmp_path / "hostile.html"
    files = [str(tmp_path / "hostile.hatchet"), str(web_inputs.record), str(tmp_path / "hostile.json")]
    assert run_cli("serve", "--html", str(out), *files, cwd=tmp_path).returncode == 0
    with serving(*files, cwd=tmp_path) as url:
        for address in (out.as_uri(), url):
            page.goto(address + "#profile")
            page.locator("canvas.flame-canvas[data-drawn]").wait_for()
            assert HOSTILE in page.locator(".ptable").inner_text()
            page.click("nav.tabs button[data-view=accesses]")
            page.wait_for_selector("#view-accesses[data-state=ready]")
            assert HOSTILE in page.locator(".acc-ftable").inner_text()
            assert page.locator("img").count() == 0 and page.locator("script").count() <= 2
    assert not dialogs, dialogs


def test_empty_inputs_say_so(watched: Watched, tmp_path: Path) -> None:
    (tmp_path / "empty.json").write_text('{"traceEvents": []}')
    root_only = Profile()
    root_only.root.metrics["time (ns)"] = 5.0
    hatchet.write(root_only, tmp_path / "root.hatchet")
    out = tmp_path / "empty.html"
    assert run_cli("serve", "--html", str(out), "empty.json", "root.hatchet", cwd=tmp_path).returncode == 0
    page = watched.page
    page.goto(out.as_uri() + "#timeline")
    expect(page.locator("[data-empty=trace]")).to_contain_text("no complete events")
    page.click("nav.tabs button[data-view=profile]")
    expect(page.locator(".ptable tbody tr[data-node]")).to_have_count(1)
    assert page.locator("canvas.flame-canvas").get_attribute("data-zoom") == "ROOT"


def test_real_gpu_trace_threads_stream_and_launch_arrows(watched: Watched, tmp_path: Path) -> None:
    """A CUPTI trace recorded on an H100 (tests/fixtures/web): lanes, kinds and arrows."""
    trace = REPO / "tests" / "fixtures" / "web" / "h100_launch_bound.chrome_trace"
    data = WebData()
    data.add_file(str(trace))
    ref = data.index()["traces"][0]
    assert [(lane["name"], lane["kind"]) for lane in ref["lanes"]] == [
        ("main thread", "thread"),
        ("thread 139934510515904", "thread"),
        ("GPU 0 stream 7", "stream"),
    ]
    assert ref["flows"] == 104 and ref["count"] == 210
    out = tmp_path / "gpu.html"
    assert run_cli("serve", "--html", str(out), str(trace), cwd=tmp_path).returncode == 0
    page = watched.page
    page.goto(out.as_uri())
    canvas = page.locator("canvas.tl-canvas")
    expect(canvas).to_have_attribute("data-events", "210")
    assert int(canvas.get_attribute("data-flows-drawn") or 0) > 0, "104 arrows fit: all are drawn"
    box = canvas.bounding_box()
    assert box is not None
    kernels = set()
    for x in range(190, int(box["width"]), 6):  # along the stream's lane
        page.mouse.move(box["x"] + x, box["y"] + box["height"] - 12)
        kernels.add(canvas.get_attribute("data-hover"))
    # C++ kernels are named as deuteron view names them (short; test_web_timeline_names.py).
    shown = {n for raw, n in zip(ref["names"], ref["display_names"], strict=True) if raw != n}
    assert kernels & shown and not any(k and k.startswith("_Z") for k in kernels), kernels


def test_a_programs_masked_off_lanes_are_shown(served: str, web_inputs: WebInputs, watched: Watched) -> None:
    """tile_copy's rows past R are masked off; for the last row of programs those lanes point into
    the next slice, inside the tensor: they are recorded and drawn for that program only."""
    data = WebData()
    data.add_file(str(web_inputs.record))
    data.index()
    launch = data.answer("/api/access/0/0.json")[1]
    src = launch["tensors"][0]
    program = launch["programs"].index([2, 0, 0])
    masked, accessed = set(), set()
    for s, url in enumerate(src["slice_urls"]):
        cells = _cells(data, url)
        for p, b, k in zip(*(cells[c].tolist() for c in ("program", "bin", "kind")), strict=True):
            if p == program:
                (masked if k >= 3 else accessed).add((s, b))
    only_masked = {b for s, b in masked - accessed if s == 1}
    assert len(only_masked) == 8 * 16, "rows 40..47 of slice 0 are rows 0..7 of slice 1, 16 columns"
    page = watched.page
    page.goto(served + "#accesses")
    page.wait_for_selector("#view-accesses[data-state=ready][data-launch='0']")
    canvas = page.locator('canvas[data-tensor="src"]')
    page.select_option("[name=program]", str(program))
    expect(canvas).to_have_attribute("data-bins-masked", "0")  # slice 0: its masked lanes are in slice 1
    page.fill('input[name=slice][data-tensor="src"]', "1")
    page.dispatch_event('input[name=slice][data-tensor="src"]', "change")
    expect(canvas).to_have_attribute("data-slice", "1")
    expect(canvas).to_have_attribute("data-bins-masked", str(len(only_masked)))
    assert "masked-off lanes" in page.locator(".acc-legend").inner_text()


def test_a_trace_too_deep_to_draw_whole_keeps_a_level_budget(watched: Watched, tmp_path: Path) -> None:
    """40 threads nested 30 deep would need a canvas of 19 000 px, past what browsers draw."""
    events = [
        {"ph": "X", "name": f"level{d}", "ts": d, "dur": 100 - 2 * d, "pid": 0, "tid": t}
        for t in range(40)
        for d in range(30)
    ]
    (tmp_path / "deep.json").write_text(json.dumps({"traceEvents": events}))
    out = tmp_path / "deep.html"
    assert run_cli("serve", "--html", str(out), "deep.json", cwd=tmp_path).returncode == 0
    page = watched.page
    page.goto(out.as_uri())
    canvas = page.locator("canvas.tl-canvas")
    expect(canvas).to_have_attribute("data-capped", "12")  # 500 rows over 40 lanes
    box = canvas.bounding_box()
    assert box is not None and box["height"] < 8200
    assert int(canvas.get_attribute("data-drawn") or 0) > 0
    assert "12 levels per lane" in page.locator("[data-note=capped]").inner_text()


def test_switching_traces_and_dragging_the_new_one(
    web_inputs: WebInputs, watched: Watched, tmp_path: Path
) -> None:
    fixture = REPO / "tests" / "fixtures" / "web" / "h100_launch_bound.chrome_trace"
    out = tmp_path / "two.html"
    assert (
        run_cli("serve", "--html", str(out), str(web_inputs.trace), str(fixture), cwd=tmp_path).returncode
        == 0
    )
    page = watched.page
    page.goto(out.as_uri())
    canvas = page.locator("canvas.tl-canvas")
    expect(canvas).to_have_attribute("data-events", re.compile(r"^\d+$"))
    first = canvas.get_attribute("data-events")
    page.select_option("select[name=trace]", "1")
    expect(canvas).to_have_attribute("data-events", "210")
    assert first != "210"
    page.click("button[name=zoom-in]")
    before = canvas.get_attribute("data-start-ns") or "0"
    box = canvas.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 40)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2 - 200, box["y"] + 40, steps=5)
    page.mouse.up()
    expect(canvas).not_to_have_attribute("data-start-ns", before)
    assert float(canvas.get_attribute("data-start-ns") or 0) > float(before), "dragged left: later times"
