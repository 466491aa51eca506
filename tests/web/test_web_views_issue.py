"""The web UI's user-facing fixes, in a real browser: a finding's click selects its program and
its cells (past the tensor's edge for out-of-bounds lanes, drawn there in their own colour, with a
legend); the profile filter says how many frames match (or that none does) and outlives a switch
of profile; a diff's ratio cells are coloured; the metadata card opens closed, with dates and
durations for people, and wraps at 600 px; the address follows the tab, and Back goes back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.browser import Watched, expect
from tests.helpers.cli import run_cli, serving
from tests.helpers.paths import REPO
from tests.helpers.web_inputs import WebInputs

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def softmax(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/check_me.py's planted overrun: the last row's load reads x_ptr[64, 0]."""
    folder = tmp_path_factory.mktemp("check_me")
    proc = run_cli(
        "check",
        "--record",
        "acc.npz",
        "--json",
        "rep.json",
        str(REPO / "examples" / "check_me.py"),
        cwd=folder,
    )
    assert (folder / "acc.npz").is_file() and (folder / "rep.json").is_file(), getattr(proc, "stderr", "")
    return folder


def test_an_out_of_bounds_finding_selects_its_program_and_cells_past_the_edge(
    softmax: Path, watched: Watched
) -> None:
    page = watched.page
    with serving("acc.npz", "rep.json", cwd=softmax) as url:
        page.goto(url + "#accesses")
        page.wait_for_selector("#view-accesses[data-state=ready][data-launch='0']")
        canvas = page.locator('canvas[data-tensor="x_ptr"]')
        # A band below the 64 rows, with the overrunning lane in it, in its own colour.
        assert canvas.get_attribute("data-pads") == "0,0,14,0"
        assert canvas.get_attribute("data-oob") == "1"
        legend = page.locator(".acc-legend [data-legend=oob]")
        expect(legend).to_be_visible()
        assert "out-of-bounds" in legend.inner_text()
        item = page.locator('.acc-card[data-card="x_ptr"] .acc-fitem[data-kind=out-of-bounds]')
        assert "not on the grid" not in item.inner_text() and "past the edge" in item.inner_text()
        item.click()
        expect(canvas).to_have_attribute("data-selected-cell", "64,0")
        expect(page.locator("select[name=program]")).to_have_value("63")  # program (63, 0, 0)
        expect(canvas).to_have_attribute("data-program", "63")
        panel = page.locator(".acc-details[data-cell='64,0'][data-tensor=x_ptr]")
        expect(panel).to_have_attribute("data-oob", "1")
        assert "past the edge" in panel.inner_text()
        # Clear the selection, then the findings table's row does the same.
        page.select_option("select[name=program]", "all")
        page.mouse.click(1, 1)
        page.locator(".acc-ftable tr[data-kind=out-of-bounds]").first.click()
        expect(page.locator("select[name=program]")).to_have_value("63")
        expect(canvas).to_have_attribute("data-selected-cell", "64,0")
        # Clicking the band cell itself opens the same details.
        box = canvas.bounding_box()
        assert box is not None
        page.mouse.click(box["x"] + 2, box["y"] + box["height"] - 5)
        expect(page.locator(".acc-details[data-cell='64,0']")).to_have_attribute("data-oob", "1")


@pytest.fixture(scope="module")
def served_diff(web_inputs: WebInputs) -> Any:
    with serving(str(web_inputs.profile), "--base", str(web_inputs.base), cwd=web_inputs.folder) as url:
        yield url


def test_filter_says_how_many_frames_match_and_ratio_cells_are_coloured(
    served_diff: str, watched: Watched
) -> None:
    page = watched.page
    page.goto(served_diff + "#profile")
    page.locator("canvas.flame-canvas").wait_for()
    count = page.locator(".filter-count")
    page.fill("input[name=filter]", "xyz")
    expect(count).to_have_text("no frame matches 'xyz'")
    page.fill("input[name=filter]", "add_")
    expect(count).to_have_text("1 frame matches 'add_'")
    page.fill("input[name=filter]", "")
    expect(count).to_be_hidden()
    cells = page.locator(".ptable td.ratio[data-trend]")
    expect(cells.first).to_be_visible()
    trends = set(cells.evaluate_all("tds => tds.map(td => td.dataset.trend)"))
    assert trends <= {"slower", "faster", "same"} and trends, trends
    slower = page.locator(".ptable td.ratio[data-trend=slower]")
    if slower.count():
        style = slower.first.get_attribute("style") or ""
        assert "hsl(350" in style or "rgb(" in style, style


def test_the_filter_outlives_switching_profiles(web_inputs: WebInputs, watched: Watched) -> None:
    page = watched.page
    with serving(str(web_inputs.profile), str(web_inputs.base), cwd=web_inputs.folder) as url:
        page.goto(url + "#profile")
        page.locator("canvas.flame-canvas").wait_for()
        page.fill("input[name=filter]", "add_")
        expect(page.locator(".profile-slot")).to_have_attribute("data-matches", "1")
        page.select_option("select[name=profile]", "1")
        expect(page.locator("input[name=filter]")).to_have_value("add_")
        expect(page.locator(".filter-count")).to_have_text("1 frame matches 'add_'")
        shown = page.locator(".ptable tbody tr[data-node]").evaluate_all(
            "rows => rows.map(r => r.dataset.name)"
        )
        assert "add_kernel" in shown and "matmul_kernel" not in shown, shown


def test_metadata_card_closed_readable_and_wrapping_at_600px(served_diff: str, watched: Watched) -> None:
    page = watched.page
    page.set_viewport_size({"width": 600, "height": 800})
    page.goto(served_diff + "#profile")
    page.locator("canvas.flame-canvas").wait_for()
    card = page.locator(".profile-meta")
    assert card.get_attribute("open") is None
    flame_top = page.locator(".profile-flame").bounding_box()
    glance = page.locator(".profile-summary").bounding_box()  # the run-at-a-glance line(s) above it
    above = glance["height"] if glance else 0
    assert flame_top is not None and flame_top["y"] < 200 + above, flame_top  # the closed card pushes nothing
    page.click(".profile-meta summary")
    expect(card).to_have_attribute("open", "")
    start = page.locator('.meta-item[data-key="start_time"] .v').inner_text()
    assert "." not in start and start[:2] in ("20", "19") and ":" in start, start
    assert page.locator('.meta-item[data-key="duration"] .v').inner_text().endswith(("ms", "s", "µs"))
    for item in page.locator(".meta-item .v").all():
        box = item.bounding_box()
        # One line, or lines wide enough to read: never a column of single characters.
        assert box is not None and (box["height"] < 20 or box["width"] > 150), (item.inner_text(), box)


def test_the_address_follows_the_tab_and_back_goes_back(web_inputs: WebInputs, watched: Watched) -> None:
    page = watched.page
    with serving(str(web_inputs.profile), str(web_inputs.trace), cwd=web_inputs.folder) as url:
        page.goto(url)
        page.locator("canvas.flame-canvas").wait_for()
        assert page.url.endswith("#profile")
        page.click("button[data-view=timeline]")
        assert page.url.endswith("#timeline")
        expect(page.locator("#view-timeline")).to_be_visible()
        page.go_back()
        expect(page.locator("button[data-view=profile]")).to_have_attribute("aria-selected", "true")
        expect(page.locator("#view-profile")).to_be_visible()
        assert page.url.endswith("#profile")
        page.go_forward()
        expect(page.locator("button[data-view=timeline]")).to_have_attribute("aria-selected", "true")
        page.goto(url + "#timeline")
        expect(page.locator("#view-timeline")).to_be_visible()


def test_the_run_at_a_glance_and_an_unrelated_diff_are_said(tmp_path: Path, watched: Watched) -> None:
    """Above the flame graph: the lines `deuteron view --summary` prints, and, for a diff of
    profiles that share no frame, a warning before the rows that would all read added/removed."""
    from deuteron.formats import hatchet
    from deuteron.model.metrics import TIME
    from deuteron.model.tree import KERNEL, Profile

    step, other = Profile(), Profile()
    model = step.root.child("Model")
    step.add_metrics(model.child("backward").child("gemm", KERNEL), {TIME: 6_000_000})
    step.add_metrics(model.child("fwd").child("gemm", KERNEL), {TIME: 2_000_000})
    step.metadata.update(gpu_busy_ns=8_000_000, gpu_window_ns=10_000_000)
    other.add_metrics(other.root.child("serve").child("softmax", KERNEL), {TIME: 1_000_000})
    hatchet.write(step, tmp_path / "step.hatchet")
    hatchet.write(other, tmp_path / "other.hatchet")
    page = watched.page
    with serving("step.hatchet", cwd=tmp_path) as url:
        page.goto(url + "#profile")
        line = page.locator(".profile-summary-line")
        busy = "GPU busy 8.00 ms of the 10.00 ms from its first kernel to its last (80.0%)"
        expect(line).to_contain_text(busy)
        text = line.inner_text()
        assert "backward 6.00 ms (75%)" in text and "top kernels: gemm 100%" in text
        assert page.locator(".profile-warning").count() == 0
    with serving("step.hatchet", "--base", "other.hatchet", cwd=tmp_path) as url:
        page.goto(url + "#profile")
        warning = page.locator(".profile-warning")
        expect(warning).to_be_visible()
        assert "share no frame name" in warning.inner_text()
