"""The timeline opens on the training steps (issue 43): the server finds them as ``deuteron view
--advise`` does and says the window of the steady ones; the page opens on it unless its address
names another, draws a "steps" lane and a "backward" lane on top (a click on a span zooms to it),
keeps the whole run a click away, and names the threads by their roles (the autograd thread),
their ids on hover. On the recorded DDP rank (tests/fixtures/ranks) and H100 trace
(tests/fixtures/web), and on small made traces for each way of finding steps and roles."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from deuteron.formats import chrome_trace
from deuteron.render.web.data import WebData
from deuteron.render.web.timeline import lane_kinds, trace_ref
from deuteron.view.trace_marks import lane_roles
from tests.helpers.browser import Watched, expect
from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO

DDP = REPO / "tests" / "fixtures" / "ranks" / "ddp" / "deuteron.rank0.chrome_trace.gz"
H100 = REPO / "tests" / "fixtures" / "web" / "h100_launch_bound.chrome_trace"
MS = 1000.0  # µs, the trace files' unit


def _ref(path: Path) -> dict[str, Any]:
    data = WebData()
    data.add_file(str(path))
    ref: dict[str, Any] = data.index()["traces"][0]
    return ref


def _write(path: Path, events: list[dict[str, Any]], names: dict[int, str] | None = None) -> Path:
    meta = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": t, "args": {"name": n}}
        for t, n in (names or {}).items()
    ]
    path.write_text(json.dumps({"traceEvents": meta + events}))
    return path


def _x(name: str, tid: int, ts: float, dur: float, cat: str = "scope", **args: Any) -> dict[str, Any]:
    return {"ph": "X", "name": name, "cat": cat, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


# --- the server: steps, the window, backward passes and roles ---------------------------------


def test_the_recorded_ddp_ranks_steps_are_its_optimizer_steps_and_the_window_their_kernels() -> None:
    ref = _ref(DDP)
    c = chrome_trace.read_columns(str(DDP))
    zero = float(c.start.min())
    names = [n for n in c.names if n == "optimizer.step (AdamW)"]
    assert names
    ends = sorted(
        float(s + d) - zero for s, d, n in zip(c.start, c.dur, c.name, strict=True) if c.names[n] in names
    )
    assert len(ends) == 3  # the trace holds three ends: two whole steps
    assert ref["steps"] == [
        [pytest.approx(ends[0]), pytest.approx(ends[1])],
        [pytest.approx(ends[1]), pytest.approx(ends[2])],
    ]
    assert "optimizer.step (AdamW)" in ref["steps_how"]
    t0, t1 = ref["step_window"]
    assert t0 == pytest.approx(ends[0]) and ends[2] <= t1 <= ref["end_ns"] - ref["start_ns"]
    assert ref["steady_from"] == 1  # two steps: none left out
    # A backward pass per step (the first, before the first end: the trace was cut in its step).
    assert len(ref["backward"]) == 3
    for (a, b), (s0, s1) in zip(ref["backward"][1:], ref["steps"], strict=True):
        assert s0 <= a < b <= s1
    roles = {lane["name"]: lane.get("role") for lane in ref["lanes"]}
    assert roles == {
        "main thread": None,
        "thread 140520405534400": "autograd thread",
        "GPU 0 stream 17": None,
        "GPU 0 stream 7": None,
    }


def test_step_scopes_are_the_steps_and_the_first_of_three_is_left_out_of_the_window(tmp_path: Path) -> None:
    events = []
    for k in range(4):
        events.append(_x("step", 0, k * 10 * MS, 9 * MS))
        events.append(_x("aten::mm", 0, k * 10 * MS + MS, 2 * MS))
    ref = _ref(_write(tmp_path / "s.chrome_trace", events, {0: "main thread"}))
    assert ref["steps"] == [[k * 10e6, k * 10e6 + 9e6] for k in range(4)]
    assert ref["steps_how"] == "the scopes named step"
    assert ref["step_window"] == [10e6, 39e6] and ref["steady_from"] == 2


def test_a_model_called_again_and_again_marks_the_steps_where_nothing_else_does(tmp_path: Path) -> None:
    events = [_x("module (LlamaForCausalLM)", 0, k * 10 * MS, 4 * MS) for k in range(3)]
    events.append(_x("setup", 0, -5 * MS, 1 * MS))
    ref = _ref(_write(tmp_path / "m.chrome_trace", events, {0: "main thread"}))
    assert ref["steps"] == [[5e6, 15e6], [15e6, 25e6]]  # from one call's start to the next
    assert "module (LlamaForCausalLM)" in ref["steps_how"]


def test_a_trace_without_steps_opens_whole_and_says_none(tmp_path: Path) -> None:
    ref = _ref(
        _write(tmp_path / "n.chrome_trace", [_x("aten::mm", 0, 0, MS), _x("aten::add", 0, 2 * MS, MS)])
    )
    assert not {"steps", "step_window", "backward"} & set(ref)


def test_backward_passes_without_steps_are_cut_at_long_pauses(tmp_path: Path) -> None:
    events = []
    for k in range(3):  # three backward passes of five ops each on the autograd thread
        events += [_x(f"MmBackward{j}", 7, k * 50 * MS + j * 0.2 * MS, 0.1 * MS) for j in range(5)]
    ref = _ref(_write(tmp_path / "b.chrome_trace", events, {0: "main thread", 7: "thread 99"}))
    assert len(ref["backward"]) == 3


@pytest.mark.parametrize(
    ("label", "runs", "want"),
    [
        ("pt_autograd_0", "aten::mm", "autograd thread (device 0)"),
        ("pt_nccl_watchdg", "aten::mm", "NCCL watchdog"),
        ("pt_data_worker", "aten::mm", "data loader worker"),
        ("deuteron-cupti-flush", "x", "CUPTI flush thread"),
        ("thread 42", "ProcessGroupNCCL::watchdog", "NCCL watchdog"),
        ("thread 42", "_worker_loop", "data loader worker"),
        ("thread 42", "MulBackward0", None),  # under no backward frame: an op's name alone says little
        ("thread 42", "aten::mm", None),  # nothing known: its name stays
        ("my own thread", "ProcessGroupNCCL::watchdog", None),  # named by the trace: kept
    ],
)
def test_a_threads_role_from_its_name_or_what_runs_on_it(
    tmp_path: Path, label: str, runs: str, want: str | None
) -> None:
    path = _write(
        tmp_path / "r.chrome_trace", [_x("step", 0, 0, MS), _x(runs, 5, 0, MS)], {0: "main thread", 5: label}
    )
    c = chrome_trace.read_columns(str(path))
    lane = next(i for i, (_p, tid, _l) in enumerate(c.lanes) if tid == 5)
    assert lane_roles(c, lane_kinds(c)).get(lane) == want


def test_a_thread_launching_backward_kernels_is_an_autograd_thread() -> None:
    ref = _ref(H100)
    assert [(lane["name"], lane.get("role")) for lane in ref["lanes"]] == [
        ("main thread", None),
        ("thread 139934510515904", "autograd thread"),
        ("GPU 0 stream 7", None),
    ]
    assert len(ref["steps"]) == 1 and ref["steps_how"] == "the scopes named step"
    assert len(ref["backward"]) == 1


def test_a_jobs_steps_are_its_first_ranks() -> None:
    from deuteron.view import rank_traces

    sources = [str(DDP), str(DDP).replace("rank0", "rank1")]
    job = rank_traces.join([chrome_trace.read_columns(s) for s in sources], sources)
    ref, _ = trace_ref(job.columns, "job", "", job.lane_ranks)
    assert len(ref["steps"]) == 2 and ref["steps_how"].endswith("(rank 0)")
    autograd = [lane["name"] for lane in ref["lanes"] if lane.get("role") == "autograd thread"]
    assert len(autograd) == 2 and {n.split(" · ")[0] for n in autograd} == {"rank 0", "rank 1"}


# --- the page ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ddp_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("steps") / "ddp.html"
    assert run_cli("serve", "--html", str(out), str(DDP), cwd=out.parent).returncode == 0
    return out


def _window(canvas: Any) -> tuple[int, int]:
    return int(canvas.get_attribute("data-start-ns") or 0), int(canvas.get_attribute("data-end-ns") or 0)


def _mark_x(canvas: Any, t: float) -> float:
    """The page x of relative time t in the window drawn (180 px of lane names on the left)."""
    box = canvas.bounding_box()
    t0, t1 = _window(canvas)
    return float(box["x"] + 180 + (t - t0) / (t1 - t0) * (box["width"] - 180))


@pytest.mark.slow
def test_the_page_opens_on_the_steps_and_whole_run_is_a_click_away(watched: Watched, ddp_page: Path) -> None:
    ref = _ref(DDP)
    page = watched.page
    page.goto(ddp_page.as_uri())
    canvas = page.locator("canvas.tl-canvas[data-drawn]")
    canvas.wait_for()
    t0, t1 = ref["step_window"]
    assert _window(canvas) == (round(t0), round(t1))
    assert canvas.get_attribute("data-step-window") == f"{round(t0)}:{round(t1)}"
    steps = page.locator(".tl-mark[data-mark=steps]")
    expect(steps).to_have_attribute("data-count", str(len(ref["steps"])))
    expect(canvas).to_have_attribute("data-steps", "2")
    expect(page.locator(".tl-mark[data-mark=backward]")).to_have_attribute("data-count", "3")
    # The autograd thread is named so; its id is on hover.
    autograd = page.locator('.tl-label[data-role="autograd thread"]')
    expect(autograd.locator("span").first).to_have_text("autograd thread")
    assert "thread 140520405534400" in (autograd.get_attribute("title") or "")
    # The whole run, then back to the steps.
    page.click("button[name=reset]")
    expect(page.locator("button[name=reset]")).to_have_text("whole run")
    expect(canvas).to_have_attribute("data-start-ns", "0")
    expect(canvas).to_have_attribute("data-end-ns", str(round(ref["end_ns"] - ref["start_ns"])))
    page.click("button[name=steps]")
    expect(canvas).to_have_attribute("data-start-ns", str(round(t0)))
    expect(canvas).to_have_attribute("data-end-ns", str(round(t1)))


@pytest.mark.slow
def test_a_click_on_a_step_or_a_backward_pass_zooms_to_it(watched: Watched, ddp_page: Path) -> None:
    ref = _ref(DDP)
    page = watched.page
    page.goto(ddp_page.as_uri())
    canvas = page.locator("canvas.tl-canvas[data-drawn]")
    canvas.wait_for()
    box = canvas.bounding_box()
    assert box is not None
    for kind, (a, b) in (("steps", ref["steps"][1]), ("backward", ref["backward"][2])):
        mark = page.locator(f".tl-mark[data-mark={kind}]")
        y = box["y"] + mark.evaluate("e => e.offsetTop") + 8
        x = _mark_x(canvas, (a + b) / 2)
        page.mouse.move(x, y)
        expect(canvas).to_have_attribute("data-hover", re.compile(r"^(step 2|backward · step 2) · "))
        page.mouse.click(x, y)
        page.wait_for_function(
            "([a, b]) => { const d = document.querySelector('canvas.tl-canvas').dataset;"
            " return +d.startNs < a && +d.endNs > b && +d.endNs - +d.startNs < (b - a) * 1.1; }",
            arg=[a, b],
        )


@pytest.mark.slow
def test_a_window_in_the_address_wins_over_the_steps(watched: Watched, ddp_page: Path) -> None:
    page = watched.page
    page.goto(ddp_page.as_uri() + "#timeline?t0=1000000&t1=2000000")
    canvas = page.locator("canvas.tl-canvas[data-drawn]")
    canvas.wait_for()
    assert _window(canvas) == (1_000_000, 2_000_000)
    # The whole run is kept in the address (the default is the steps): a reload keeps it.
    page.click("button[name=reset]")
    expect(page).to_have_url(re.compile(r"#timeline\?t0=0&t1=\d+$"))
    page.reload()
    expect(page.locator("canvas.tl-canvas[data-drawn]")).to_have_attribute("data-start-ns", "0")
