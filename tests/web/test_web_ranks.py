"""A job's ranks on one timeline in a real browser: the two ranks of the DDP job recorded on two
H100s (tests/fixtures/ranks), stacked under a header per rank that folds to a summary row, with
arrows between the ranks' collectives; and 64 ranks made from them (each a recorded rank's trace,
moved by up to 0.3 ms, one rank's kernels stretched as a straggler), drawn folded in frames whose
times the page reports."""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path

import pytest

from tests.helpers.browser import Watched, expect
from tests.helpers.cli import run_cli
from tests.helpers.rank_traces import unpacked

pytestmark = pytest.mark.slow

FRAME_BUDGET_MS = 50.0  # the issue's bar for 64 ranks' traces


def _open(watched: Watched, page_file: Path) -> tuple[object, object]:
    page = watched.page
    page.goto(page_file.as_uri())
    canvas = page.locator("canvas.tl-canvas")
    canvas.wait_for()
    return page, canvas


def test_two_recorded_ranks_share_one_timeline_and_fold(tmp_path: Path, watched: Watched) -> None:
    folder = unpacked("ddp", tmp_path)
    paths = [str(folder / f"deuteron.rank{r}.chrome_trace") for r in (0, 1)]
    assert run_cli("serve", "--html", "job.html", *paths, cwd=folder).returncode == 0
    page, canvas = _open(watched, folder / "job.html")
    headers = page.locator("button.tl-group")  # type: ignore[attr-defined]
    expect(headers).to_have_count(2)
    assert headers.all_inner_texts() == ["▾ rank 0", "▾ rank 1"]  # what each holds, on hover
    assert [h.get_attribute("title") for h in headers.all()] == [
        "rank 0 — 2 GPU streams, 2 threads",
        "rank 1 — 2 GPU streams, 2 threads",
    ]
    clock = page.locator(".tl-clock").inner_text()  # type: ignore[attr-defined]
    assert clock.startswith("one clock — one host (vm): the ranks share its monotonic clock")
    assert "2 ranks · " in page.locator(".tl-summary").inner_text()  # type: ignore[attr-defined]
    expect(canvas).to_have_attribute("data-shown-lanes", "8")
    assert int(canvas.get_attribute("data-flows-drawn") or 0) > 0  # type: ignore[attr-defined]
    headers.nth(1).click()  # fold rank 1: its lanes go, its header keeps a summary row
    expect(headers.nth(1)).to_have_attribute("aria-expanded", "false")
    expect(canvas).to_have_attribute("data-shown-lanes", "4")
    labels = page.locator(".tl-label > span:first-child").all_inner_texts()  # type: ignore[attr-defined]
    assert len(labels) == 4 and {"main thread", "GPU 0 stream 17", "GPU 0 stream 7"} < set(labels)
    assert not any(label.startswith("rank") for label in labels)  # the rank is in the header


def _many_ranks(folder: Path, ranks: int) -> list[Path]:
    """``ranks`` traces of one job from the two recorded ones (their last 60 ms: about one step, as
    a trace of one step per rank would be): rank r is recorded rank r % 2, its clock moved by up to
    0.3 ms; rank 37's kernels run 1.5x longer (a straggler to see)."""
    recorded = [json.loads((folder / f"deuteron.rank{r}.chrome_trace").read_text()) for r in (0, 1)]
    for doc in recorded:
        last = max(e["ts"] for e in doc["traceEvents"] if "ts" in e)
        doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("ph") == "M" or e["ts"] >= last - 60_000]
        # a flow whose start the cut left out goes whole (a file keeps every flow's two ends)
        starts = {(e.get("cat"), e["id"]) for e in doc["traceEvents"] if e.get("ph") == "s"}
        ends = {(e.get("cat"), e["id"]) for e in doc["traceEvents"] if e.get("ph") in ("f", "t")}
        doc["traceEvents"] = [
            e
            for e in doc["traceEvents"]
            if e.get("ph") not in ("s", "f", "t") or (e.get("cat"), e["id"]) in starts & ends
        ]
    rng = random.Random(7)
    out = []
    for r in range(ranks):
        doc = json.loads(json.dumps(recorded[r % 2]))
        info = doc["otherData"]
        info.update(rank=str(r), world_size=str(ranks), local_rank=str(r % 8))
        info["zero_ns"] += rng.randrange(0, 300_000)
        if r == 37:
            for e in doc["traceEvents"]:
                if e.get("ph") == "X" and e.get("cat") == "kernel":
                    e["dur"] *= 1.5
        path = folder / f"many.rank{r}.chrome_trace"
        path.write_text(json.dumps(doc))
        out.append(path)
    return out


@pytest.mark.broken_profile  # rank 37's kernels stretched 1.5x overlap in their stream's lane, on purpose
def test_64_ranks_start_folded_and_draw_within_the_frame_budget(tmp_path: Path, watched: Watched) -> None:
    folder = unpacked("ddp", tmp_path)
    paths = _many_ranks(folder, 64)
    proc = run_cli("serve", "--html", "many.html", *[p.name for p in paths], cwd=folder, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "deuteron serve: 64 ranks: one timeline: one host (vm)" in proc.stderr
    page, canvas = _open(watched, folder / "many.html")
    headers = page.locator("button.tl-group")  # type: ignore[attr-defined]
    expect(headers).to_have_count(64)
    expect(canvas).to_have_attribute("data-shown-lanes", "0")  # every rank a summary row
    # the links between the ranks' collectives end on the folded ranks' summary rows
    assert int(canvas.get_attribute("data-flows-drawn") or 0) > 0  # type: ignore[attr-defined]
    times = []
    box = canvas.bounding_box()  # type: ignore[attr-defined]
    assert box is not None
    for step in range(12):  # zoom in and out, and pan, reading each frame's time
        page.mouse.move(box["x"] + 300 + 40 * step, box["y"] + 200)  # type: ignore[attr-defined]
        page.mouse.wheel(0, -300 if step < 6 else 300)  # type: ignore[attr-defined]
        page.wait_for_timeout(60)  # type: ignore[attr-defined]
        times.append(float(canvas.get_attribute("data-frame-ms") or "nan"))  # type: ignore[attr-defined]
    headers.nth(37).click()  # the straggler's lanes unfolded among the summaries
    expect(canvas).to_have_attribute("data-shown-lanes", "4")
    page.wait_for_timeout(60)  # type: ignore[attr-defined]
    times.append(float(canvas.get_attribute("data-frame-ms") or "nan"))  # type: ignore[attr-defined]
    median = statistics.median(times)
    print(f"64 ranks: frame times {times} ms, median {median:.1f}")
    assert median < FRAME_BUDGET_MS, times
    assert max(times) < 2 * FRAME_BUDGET_MS, times  # the whole trace at once: every rank's kernels
