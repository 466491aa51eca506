"""A sampled profile in the profile view, on a real recording: an H200's PC-sampling drain of
``benchmarks/hot_line_kernel.py`` (``tests/fixtures/cupti_hot_line``) replayed as ``deuteron run
--sample`` writes it. The page gets each frame's samples by stall reason (inclusive, as its
``num_samples`` column is) and what the metadata says about the sampling ("not recorded" where it
says nothing); in a real browser, a click on a hot line shows its stall breakdown (shares adding
up to 100%), the table has stall columns, the run card the interval and the losses, and, with no
explain report on the page, the command that makes one."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from deuteron.collect.backends.cupti import replay
from deuteron.collect.session import Session
from deuteron.formats import hatchet
from deuteron.formats.profile_stream import read_profile
from deuteron.model.tree import Node, Profile
from deuteron.render.web.data import WebData
from deuteron.render.web.page import write_standalone
from deuteron.render.web.sampling import rerun_program, sampling_data
from tests.helpers.browser import Watched, expect
from tests.helpers.paths import FIXTURES_DIR
from tests.helpers.profiles import timed_profile
from tests.helpers.web_inputs import SampledInputs

HOT_LINE = FIXTURES_DIR / "cupti_hot_line"
# How the fixture was recorded (its test's docstring): the page builds the explain command from it.
RECORDED = "deuteron run --sample benchmarks/hot_line_kernel.py"


@pytest.fixture(scope="module")
def sampled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture replayed into ``hot.hatchet`` (the CUPTI backend's replay needs no GPU)."""
    folder = tmp_path_factory.mktemp("stalls")
    session = Session(0, "hot", backend="interpreter", context="shadow")
    replay(HOT_LINE, session)
    session.profile.metadata["command"] = RECORDED
    return Path(hatchet.write(session.profile, folder / "hot.hatchet"))


def _page(path: Path) -> dict[str, Any]:
    data = WebData()
    data.add_file(str(path))
    page: dict[str, Any] = data.index()["profiles"][0]
    return page


def _names(page: dict[str, Any]) -> list[str]:
    return [page["raw_names"][k] for k in page["name_id"]]


def _stalls_below(node: Node) -> dict[str, int]:
    """A frame's stall counts summed over its subtree, straight from the profile."""
    out: dict[str, int] = {}
    for part in node.walk():
        for metric, value in part.metrics.items():
            if metric.startswith("stalled_") and value:
                out[metric.lower()] = out.get(metric.lower(), 0) + int(value)
    return out


def _line(profile: Profile, kernel: str, line: int) -> Node:
    return next(n for n in profile.root.walk() if n.name.endswith(f"hot_line_kernel.py:{line}@{kernel}"))


def test_the_page_gets_each_frames_stalls_and_the_sampling(sampled: Path) -> None:
    profile = read_profile(str(sampled))
    page = _page(sampled)
    stalls, names = page["stalls"], _names(page)
    assert stalls["nodes"][0] == 0 and stalls["nodes"] == sorted(stalls["nodes"])
    samples = page["values"][page["columns"].index("num_samples")]
    for j, node in enumerate(stalls["nodes"]):
        counts = stalls["counts"][j]
        assert len(counts) == len(stalls["reasons"]) and sum(counts) > 0
        # Deuteron's files count each sample once in the stall columns: they add up to num_samples.
        assert sum(counts) == stalls["samples"][j]
        assert samples[node] == pytest.approx(sum(counts), rel=1e-5)  # the column: six digits
    # The run's reasons, most first (ROOT's counts are the run's).
    assert stalls["counts"][0] == sorted(stalls["counts"][0], reverse=True)
    assert stalls["reasons"][0] == "stalled_not_selected"
    # A line holds the samples of the code inlined into it (tl.sum's frames below line 51).
    for kernel, line in (("sin_exp_loop", 41), ("row_sum_loop", 51)):
        node = _line(profile, kernel, line)
        j = stalls["nodes"].index(names.index(node.name))
        want = _stalls_below(node)
        assert dict(zip(stalls["reasons"], stalls["counts"][j], strict=True)) == {
            r: want.get(r, 0) for r in stalls["reasons"]
        }
    assert _stalls_below(_line(profile, "row_sum_loop", 51))["stalled_short_scoreboard"] > 100_000
    assert stalls["meanings"]["stalled_wait"]["meaning"].startswith("waits on a fixed-latency")
    # The sampling as the metadata has it; the unplaced share over the kernels with a line table.
    sampling = page["sampling"]
    meta = profile.metadata["pc_sampling"]
    assert isinstance(meta, dict)
    assert sampling["interval_cycles"] == 1024 and sampling["asked_interval"] == 1000
    assert sampling["samples"] == meta["samples"] and sampling["dropped_samples"] == 0
    placed = [e["placement"] for e in meta["kernels"].values() if "placement" in e]
    assert sampling["kernels_with_lines"] == len(placed) == 2
    assert sampling["placed_kernel_samples"] == sum(sum(p.values()) for p in placed)
    assert sampling["unplaced_samples"] == sum(p["none"] for p in placed)
    assert sampling["program"] == "benchmarks/hot_line_kernel.py"


def test_a_profile_without_stalls_or_sampling_metadata() -> None:
    """A profile that is not sampled gets neither; one with samples but no ``pc_sampling``
    (Proton's files) gets its sampling as not recorded (None), never 0."""
    plain = timed_profile({"k": (1, "kernel")})
    assert "stalls" not in _alone(plain) and "sampling" not in _alone(plain)
    proton = timed_profile({"k": (1, "function")})
    kernel = next(iter(proton.root.children.values()))
    kernel.metrics.update({"num_samples": 20, "stalled_wait": 6, "stalled_not_Selected": 4})
    page = _alone(proton)
    assert page["stalls"]["reasons"] == ["stalled_wait", "stalled_not_selected"]
    sampling = sampling_data(proton, True)
    assert sampling is not None and sampling["recorded"] is False
    assert {k for k, v in sampling.items() if v is not None} == {"recorded"}
    assert page["sampling"]["program"] is None
    diff = WebData()  # a diff has no stalls (nor sampling): its values are two profiles'
    diff.add_profile(proton, "new.hatchet", proton, "old.hatchet")
    assert not {"stalls", "sampling"} & set(diff.index()["profiles"][0])


def _alone(profile: Profile) -> dict[str, Any]:
    """The page's document of a profile served alone."""
    data = WebData()
    data.add_profile(profile, "p.hatchet")
    page: dict[str, Any] = data.index()["profiles"][0]
    return page


@pytest.mark.parametrize(
    ("command", "program"),
    [
        ("deuteron run --sample -n out examples/hot_line.py --n 3", "examples/hot_line.py --n 3"),
        ("deuteron run --sample -m pkg.main --x", "-m pkg.main --x"),
        ("train.py", "train.py"),
        ("-c", None),
        ("deuteron run 'my dir/a.py'", "'my dir/a.py'"),
    ],
)
def test_the_program_to_explain_is_read_from_the_recorded_command(command: str, program: str | None) -> None:
    profile = timed_profile({"k": (1, "kernel")})
    profile.metadata["command"] = command
    assert rerun_program(profile) == program


def _percent(text: str) -> float:
    return 0.0 if text.startswith("<") else float(text.rstrip("%"))


def test_a_hot_line_shows_its_stalls_and_the_run_card_its_sampling(
    sampled: Path, watched: Watched, tmp_path: Path
) -> None:
    data = WebData()
    data.add_file(str(sampled))
    out = tmp_path / "hot.html"
    write_standalone(data.embedded(), "hot", str(out))
    page_data = data.index()["profiles"][0]
    stalls = page_data["stalls"]
    line_id = _names(page_data).index(_line(read_profile(str(sampled)), "sin_exp_loop", 41).name)
    counts = dict(zip(stalls["reasons"], stalls["counts"][stalls["nodes"].index(line_id)], strict=True))
    total = sum(counts.values())

    page = watched.page
    page.goto(out.as_uri() + "#profile")
    page.locator("canvas.flame-canvas[data-drawn]").wait_for()
    # The run card, closed: how it was sampled; open: each value, "not recorded" where none.
    card = page.locator("details.profile-meta")
    expect(card.locator("summary")).to_contain_text("sampled every 1,024 cycles · 0 dropped · 0.0% unplaced")
    card.locator("summary").click()
    for key, text in (
        ("sampling interval", "1,024 cycles (asked for 1,000)"),
        ("dropped samples", "0 (0.0% of 1,775,328)"),
        ("unplaced samples", "0 (0.0% of 1,763,755) on <no source line>, in kernels with a line table"),
    ):
        expect(card.locator(f'.meta-item[data-key="{key}"] .v')).to_have_text(text)
    # The table's stall columns: the top stall, then the run's three most frequent reasons.
    heads = page.locator(".ptable thead th").all_inner_texts()
    assert [re.sub(r" [▼▲]$", "", h) for h in heads[-4:]] == ["top stall", "not_selected", "selected", "wait"]
    row = page.locator(f'.ptable tbody tr[data-node="{line_id}"]')
    top = max(counts, key=lambda r: counts[r])
    cell = row.locator("td.stall.top")
    expect(cell).to_have_text(re.compile(rf"^{top.removeprefix('stalled_')} \d+\.\d%$"))
    assert f"stalls of {total:,} samples" in (cell.get_attribute("title") or "")
    # A click on the hot line: its stall breakdown, the top reasons and the rest, summing to 100%.
    row.locator("td.name .nm").click()
    details = page.locator(f'.flame-details[data-node="{line_id}"]')
    breakdown = details.locator(".stall-breakdown[data-state=ready]")
    expect(breakdown).to_have_attribute("data-total", str(total))
    rows = breakdown.locator("tbody tr").evaluate_all(
        "rs => rs.map(r => [r.dataset.reason, ...[...r.cells].slice(0, 3).map(c => c.textContent)])"
    )
    ranked = sorted(counts, key=lambda r: -counts[r])
    assert [r[0] for r in rows[:5]] == ranked[:5] and rows[-1][0] == "other"
    assert sum(int(r[2].replace(",", "")) for r in rows) == total
    assert sum(_percent(r[3]) for r in rows) == pytest.approx(100.0, abs=1e-9)
    for reason, _word, n, share in rows[:5]:
        assert int(n.replace(",", "")) == counts[reason]
        assert abs(_percent(share) - 100 * counts[reason] / total) < 0.1  # rounded to add up to 100%
    expect(breakdown.locator("tfoot")).to_contain_text(f"all stalls{total:,}100.0%")
    expect(breakdown.locator(".stall-issued")).to_contain_text("not issued")
    # No explain report on the page: the note says what to run for one, for this kernel.
    note = details.locator(".explain-note")
    expect(note).to_have_attribute("data-kernel", "sin_exp_loop")
    expect(note).to_have_attribute("data-line", "41")
    expect(note.locator("code")).to_have_text(
        f"deuteron explain --profile {sampled} --kernel sin_exp_loop --json ex.json "
        f"benchmarks/hot_line_kernel.py && deuteron serve {sampled} ex.json"
    )
    assert details.locator("a.to-explain").count() == 0
    # A share too small to show reads "<0.1%", never 0%; a reason with no sample reads "0".
    cells = page.locator(".ptable td.stall").all_inner_texts()
    assert cells and not [c for c in cells if c.endswith(" 0.0%")], cells
    assert "0" in cells


@pytest.mark.slow
def test_with_an_explain_report_a_hot_line_is_one_click_from_its_explain_view(
    sampled_inputs: SampledInputs, watched: Watched, tmp_path: Path
) -> None:
    """The recorded ``examples/hot_line.py`` run and its explain report on one page: the picked hot
    line's details hold its stalls and the link that opens the Explain view at that line."""
    data = WebData()
    data.add_file(str(sampled_inputs.profile))
    data.add_file(str(sampled_inputs.explain))
    out = tmp_path / "heat.html"
    write_standalone(data.embedded(), "heat", str(out))
    page_data = data.index()["profiles"][0]
    names = _names(page_data)
    line = next(i for i, n in enumerate(names) if n.endswith("@rms_scale") and "hot_line.py:" in n)
    number = int(names[line].rsplit("@", 1)[0].rsplit(":", 1)[1])
    page = watched.page
    page.goto(out.as_uri() + f"#profile?sel={line}")  # the line picked, as a link names it
    page.locator("canvas.flame-canvas[data-drawn]").wait_for()
    details = page.locator(f'.flame-details[data-node="{line}"]')
    expect(details.locator(".stall-breakdown[data-state=ready]")).to_be_visible()
    assert details.locator(".explain-note").count() == 0
    details.locator("a.to-explain").click()
    expect(page.locator(".exp-kernel[data-kernel=rms_scale]")).to_be_visible()
    expect(page.locator(".exp-source")).to_have_attribute("data-selected", str(number))
