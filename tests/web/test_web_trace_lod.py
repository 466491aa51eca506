"""Level of detail in a real browser, both halves together: a job of 64 ranks' traces made from the
two recorded DDP ranks (tests/fixtures/ranks, about 5 MB in all), served by a real
``deuteron serve --lod`` with its trace store in a cache folder of the test's own. The page paints
the overview first (timed from navigation), its merged blocks say how many events they hold and
zoom onto them when clicked, and the window fetched there holds those events one by one; the same
job served without ``--lod`` (it is under LOD_EVENTS) sends and draws every event; a bad window
query is a 400 of one line."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np
import orjson
import pytest

from deuteron.render.web.packed import unpack
from deuteron.render.web.trace_window import LOD_EVENTS
from tests.helpers.browser import Watched, expect
from tests.helpers.cli import serving
from tests.helpers.rank_traces import scaled_job

RANKS = 64
TOTAL_BYTES = 5_000_000
FIRST_PAINT_S = 5.0  # from navigation to the overview drawn, for this job
LABEL_W = 180  # px of lane names left of the plot (frontend/src/views/timeline/model.ts)
ROW_H = 16  # px per depth row (ditto)
WINDOWS = "**/api/trace/0/window.bin*"
# When the canvas first says what it draws (view.ts draws the first frame as it is built).
FIRST_PAINT = """
new MutationObserver((_, seen) => {
  if (document.querySelector("canvas.tl-canvas[data-lod]")) {
    window.__firstPaintMs = performance.now();
    seen.disconnect();
  }
}).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-lod"] });
"""


@dataclass
class Job:
    folder: Path
    names: list[str]
    events: int  # complete events ("ph": "X") in all the ranks' files


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Job:
    folder = tmp_path_factory.mktemp("scaled")
    paths = scaled_job(folder, RANKS, TOTAL_BYTES)
    events = sum(
        sum(1 for e in orjson.loads(p.read_bytes())["traceEvents"] if e.get("ph") == "X") for p in paths
    )
    assert events < LOD_EVENTS  # shown whole without --lod
    return Job(folder, [p.name for p in paths], events)


@pytest.fixture(scope="module")
def lod_served(job: Job, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``deuteron serve --lod`` of the job (its address) and its cache folder, empty at the start."""
    cache = tmp_path_factory.mktemp("cache")
    with serving("--lod", *job.names, cwd=job.folder, env={"DEUTERON_CACHE_DIR": str(cache)}) as url:
        yield url, cache


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _window_of(url: str) -> tuple[float, float, int]:
    q = parse_qs(urlsplit(url).query)
    return float(q["t0"][0]), float(q["t1"][0]), int(q["px"][0])


@pytest.mark.slow
def test_the_overview_paints_first_and_a_merged_block_zooms_into_its_events(
    job: Job, lod_served: tuple[str, Path], watched: Watched
) -> None:
    url, cache = lod_served
    assert len(list(cache.glob("*.duckdb"))) == 1  # the store, kept where DEUTERON_CACHE_DIR says
    status, body = _get(url + "api/index.json")
    assert status == 200
    ref = orjson.loads(body)["traces"][0]
    assert ref["lod"]["events"] == job.events and ref["job"]["ranks"][-1]["rank"] == str(RANKS - 1)
    span = ref["end_ns"] - ref["start_ns"]
    page = watched.page
    page.add_init_script(FIRST_PAINT)
    canvas = page.locator("canvas.tl-canvas")
    with page.expect_response(lambda r: r.url.endswith("/api/trace/0.bin")) as answer:
        began = time.perf_counter()
        page.goto(url + "#timeline")
        expect(canvas).to_have_attribute("data-lod", "overview", timeout=3 * FIRST_PAINT_S * 1000)
        waited = time.perf_counter() - began
    painted = float(page.evaluate("window.__firstPaintMs")) / 1000
    print(
        f"{RANKS} ranks, {job.events:,} events: first paint {painted:.2f} s from navigation ({waited:.2f} s)"
    )
    assert painted < FIRST_PAINT_S

    # The overview: every event in view, the narrow ones merged into blocks that count theirs.
    overview = unpack(answer.value.body())
    count = overview["count"]
    assert int(count.sum()) == job.events and int((count > 1).sum()) > 0
    expect(canvas).to_have_attribute("data-events", str(job.events))
    # Every rank starts folded: what is drawn is each one's summary row (its GPU streams' outermost
    # events), counted with the events its merged blocks hold.
    expect(canvas).to_have_attribute("data-shown-lanes", "0")
    folded = int(canvas.get_attribute("data-drawn-events") or 0)
    assert 0 < folded < job.events and int(canvas.get_attribute("data-drawn") or 0) > 0
    assert canvas.get_attribute("data-window") is None
    expect(page.locator(".tl-lod")).to_contain_text("overview, 4,096 buckets")

    # The biggest merged block; its rank unfolded so that its lane is drawn.
    i = int(np.argmax(count))
    lane, depth, many = int(overview["lane"][i]), int(overview["depth"][i]), int(count[i])
    start, dur = float(overview["start"][i]) - ref["start_ns"], float(overview["dur"][i])
    rank = ref["lanes"][lane]["rank"]
    header = page.locator("button.tl-group").nth(int(rank))
    expect(header).to_have_text(f"▸ rank {rank}")
    header.click()
    expect(header).to_have_attribute("aria-expanded", "true")
    expect(canvas).not_to_have_attribute("data-drawn-events", str(folded))  # its lanes' events too
    overview_drawn = int(canvas.get_attribute("data-drawn-events") or 0)
    label = page.locator(f'.tl-label[data-lane="{lane}"]')
    row_y = label.evaluate("e => e.offsetTop") + depth * ROW_H + ROW_H / 2  # the gutter lies over the canvas

    # Zoomed through the address onto the block, its window held back: the overview is drawn
    # zoomed meanwhile, the block wide, striped, and said to hold its events.
    held: list[Any] = []
    page.route(WINDOWS, lambda route: held.append(route))
    centre, width = start + dur / 2, max(dur * 20, 2000.0)
    zoomed = f"#timeline?t0={round(centre - width / 2)}&t1={round(centre + width / 2)}"
    page.evaluate("h => { location.hash = h; }", zoomed)  # as a link pasted into the address bar
    expect(canvas).to_have_attribute("data-loading", "")
    expect(canvas).to_have_attribute("data-lod", "overview")
    t0, t1 = (float(canvas.get_attribute(f"data-{end}-ns") or 0) for end in ("start", "end"))
    assert t1 - t0 < span / 100
    box = canvas.bounding_box()
    assert box is not None
    x = box["x"] + LABEL_W + (centre - t0) / (t1 - t0) * (box["width"] - LABEL_W)
    page.mouse.move(x, box["y"] + row_y)
    tip = page.locator(".tl-box .tip")
    expect(tip).to_contain_text(f"{many:,} events merged: zoom in to see them")
    watched.shot("merged-block")

    # A click zooms onto the block. The held window would not serve that zoom (it may merge
    # events, for all the page knows): a window of the block is asked for instead, replacing it.
    def deep(r: Any) -> bool:
        if "/window.bin?" not in r.url:
            return False
        w0, w1, _ = _window_of(r.url)
        return w1 - w0 < 5 * max(dur, 100.0)  # the click's window, not the held one

    page.mouse.click(x, box["y"] + row_y)
    for _ in range(100):  # the window of the block, asked for once the view is still (lod.ts)
        if len(held) == 2:
            break
        page.wait_for_timeout(20)
    assert len(held) == 2 and deep(held[1].request), [r.request.url for r in held]
    page.unroute(WINDOWS)
    with page.expect_response(deep) as fetched:
        for route in held:
            try:
                route.continue_()
            except Exception:  # noqa: BLE001 - the page aborted the first: nothing to continue
                pass
    expect(canvas).to_have_attribute("data-lod", "window")
    expect(canvas).not_to_have_attribute("data-loading", "")
    w0, w1, px = _window_of(fetched.value.url)
    q = parse_qs(urlsplit(fetched.value.url).query)
    expect(canvas).to_have_attribute("data-window", f"{q['t0'][0]}:{q['t1'][0]}:{q['px'][0]}")
    assert w0 <= start and start + dur <= w1 and w1 - w0 < span
    window = unpack(fetched.value.body())
    wc = window["count"]
    merged, blocks = int((wc > 1).sum()), int((count > 1).sum())
    print(f"merged blocks: {blocks} in the overview, {merged} in the window of {w1 - w0:.0f} ns")
    assert merged < blocks
    ws = window["start"] - ref["start_ns"]
    mine = (window["lane"] == lane) & (window["depth"] == depth)
    mine &= (ws >= start) & (ws + window["dur"] <= start + dur)
    assert int(mine.sum()) >= many and bool(np.all(wc[mine] == 1))  # the block's events, each itself
    drawn = int(canvas.get_attribute("data-drawn-events") or 0)
    assert many <= drawn < overview_drawn
    expect(page.locator(".tl-lod")).to_contain_text("window +")

    page.click("button[name=reset]")  # the whole trace again: the overview serves it
    expect(canvas).to_have_attribute("data-lod", "overview")
    expect(canvas).to_have_attribute("data-drawn-events", str(overview_drawn))


def test_without_lod_the_page_gets_and_draws_every_event(job: Job, tmp_path: Path, watched: Watched) -> None:
    cache = tmp_path / "cache"
    with serving(*job.names, cwd=job.folder, env={"DEUTERON_CACHE_DIR": str(cache)}) as url:
        page = watched.page
        page.goto(url + "#timeline")
        canvas = page.locator("canvas.tl-canvas")
        expect(canvas).to_have_attribute("data-events", str(job.events))
        whole = unpack(_get(url + "api/trace/0.bin")[1])
        assert len(whole["start"]) == job.events and "count" not in whole  # every event, none merged
        assert int(canvas.get_attribute("data-drawn") or 0) > 0
        assert canvas.get_attribute("data-lod") is None
        expect(page.locator(".tl-lod-bar")).to_have_count(0)
        end = canvas.get_attribute("data-end-ns") or ""
        page.click("button[name=zoom-in]")
        expect(canvas).not_to_have_attribute("data-end-ns", end)
    assert not [r for r in watched.requests if "window.bin" in r]
    assert not cache.exists() or not any(cache.iterdir())  # no store without level of detail


def test_a_bad_window_is_a_400_of_one_line(lod_served: tuple[str, Path]) -> None:
    url, _ = lod_served
    status, body = _get(url + "api/trace/0/window.bin?t0=0&t1=oops&px=100")
    assert (status, body) == (400, b"bad window: t1 is not a number: 'oops'\n")
    status, body = _get(url + "api/trace/0/window.bin?t0=5&t1=1&px=100")
    assert status == 400 and body.count(b"\n") == 1 and body.startswith(b"bad window: t1 (1) must be greater")
    status, body = _get(url + "api/trace/0/window.bin?t0=0&t1=1000&px=10")
    assert status == 200 and "count" in unpack(body)
