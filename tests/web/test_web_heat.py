"""A sampled kernel in the web UI, on real files: an H200's recorded PC-sampling drain of
examples/hot_line.py replayed into a profile, and ``deuteron explain --profile`` joined to it.
The page's data keeps each kernel's heat and hot lines (and only in the shapes the page draws);
in a real browser, the Explain view shows the samples beside every line with the stall breakdown
on hover and the hottest lines, and a kernel of the profile is one click from its explain view."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deuteron.render.web.data import WebData
from deuteron.render.web.explain import explain_data
from tests.helpers.browser import Watched, expect
from tests.helpers.cli import run_cli, serving
from tests.helpers.paths import REPO
from tests.helpers.web_inputs import SampledInputs, WebInputs

pytestmark = pytest.mark.slow

HOT_LINE = REPO / "examples" / "hot_line.py"


def _line_of(text: str) -> int:
    """The line of examples/hot_line.py holding ``text``."""
    lines = HOT_LINE.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def _count(n: int) -> str:
    """The heat column's count as format.ts fmtCount writes it ("546", "3.7k", "325k", "1.2M")."""
    if n < 1000:
        return str(n)
    value, units = n / 1000, "kMGT"
    at = 0
    while value >= 999.5 and at < len(units) - 1:
        value, at = value / 1000, at + 1
    return f"{value:.1f}{units[at]}" if value < 9.95 else f"{value:.0f}{units[at]}"


def _kernel(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(k for k in doc["kernels"] if k["name"] == name)


def test_the_page_gets_each_sampled_kernels_heat_and_hot_lines(sampled_inputs: SampledInputs) -> None:
    data = WebData()
    data.add_file(str(sampled_inputs.profile))
    data.add_file(str(sampled_inputs.explain))
    index = data.index()
    rms = _kernel(index["explains"][0], "rms_scale")
    heat = rms["heat"]
    sqrt_line = _line_of("tl.sqrt(x * x + 1.0)")
    hottest = max(heat["lines"], key=lambda line: heat["lines"][line]["samples"])
    assert int(hottest) == sqrt_line and rms["hot_lines"][0]["line"] == sqrt_line
    assert rms["hot_lines"][0]["stall"] == "stalled_mio_throttle"
    for stage, counts in heat["stages"].items():  # every stage's samples line up with its text
        assert len(counts) == len(rms["stage_text"][stage]["lines"]), stage
    assert set(heat["by"]) == set(heat["stages"])
    # The profile offers the samples as a column: a line frame has nothing else to show.
    profile = index["profiles"][0]
    assert "num_samples" in profile["columns"]
    names = [profile["names"][i] for i in profile["name_id"]]
    column = profile["values"][profile["columns"].index("num_samples")]
    line_frame = next(i for i, n in enumerate(names) if n.endswith(f"hot_line.py:{sqrt_line}@rms_scale"))
    assert column[line_frame] > 0


def test_a_damaged_heat_shows_less_instead_of_breaking_the_view() -> None:
    stage_text = {"ttir": {"lines": ["a", "b"], "src": [1, 2]}, "sass": {"lines": ["x"], "src": [1]}}
    kernel = {
        "name": "k",
        "stage_text": stage_text,
        "heat": {
            "samples": 10,
            "lines": {
                "1": {"samples": 7, "not_issued": "x", "stalls": {"stalled_wait": 5, "bad": -1}},
                "x": {},
            },
            "stages": {"ttir": [7, 3], "sass": [1, 2, 3], "llir": [1]},
            "by": {"ttir": "source line", "sass": 3},
            "note": None,
        },
        "hot_lines": [{"line": 1, "samples": 7, "share": "a", "stall": 4, "lints": "no"}, {"line": "1"}, 3],
    }
    out = explain_data({"kernels": [kernel]}, "ex.json")["kernels"][0]
    assert out["heat"] == {
        "samples": 10,
        "lines": {"1": {"samples": 7, "not_issued": 0, "stalls": {"stalled_wait": 5}}},
        "stages": {"ttir": [7, 3]},
        "by": {"ttir": "source line"},
        "note": "",
    }
    assert out["hot_lines"] == [
        {
            "kernel": "",
            "file": "",
            "line": 1,
            "samples": 7,
            "share": 0.0,
            "stall": None,
            "stall_share": 0.0,
            "meaning": "",
            "change": "",
            "lints": [],
        }
    ]
    # No samples, or no heat at all (a report without --profile): nothing to draw.
    assert explain_data({"kernels": [{"heat": {"samples": 0}}]}, "e")["kernels"][0]["heat"] is None
    assert explain_data({"kernels": [{"name": "k"}]}, "e")["kernels"][0]["heat"] is None


@pytest.fixture(scope="module")
def served(sampled_inputs: SampledInputs) -> Any:
    with serving("sampled.hatchet", "ex.json", cwd=sampled_inputs.folder) as url:
        yield url


def test_the_explain_view_shows_the_samples_beside_every_line(
    served: str, sampled_inputs: SampledInputs, watched: Watched
) -> None:
    doc = json.loads(sampled_inputs.explain.read_text())
    heat = _kernel(doc, "rms_scale")["heat"]
    sqrt_line = _line_of("tl.sqrt(x * x + 1.0)")
    page = watched.page
    page.goto(served + "#explain?kernel=rms_scale")
    kernel = page.locator(".exp-kernel[data-kernel=rms_scale][data-sampled]")
    kernel.wait_for()
    # The source's heat column: the hottest line is the square root's, with the largest count.
    cells = page.locator(".exp-source .ln b.heat[data-samples]")
    counts = cells.evaluate_all(
        "cs => cs.map(c => [c.parentElement.dataset.line, +c.dataset.samples, c.textContent])"
    )
    line, samples, text = max(counts, key=lambda c: c[1])
    assert int(line) == sqrt_line and samples == heat["lines"][str(sqrt_line)]["samples"]
    assert text == _count(samples)
    assert {int(c[0]) for c in counts} == {int(n) for n in heat["lines"]}
    # Each stage has its own column, and says how it got its samples.
    stage = page.locator(".exp-stage[data-stage=ttgir]")
    assert stage.locator("b.heat[data-samples]").count() > 0
    expect(page.locator(".exp-heatby")).to_have_text("samples by " + heat["by"]["ttgir"])
    # Hovering the hot line names its stalls, mio_throttle first, and the share that issued nothing.
    page.hover(f'.exp-source .ln[data-line="{sqrt_line}"]')
    tip = page.locator(".exp-tip")
    expect(tip).to_be_visible()
    expect(tip).to_have_attribute("data-line", str(sqrt_line))
    assert tip.locator("tr[data-stall]").first.get_attribute("data-stall") == "mio_throttle"
    assert "not issued" in tip.inner_text() and f"line {sqrt_line}:" in tip.inner_text()
    # So does an IR line of that source line, which says what its own count is.
    page.hover(f'.exp-stage[data-stage=ttgir] .ln[data-src="{sqrt_line}"]')
    expect(tip.locator(".exp-tip-ir")).to_contain_text("ttgir line")
    assert "mio_throttle" in tip.inner_text()
    # The hottest lines, with the advice; a click selects the line in the source and the stages.
    hot = page.locator(f'.exp-hot .exp-hotlist li[data-line="{sqrt_line}"]')
    expect(hot).to_contain_text("mio_throttle")
    expect(hot).to_contain_text("tl.sqrt(x * x + 1.0)")
    assert "try:" in hot.inner_text()
    hot.click()
    expect(page.locator(".exp-source")).to_have_attribute("data-selected", str(sqrt_line))
    assert int(stage.get_attribute("data-highlighted") or 0) > 0
    assert page.url.endswith(f"#explain?kernel=rms_scale&line={sqrt_line}")


def test_a_sampled_kernel_in_the_profile_is_one_click_from_its_explain_view(
    served: str, watched: Watched
) -> None:
    sqrt_line = _line_of("tl.sqrt(x * x + 1.0)")
    page = watched.page
    page.goto(served + "#profile")
    page.locator("canvas.flame-canvas[data-drawn]").wait_for()
    row = page.locator(".ptable tbody tr[data-name=rms_scale]").first
    row.locator(".tog").click()
    frame = page.locator(f'.ptable tbody tr[data-name$="hot_line.py:{sqrt_line}@rms_scale"]').first
    frame.locator("a.to-explain").click()
    expect(page.locator("#view-explain")).to_be_visible()
    expect(page.locator(".exp-kernel[data-kernel=rms_scale]")).to_be_visible()
    expect(page.locator(".exp-source")).to_have_attribute("data-selected", str(sqrt_line))
    expect(page.locator(f'.exp-source .ln.sel[data-line="{sqrt_line}"]')).to_be_in_viewport()
    # Back returns to the profile; the kernel's own row links to the kernel.
    page.go_back()
    expect(page.locator("#view-profile")).to_be_visible()
    page.locator(".ptable tbody tr[data-name=gather_add] a.to-explain").first.click()
    expect(page.locator(".exp-kbtn[aria-pressed=true]")).to_have_attribute("data-kernel", "gather_add")
    assert "#explain?kernel=gather_add" in page.url
    # The flame graph's details of a picked kernel hold the same link.
    page.go_back()
    page.locator(".ptable tbody tr[data-name=rms_scale] td.name .nm").first.click()
    details = page.locator(".flame-details")
    expect(details).to_contain_text("rms_scale")
    details.locator("a.to-explain").click()
    expect(page.locator(".exp-kbtn[aria-pressed=true]")).to_have_attribute("data-kernel", "rms_scale")


def test_kernels_without_samples_look_as_before(web_inputs: WebInputs, watched: Watched) -> None:
    """A plain explain report (no --profile): no heat column, no hottest lines; its kernels still
    link from the profile, by name."""
    page = watched.page
    files = [str(web_inputs.profile), str(web_inputs.explain)]
    with serving(*files, cwd=web_inputs.folder) as url:
        page.goto(url + "#explain")
        page.locator(".exp-kernel").first.wait_for()
        assert page.locator(".exp-kernel[data-sampled]").count() == 0
        assert page.locator("b.heat, .exp-hot, .exp-heatnote").count() == 0
        expect(page.locator(".exp-heatby")).to_be_hidden()
        page.click("button[data-view=profile]")
        link = page.locator(".ptable tbody tr[data-name=add_kernel] a.to-explain")
        expect(link.first).to_be_visible()
        link.first.click()
        expect(page.locator(".exp-kbtn[aria-pressed=true]")).to_have_attribute("data-kernel", "add_kernel")


def test_the_standalone_page_holds_the_heat_view(sampled_inputs: SampledInputs, watched: Watched) -> None:
    folder: Path = sampled_inputs.folder
    proc = run_cli("serve", "--html", "page.html", "sampled.hatchet", "ex.json", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    page = watched.page
    store = _line_of("tl.store(y_ptr + offs, x + 1.0")  # gather_add's hottest: the gathered load's use
    page.goto((folder / "page.html").as_uri() + f"#explain?kernel=gather_add&line={store}")
    expect(page.locator(".exp-source")).to_have_attribute("data-selected", str(store))
    expect(page.locator(f".exp-hot li[data-line='{store}']")).to_contain_text("long_scoreboard")
    assert all(r.startswith("file:") or r.startswith("data:") for r in watched.requests), watched.requests


def test_a_stage_sampled_by_pc_says_so_and_shows_each_instructions_own_count(
    sampled_inputs: SampledInputs, tmp_path: Path, watched: Watched
) -> None:
    """When the profiled cubin is the one explain compiled, SASS lines carry their own PCs'
    samples (the fixture's cubin is another build, so its SASS is by source line: this report is
    the same one with SASS as a matching cubin would have filled it)."""
    doc = json.loads(sampled_inputs.explain.read_text())
    rms = _kernel(doc, "rms_scale")
    sass = rms["stage_text"]["sass"]
    own = [0] * len(sass["lines"])
    hot = next(i for i, src in enumerate(sass["src"]) if src == _line_of("tl.sqrt(x * x + 1.0)"))
    own[hot] = 1234
    rms["heat"]["stages"]["sass"] = own
    rms["heat"]["by"]["sass"] = "PC"
    rms["heat"]["note"] = ""
    (tmp_path / "ex.json").write_text(json.dumps(doc))
    proc = run_cli("serve", "--html", "page.html", "ex.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    page = watched.page
    page.goto((tmp_path / "page.html").as_uri() + "#explain?kernel=rms_scale")
    page.click("[data-stage-tab=sass]")
    expect(page.locator(".exp-heatby")).to_have_text("samples by PC")
    assert page.locator(".exp-heatnote").count() == 0
    cells = page.locator(".exp-stage[data-stage=sass] b.heat[data-samples]")
    expect(cells).to_have_count(1)
    assert cells.inner_text() == "1.2k"
    page.hover(f'.exp-stage[data-stage=sass] .ln[data-line="{hot + 1}"]')
    expect(page.locator(".exp-tip .exp-tip-ir")).to_have_text(
        f"sass line {hot + 1}: 1,234 samples (0.4%) at its own PCs"
    )
