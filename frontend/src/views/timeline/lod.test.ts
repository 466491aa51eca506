import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Packed } from "../../data";
import { lodRef, packedEvents, traceRef, TRACE_START, type EventRow } from "../../fixtures";
import { Requests, MAX_PX, OVERVIEW_PX, SETTLE_MS, bucketNs, covers, lodStatus, mergedLabel, mergedWindow, modelFor, serves, stepAcross, syncFolds, windowAsk, windowQuery } from "./lod";
import { WindowLoader, type Fetcher } from "./loader";
import { buildTimeline, countOf, describeEvent, sameEvent, scopeTable, setExpanded, traceSummary, type TimelineModel } from "./model";
import { searchEvents, searchText } from "./search";

// The overview of a 1 ms trace: on main, "a" (0..1 ms) and a merged block of 40 events under it;
// on the stream, a merged block of 1,000 kernels and one real kernel "c".
const OVERVIEW: EventRow[] = [
  [0, 1e6, 0, 0, 0, 1],
  [100e3, 50e3, 1, 0, 1, 40],
  [200e3, 300e3, 2, 1, 0, 1000],
  [700e3, 10e3, 2, 1, 0, 1],
];
// A window [100 µs, 200 µs] of it: "a" again, the block's events one by one (two shown), deeper
// ones too (depth 1 holds "b", depth 1 on the stream a "b" nested in a kernel).
const WINDOW: EventRow[] = [
  [0, 1e6, 0, 0, 0, 1],
  [100e3, 10e3, 1, 0, 1, 1],
  [120e3, 30e3, 1, 0, 1, 1],
  [190e3, 10e3, 2, 1, 0, 1],
];

const lanesOf = (m: TimelineModel): number[][] => m.lanes.map((l) => [l.y, l.height, l.rows.length, Number(l.hidden)]);

describe("models in level of detail", () => {
  it("reads a packed answer without `count` as all real events", () => {
    const m = buildTimeline(traceRef(), packedEvents([[0, 10, 0, 0, 0], [5, 2, 1, 0, 1]]));
    expect(m.count).toBeNull();
    expect([m.merged, m.events, m.n]).toEqual([0, 2, 2]);
    expect([countOf(m, 0), countOf(m, 1)]).toEqual([1, 1]);
    expect(describeEvent(m, 1)[0]).toBe("b");
  });

  it("counts the merged blocks of an overview and the events they stand for", () => {
    const m = buildTimeline(lodRef(), packedEvents(OVERVIEW));
    expect(Array.from(m.count!)).toEqual([1, 40, 1000, 1]);
    expect([m.merged, m.events, m.n]).toEqual([2, 1042, 4]);
  });

  it("lays the overview and a window out alike, from the server's lane depths", () => {
    const ref = lodRef({ lane_depths: [1, 1] }); // the stream nests one level somewhere
    const overview = buildTimeline(ref, packedEvents(OVERVIEW));
    const window = buildTimeline(ref, packedEvents([...WINDOW, [150e3, 5e3, 1, 1, 1]]), overview);
    expect(lanesOf(window)).toEqual(lanesOf(overview));
    expect(window.rows.map((r) => [r.lane, r.depth, r.y])).toEqual(overview.rows.map((r) => [r.lane, r.depth, r.y]));
    expect(window.height).toBe(overview.height);
    expect(overview.lanes[1].rows).toHaveLength(2); // a level with nothing in the overview, kept
    // Without the depths, each model's layout follows its own events: they differ.
    const bare = lodRef({ lane_depths: undefined });
    expect(buildTimeline(bare, packedEvents(OVERVIEW)).height).not.toBe(buildTimeline(bare, packedEvents([...WINDOW, [150e3, 5e3, 1, 1, 1]])).height);
  });

  it("keeps the layouts alike through folds: a window takes the overview's, syncFolds copies them", () => {
    const lanes = [0, 1, 2].map((k) => ({ id: k, name: `rank ${k} · stream`, kind: "stream" as const, rank: String(k) }));
    const ref = lodRef({ lanes, lane_depths: [2, 0, 1] });
    const rows: EventRow[] = [[0, 10, 0, 0, 0], [0, 10, 0, 1, 0], [0, 10, 0, 2, 0]];
    const overview = buildTimeline(ref, packedEvents(rows));
    setExpanded(overview, 1, false);
    const window = buildTimeline(ref, packedEvents(rows.slice(1)), overview);
    expect(window.groups.map((g) => g.expanded)).toEqual([true, false, true]);
    expect(lanesOf(window)).toEqual(lanesOf(overview));
    setExpanded(overview, 0, false);
    syncFolds(overview, window);
    expect(window.groups.map((g) => g.expanded)).toEqual([false, false, true]);
    expect(lanesOf(window)).toEqual(lanesOf(overview));
    expect(window.height).toBe(overview.height);
  });

  it("draws an event deeper than its lane's depth in the lane's last row", () => {
    const m = buildTimeline(lodRef({ lane_depths: [0, 0] }), packedEvents([[0, 10, 0, 0, 0], [2, 3, 1, 0, 2]]));
    expect(m.lanes[0].rows).toHaveLength(1);
    expect(Array.from(m.lanes[0].rows[0].idx)).toEqual([0, 1]);
  });

  it("finds an event again in another model, a merged block only as the same block", () => {
    const overview = buildTimeline(lodRef(), packedEvents(OVERVIEW));
    const window = buildTimeline(lodRef(), packedEvents(WINDOW), overview);
    expect(sameEvent(window, overview, 0)).toBe(0); // "a", in both
    expect(sameEvent(overview, window, 3)).toBe(-1); // a kernel the overview merged
    expect(sameEvent(window, overview, 1)).toBe(-1); // the block of 40: not in the window
    expect(sameEvent(overview, overview, 2)).toBe(2);
    expect(sameEvent(window, overview, -1)).toBe(-1);
  });

  it("leaves the merged blocks out of the scope table", () => {
    const ref = lodRef({ lanes: [{ id: 0, name: "w", kind: "intra", intra: { kernel: "k", cta: 0, sm: 0, unit: "warp", index: 0 } }], cats: ["intra"], lane_depths: [0] });
    const m = buildTimeline(ref, packedEvents([[0, 10, 0, 0, 0, 1], [20, 40, 0, 0, 0, 7], [70, 30, 0, 0, 0, 1]], { cat: new Uint8Array(3) }));
    const [row] = scopeTable(m);
    expect([row.instances, row.min, row.max]).toEqual([2, 10, 30]);
  });
});

describe("texts of level of detail", () => {
  it("says a merged block's events, their span, and the longest one's name", () => {
    const m = buildTimeline(lodRef(), packedEvents(OVERVIEW));
    expect(describeEvent(m, 2)).toEqual(["1,000 events merged: zoom in to see them", "longest: c", "lane: stream 7 (depth 0)", "from: +200.000 µs", "span: 300 µs"]);
    expect(describeEvent(m, 3)[0]).toBe("c");
    expect(mergedLabel(1000)).toBe("1,000 events");
    expect(mergedLabel(5012331)).toBe("5.01M events");
  });

  it("adds the level of detail to the trace's line, only in level of detail", () => {
    expect(traceSummary(lodRef())).toBe("5.01M events · 2 lanes · 0 flows · 1.00 ms · level of detail: 5,012,331 events, drawn by the pixel");
    expect(traceSummary(traceRef({ count: 3 }))).toBe("3 events · 2 lanes · 0 flows · 1.00 ms");
  });

  it("says what is drawn: the overview or a window, its buckets, the events in view", () => {
    expect(lodStatus({ t0: 0, t1: 1e6, px: OVERVIEW_PX }, true, { blocks: 4, events: 1042 }, 5012331)).toBe("overview, 4,096 buckets of 244 ns · 1,042 of 5.01M events in view, as 4 blocks");
    expect(lodStatus({ t0: 1e5, t1: 2e5, px: 4000 }, false, { blocks: 4, events: 4 }, 5012331)).toBe("window +100 µs – +200 µs, 4,000 buckets of 25 ns · 4 of 5.01M events in view, as 4 blocks");
  });

  it("counts the search's matches among the events loaded", () => {
    expect(searchText("gemm", 3, 4096, -1, "loaded event")).toBe("3 of 4,096 loaded events match");
    expect(searchText("gemm", 0, 4096, -1, "loaded event")).toBe("no loaded event matches 'gemm'");
    expect(searchText("gemm", 3, 4096)).toBe("3 of 4,096 events match");
  });

  it("zooms onto a merged block's extent with a margin", () => {
    expect(mergedWindow(200e3, 300e3, 1e6)).toEqual([185e3, 515e3]);
    expect(mergedWindow(0, 0, 1e6)).toEqual([-50, 50]); // at least the deepest zoom, 100 ns
  });
});

describe("which window to fetch", () => {
  const SPAN = 1e6;
  const overview = { t0: 0, t1: SPAN, px: OVERVIEW_PX };

  it("needs none while the overview's buckets are no wider than a pixel of the plot", () => {
    expect(bucketNs(overview)).toBeCloseTo(244.14, 2);
    expect(windowAsk(0, SPAN, SPAN, 1180, 1000, [overview])).toBeNull(); // 1000 ns a pixel
    expect(windowAsk(-50, 1.05e6, SPAN, 1180, 1000, [overview])).toBeNull(); // the slack past the ends
    expect(windowAsk(0, 250e3, SPAN, 1180, 1000, [overview])).toBeNull(); // 250 ns a pixel
  });

  it("asks for the view widened by half its width each side, 2 buckets per css px of the canvas", () => {
    // 100 ns a pixel: the overview's 244 ns buckets are too wide.
    expect(windowAsk(400e3, 500e3, SPAN, 1180, 1000, [overview])).toEqual({ t0: 350e3, t1: 550e3, px: 4720 });
    expect(windowAsk(0, 200e3, SPAN, 1180, 1000, [overview])).toEqual({ t0: 0, t1: 300e3, px: 3540 });
  });

  it("clamps the window to the trace, to whole ns, and to MAX_PX buckets", () => {
    expect(windowAsk(-10e3, 40e3, SPAN, 1180, 1000, [overview])).toEqual({ t0: 0, t1: 65e3, px: 3068 });
    expect(windowAsk(950e3 + 0.4, 1000e3 + 0.4, SPAN, 1180, 1000, [overview])).toEqual({ t0: 925e3, t1: SPAN, px: 3540 });
    expect(windowAsk(400e3, 500e3, SPAN, 8000, 7820, [overview])).toEqual({ t0: 350e3, t1: 550e3, px: MAX_PX });
  });

  it("needs none while the loaded window covers the view at a pixel's resolution, or is exact", () => {
    const loaded = { t0: 350e3, t1: 550e3, px: 4720 }; // 42 ns buckets
    expect(windowAsk(420e3, 520e3, SPAN, 1180, 1000, [overview, loaded])).toBeNull();
    expect(windowAsk(450e3, 460e3, SPAN, 1180, 1000, [overview, loaded])).toEqual({ t0: 445e3, t1: 465e3, px: 4720 }); // 10 ns a pixel
    expect(windowAsk(450e3, 460e3, SPAN, 1180, 1000, [overview, { ...loaded, exact: true }])).toBeNull();
    expect(windowAsk(300e3, 400e3, SPAN, 1180, 1000, [overview, loaded])).toEqual({ t0: 250e3, t1: 450e3, px: 4720 }); // panned off it
  });

  it("needs none while the window on its way serves the view, nor when it would ask for one held", () => {
    const pending = { t0: 350e3, t1: 550e3, px: 4720 };
    expect(windowAsk(400e3, 500e3, SPAN, 1180, 1000, [overview, pending])).toBeNull();
    // 5 ns a pixel on a very wide canvas: MAX_PX buckets of 10 ns are the best to be had.
    const best = windowAsk(400e3, 500e3, SPAN, 20000, 19820, [overview]);
    expect(best).toEqual({ t0: 350e3, t1: 550e3, px: MAX_PX });
    expect(windowAsk(400e3, 500e3, SPAN, 20000, 19820, [overview, best!])).toBeNull();
  });

  it("covers what lies over the trace, and serves it at a fine enough bucket", () => {
    expect(covers({ t0: 0, t1: SPAN, px: 1 }, -5e3, SPAN + 5e3, SPAN)).toBe(true);
    expect(covers({ t0: 10, t1: SPAN, px: 1 }, 0, 100, SPAN)).toBe(false);
    expect(serves({ t0: 0, t1: 1000, px: 10 }, 0, 1000, SPAN, 10)).toBe(true); // 100 ns buckets, 100 ns a pixel
    expect(serves({ t0: 0, t1: 1000, px: 9 }, 0, 1000, SPAN, 10)).toBe(false);
  });

  it("spells the window's address", () => {
    expect(windowQuery("/api/trace/0/window.bin", { t0: 350e3, t1: 550e3, px: 4720 })).toBe("/api/trace/0/window.bin?t0=350000&t1=550000&px=4720");
    expect(windowQuery("/w.bin?trace=2", { t0: 0, t1: 1, px: 1 })).toBe("/w.bin?trace=2&t0=0&t1=1&px=1");
  });

  it("draws the window's model when the view lies inside it, else the overview's", () => {
    const detail = { t0: 350e3, t1: 550e3, px: 4720, model: "window" };
    expect(modelFor("overview", detail, 400e3, 500e3, SPAN)).toBe("window");
    expect(modelFor("overview", detail, 300e3, 400e3, SPAN)).toBe("overview");
    expect(modelFor("overview", null, 400e3, 500e3, SPAN)).toBe("overview");
    expect(modelFor("overview", { ...detail, t0: 0, t1: SPAN }, -50, SPAN + 50, SPAN)).toBe("window");
  });
});

describe("Requests", () => {
  const ask = { t0: 0, t1: 1, px: 1 };

  it("takes only the latest request's answer, once", () => {
    const r = new Requests();
    const first = r.begin(ask);
    const second = r.begin({ ...ask, px: 2 });
    expect(r.pending).toEqual({ ...ask, px: 2 });
    expect(r.settle(first)).toBe(false); // stale: dropped
    expect(r.pending).not.toBeNull();
    expect(r.settle(second)).toBe(true);
    expect(r.pending).toBeNull();
    expect(r.settle(second)).toBe(false); // taken already
  });

  it("drops every answer once cancelled", () => {
    const r = new Requests();
    const t = r.begin(ask);
    r.cancel();
    expect(r.settle(t)).toBe(false);
    expect(r.pending).toBeNull();
    expect(r.settle(0)).toBe(false);
  });
});

describe("WindowLoader", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());
  const flush = async (): Promise<void> => {
    for (let k = 0; k < 5; k++) await Promise.resolve();
  };

  interface Call {
    url: string;
    signal: AbortSignal;
    resolve: (p: Packed) => void;
    reject: (e: unknown) => void;
  }

  /** A loader over the overview whose fetches wait to be answered (`abortable`: an abort rejects
   * them, as fetch does). */
  function setup(abortable = true): { loader: WindowLoader; calls: Call[]; changes: () => number; life: AbortController } {
    const overview = buildTimeline(lodRef(), packedEvents(OVERVIEW));
    const calls: Call[] = [];
    const fetcher: Fetcher = (url, signal) =>
      new Promise((resolve, reject) => {
        calls.push({ url, signal, resolve, reject });
        if (abortable) signal.addEventListener("abort", () => reject(new DOMException("The operation was aborted.", "AbortError")));
      });
    let changes = 0;
    const life = new AbortController();
    return { loader: new WindowLoader(overview, fetcher, () => changes++, life.signal), calls, changes: () => changes, life };
  }

  it("asks once the view has been still for SETTLE_MS, for where it settled", () => {
    const { loader, calls } = setup();
    loader.viewChanged(400e3, 500e3, 1180, 1000);
    vi.advanceTimersByTime(SETTLE_MS - 1);
    loader.viewChanged(410e3, 510e3, 1180, 1000); // still moving
    vi.advanceTimersByTime(SETTLE_MS - 1);
    expect(calls).toHaveLength(0);
    vi.advanceTimersByTime(1);
    expect(calls.map((c) => c.url)).toEqual(["/api/trace/0/window.bin?t0=360000&t1=560000&px=4720"]);
    expect(loader.loading).toEqual({ t0: 360e3, t1: 560e3, px: 4720 });
    loader.viewChanged(0, 1e6, 1180, 1000); // the whole trace: the overview serves it
    vi.advanceTimersByTime(SETTLE_MS);
    expect(calls).toHaveLength(1);
  });

  it("builds the window's model with the overview's folds when the answer comes", async () => {
    const { loader, calls, changes } = setup();
    setExpanded(loader.overview, 0, false); // no group in this trace: nothing to fold, nothing breaks
    expect(loader.check(100e3, 200e3, 1180, 1000)).toEqual({ t0: 50e3, t1: 250e3, px: 4720 });
    expect(changes()).toBe(1); // loading
    calls[0].resolve(packedEvents(WINDOW));
    await flush();
    expect(changes()).toBe(2);
    expect(loader.loading).toBeNull();
    expect(loader.detail).toMatchObject({ t0: 50e3, t1: 250e3, px: 4720, exact: true });
    expect(loader.detail!.model.height).toBe(loader.overview.height);
    expect(loader.check(120e3, 130e3, 1180, 1000)).toBeNull(); // exact: serves any zoom inside it
  });

  it("aborts the request a newer one replaces, and says nothing of its failure", async () => {
    const { loader, calls } = setup();
    loader.check(400e3, 500e3, 1180, 1000);
    loader.check(100e3, 200e3, 1180, 1000);
    expect(calls[0].signal.aborted).toBe(true);
    expect(calls[1].signal.aborted).toBe(false);
    await flush();
    expect(loader.error).toBeNull();
    expect(loader.loading).toEqual({ t0: 50e3, t1: 250e3, px: 4720 });
  });

  it("drops a stale answer, whether it comes before or after the latest one's", async () => {
    const { loader, calls } = setup(false);
    loader.check(400e3, 500e3, 1180, 1000);
    loader.check(100e3, 200e3, 1180, 1000);
    loader.check(700e3, 800e3, 1180, 1000);
    calls[1].resolve(packedEvents(WINDOW)); // stale, first
    await flush();
    expect(loader.detail).toBeNull();
    calls[2].resolve(packedEvents([[700e3, 10e3, 2, 1, 0, 1]]));
    calls[0].resolve(packedEvents(WINDOW)); // stale, last
    await flush();
    expect(loader.detail).toMatchObject({ t0: 650e3, t1: 850e3 });
    expect(loader.detail!.model.n).toBe(1);
  });

  it("says the latest request's failure, until another request is made", async () => {
    const { loader, calls } = setup();
    loader.check(400e3, 500e3, 1180, 1000);
    calls[0].reject(new Error("/api/trace/0/window.bin?…: 500 store gone"));
    await flush();
    expect(loader.error).toBe("/api/trace/0/window.bin?…: 500 store gone");
    expect(loader.loading).toBeNull();
    loader.check(410e3, 510e3, 1180, 1000);
    expect(loader.error).toBeNull();
    calls[1].reject(new Error("again"));
    await flush();
    expect(loader.error).toBe("again");
    expect(loader.check(0, 1e6, 1180, 1000)).toBeNull(); // the overview serves the whole trace
    expect(loader.error).toBeNull();
  });

  it("stops when the view goes away: no fetch after, the one in flight aborted", () => {
    const { loader, calls, life } = setup();
    loader.check(400e3, 500e3, 1180, 1000);
    loader.viewChanged(100e3, 200e3, 1180, 1000);
    life.abort();
    vi.advanceTimersByTime(SETTLE_MS * 2);
    expect(calls).toHaveLength(1);
    expect(calls[0].signal.aborted).toBe(true);
    expect(loader.loading).toBeNull();
    expect(loader.check(100e3, 200e3, 1180, 1000)).toBeNull();
  });

  it("fetches nothing for a trace without windows", () => {
    const overview = buildTimeline(traceRef(), packedEvents(OVERVIEW));
    const fetcher = vi.fn<Fetcher>();
    const loader = new WindowLoader(overview, fetcher, () => {}, new AbortController().signal);
    expect(loader.check(100e3, 200e3, 1180, 1000)).toBeNull();
    expect(fetcher).not.toHaveBeenCalled();
  });
});

describe("stepAcross", () => {
  const overview = buildTimeline(lodRef(), packedEvents(OVERVIEW)); // ids: a, b×40, c×1000, c
  const window = buildTimeline(lodRef(), packedEvents(WINDOW), overview); // ids: a, b, b, c
  const byName = (k: number) => (m: TimelineModel) => searchEvents(m.name, Uint8Array.from([0, 1, 2], (n) => (n === k ? 1 : 0)));
  const C = byName(2);
  const B = byName(1);

  it("starts from the overview's first (last) match when nothing is selected", () => {
    expect(stepAcross(overview, window, C, null, 1)).toEqual({ m: overview, i: 2 });
    expect(stepAcross(overview, window, C, null, -1)).toEqual({ m: overview, i: 3 });
  });

  it("steps through the loaded window's matches, then on in the overview past the selected one's start", () => {
    expect(stepAcross(overview, window, B, { m: window, i: 1 }, 1)).toEqual({ m: window, i: 2 });
    expect(stepAcross(overview, window, B, { m: window, i: 2 }, -1)).toEqual({ m: window, i: 1 });
    expect(stepAcross(overview, window, C, { m: window, i: 3 }, 1)).toEqual({ m: overview, i: 2 }); // the block at 200 µs
    expect(stepAcross(overview, window, C, { m: window, i: 3 }, -1)).toEqual({ m: overview, i: 3 }); // none before: wraps
  });

  it("steps by id in the overview when the selected event is there", () => {
    expect(stepAcross(overview, window, C, { m: overview, i: 2 }, 1)).toEqual({ m: overview, i: 3 });
    expect(stepAcross(overview, null, C, { m: overview, i: 3 }, 1)).toEqual({ m: overview, i: 2 });
    expect(stepAcross(overview, window, byName(9), null, 1)).toBeNull();
  });
});

it("keeps starts absolute in the fixtures, as the server sends them", () => {
  expect(packedEvents([[5, 1, 0, 0, 0]]).start[0]).toBe(TRACE_START + 5);
});
