import { describe, expect, it } from "vitest";
import type { Packed } from "../../data";
import type { TraceRef } from "../../types";
import { colourOf } from "../../format";
import { TRACE_START, traceRef } from "../../fixtures";
import {
  AXIS_H,
  GROUP_H,
  INTRA_GAP,
  LANE_GAP,
  MAX_HEIGHT,
  ROW_H,
  buildTimeline,
  clampWindow,
  describeEvent,
  fullName,
  shownName,
  eventAt,
  groupAt,
  groupLabel,
  laneLabel,
  levelCap,
  lowerBound,
  median,
  MIN_SPAN,
  niceStep,
  scopeTable,
  setExpanded,
  spanColour,
  tickLabel,
  traceSummary,
} from "./model";

const S = TRACE_START; // the trace's first start, absolute ns (fixtures.traceRef's)

function ref(extra: Partial<TraceRef> = {}): TraceRef {
  return traceRef({
    name: "new.chrome_trace",
    source: "runs/new.chrome_trace",
    names: ["step", "matmul", "kernel"],
    count: 4,
    flows: 2,
    end_ns: S + 200e6,
    ...extra,
  });
}

// step (200 ms) on main holds matmul at depth 1; two kernels on the stream; two launch→kernel
// arrows, given out of order.
function packed(): Packed {
  return {
    start: Float64Array.of(S, S + 1e6, S + 1.5e6, S + 127055123),
    dur: Float64Array.of(200e6, 0.5e6, 2000, 3e6),
    name: Uint32Array.of(0, 1, 2, 2),
    lane: Uint16Array.of(0, 0, 1, 1),
    cat: Uint8Array.of(0, 0, 1, 1),
    depth: Uint8Array.of(0, 1, 0, 0),
    flow_from_ns: Float64Array.of(S + 120e6, S + 1000100),
    flow_to_ns: Float64Array.of(S + 127055123, S + 1.5e6),
    flow_from_lane: Uint16Array.of(0, 0),
    flow_to_lane: Uint16Array.of(1, 1),
  };
}

describe("buildTimeline", () => {
  it("makes starts relative to the trace's start and the span its end", () => {
    const m = buildTimeline(ref(), packed());
    expect(m.n).toBe(4);
    expect(Array.from(m.start)).toEqual([0, 1e6, 1.5e6, 127055123]);
    expect(m.span).toBe(200e6);
    expect(m.capped).toBe(0);
  });

  it("gives each lane one row per depth, stacked below the axis with a gap between lanes", () => {
    const m = buildTimeline(ref(), packed());
    expect(m.lanes.map((l) => [l.name, l.kind, l.y, l.height, l.rows.length])).toEqual([
      ["main", "thread", AXIS_H + 4, 2 * ROW_H, 2],
      ["stream 7", "stream", AXIS_H + 4 + 2 * ROW_H + LANE_GAP, ROW_H, 1],
    ]);
    expect(m.rows.map((r) => [r.lane, r.depth, r.y])).toEqual([
      [0, 0, 28],
      [0, 1, 44],
      [1, 0, 68],
    ]);
    expect(m.height).toBe(68 + 16 + 8);
  });

  it("keeps each row's events in start order with their ends and the running maximum of ends", () => {
    const m = buildTimeline(ref(), packed());
    const stream = m.rows[2];
    expect(Array.from(stream.idx)).toEqual([2, 3]);
    expect(Array.from(stream.start)).toEqual([1.5e6, 127055123]);
    expect(Array.from(stream.end)).toEqual([1502000, 130055123]);
    expect(Array.from(stream.maxEnd)).toEqual([1502000, 130055123]);
    expect(Array.from(m.rows[1].idx)).toEqual([1]);
  });

  it("makes the running maximum monotone when a short event follows a long one", () => {
    const m = buildTimeline(ref({ lanes: [{ id: 0, name: "main", kind: "thread" }] }), {
      start: Float64Array.of(S, S + 10, S + 20),
      dur: Float64Array.of(1000, 5, 5),
    });
    expect(Array.from(m.rows[0].end)).toEqual([1000, 15, 25]);
    expect(Array.from(m.rows[0].maxEnd)).toEqual([1000, 1000, 1000]);
  });

  it("sorts the arrows by start, relative to the trace's start, with the longest gap", () => {
    const f = buildTimeline(ref(), packed()).flows;
    expect(f.n).toBe(2);
    expect(Array.from(f.from)).toEqual([1000100, 120e6]);
    expect(Array.from(f.to)).toEqual([1.5e6, 127055123]);
    expect(Array.from(f.fromLane)).toEqual([0, 0]);
    expect(Array.from(f.toLane)).toEqual([1, 1]);
    expect(f.maxGap).toBe(7055123);
  });

  it("reads a trace with only starts: zero durations, all in lane 0 at depth 0, no arrows", () => {
    const m = buildTimeline(ref({ lanes: [] }), { start: Float64Array.of(S, S + 5) });
    expect(Array.from(m.dur)).toEqual([0, 0]);
    expect(m.lanes.map((l) => [l.name, l.kind])).toEqual([["lane 0", "thread"]]);
    expect(Array.from(m.rows[0].idx)).toEqual([0, 1]);
    expect(m.flows.n).toBe(0);
    expect(m.flows.maxGap).toBe(0);
  });

  it("draws a negative duration as a point", () => {
    const m = buildTimeline(ref(), { start: Float64Array.of(S + 10), dur: Float64Array.of(-50) });
    expect(Array.from(m.rows[0].end)).toEqual([10]);
  });

  it("files events of a lane past the last one in the last lane", () => {
    const m = buildTimeline(ref(), { start: Float64Array.of(S, S + 1), lane: Uint16Array.of(0, 9) });
    expect(Array.from(m.lanes[1].rows[0].idx)).toEqual([1]);
  });

  it("gives an empty trace one empty row and a span of at least 1 ns", () => {
    const m = buildTimeline(ref({ count: 0, end_ns: S }), { start: new Float64Array(0) });
    expect(m.n).toBe(0);
    expect(m.rows.length).toBe(2);
    expect(m.rows.every((r) => r.idx.length === 0)).toBe(true);
    expect(m.span).toBe(1);
  });

  it("caps the levels per lane when the trace is too deep to draw whole", () => {
    // Three lanes with an event 200 levels deep: 603 rows wanted, 500 drawable, so each lane
    // keeps floor(500 / 3) = 166 levels and the deeper event sits in the last.
    const lanes = [0, 1, 2].map((id) => ({ id, name: `t${id}`, kind: "thread" as const }));
    const m = buildTimeline(ref({ lanes }), {
      start: Float64Array.of(S, S, S),
      dur: Float64Array.of(10, 10, 10),
      lane: Uint16Array.of(0, 1, 2),
      depth: Uint8Array.of(200, 200, 200),
    });
    expect(m.capped).toBe(166);
    expect(m.lanes.map((l) => l.rows.length)).toEqual([166, 166, 166]);
    expect(m.lanes[0].height).toBe(166 * ROW_H);
    expect(Array.from(m.lanes[0].rows[165].idx)).toEqual([0]);
  });
});

describe("lowerBound", () => {
  const a = Float64Array.of(1, 2, 2, 3);

  it("finds the first index at or after t", () => {
    expect(lowerBound(a, 2)).toBe(1);
    expect(lowerBound(a, 2.5)).toBe(3);
    expect(lowerBound(a, 0)).toBe(0);
    expect(lowerBound(a, 4)).toBe(4);
    expect(lowerBound(a, -Infinity)).toBe(0);
    expect(lowerBound(a, Infinity)).toBe(4);
  });

  it("searches only between lo and hi", () => {
    expect(lowerBound(a, 0, 2)).toBe(2);
    expect(lowerBound(a, 3, 0, 2)).toBe(2);
  });

  it("gives 0 in an empty array", () => {
    expect(lowerBound(new Float64Array(0), 5)).toBe(0);
  });
});

describe("eventAt", () => {
  const m = buildTimeline(ref(), packed());
  const stream = m.rows[2];

  it("finds the event under a time", () => {
    expect(eventAt(m, m.rows[0], 250, 0)).toBe(0);
    expect(eventAt(m, stream, 1501000, 0)).toBe(2);
    expect(eventAt(m, stream, 127055123, 0)).toBe(3);
  });

  it("finds nothing between events unless within the tolerance; the nearest first", () => {
    expect(eventAt(m, stream, 50e6, 0)).toBe(-1);
    expect(eventAt(m, stream, 2e6, 497999)).toBe(-1);
    expect(eventAt(m, stream, 2e6, 498000)).toBe(2);
    expect(eventAt(m, stream, 127e6, 55123)).toBe(3);
  });

  it("prefers the narrowest of overlapping events", () => {
    const one = { lanes: [{ id: 0, name: "main", kind: "thread" as const }] };
    const o = buildTimeline(ref(one), { start: Float64Array.of(S, S + 10), dur: Float64Array.of(100, 20) });
    expect(eventAt(o, o.rows[0], 15, 0)).toBe(1);
    expect(eventAt(o, o.rows[0], 50, 0)).toBe(0);
  });

  it("finds nothing in an empty row", () => {
    const e = buildTimeline(ref({ end_ns: S }), { start: new Float64Array(0) });
    expect(eventAt(e, e.rows[0], 0, 1e9)).toBe(-1);
  });
});

describe("niceStep", () => {
  it("rounds up to 1, 2 or 5 times a power of ten", () => {
    expect(niceStep(1)).toBe(1);
    expect(niceStep(1.5)).toBe(2);
    expect(niceStep(3)).toBe(5);
    expect(niceStep(7)).toBe(10);
    expect(niceStep(100)).toBe(100);
    expect(niceStep(120)).toBe(200);
    expect(niceStep(2.5e8)).toBe(5e8);
    expect(niceStep(0.03)).toBeCloseTo(0.05, 15);
  });

  it("gives a nanosecond's billionth for zero or negative steps", () => {
    expect(niceStep(0)).toBe(1e-9);
    expect(niceStep(-5)).toBe(1e-9);
  });
});

describe("tickLabel", () => {
  it("shows as many decimals as the tick step needs", () => {
    expect(tickLabel(127055000, 5000, [1e6, "ms"])).toBe("127.055 ms");
    expect(tickLabel(127060000, 5000, [1e6, "ms"])).toBe("127.060 ms");
    expect(tickLabel(0, 1e9, [1e9, "s"])).toBe("0 s");
    expect(tickLabel(4000, 2000, [1e3, "µs"])).toBe("4 µs");
    expect(tickLabel(500, 100, [1, "ns"])).toBe("500 ns");
  });

  it("stops at 9 decimals", () => {
    expect(tickLabel(1, 1e-12, [1e9, "s"])).toBe("0.000000001 s");
  });
});

describe("clampWindow", () => {
  it("keeps a window inside the trace as it is", () => {
    expect(clampWindow(0, 1000, 1000)).toEqual([0, 1000]);
    expect(clampWindow(200, 300, 1000)).toEqual([200, 300]);
  });

  it("widens a window narrower than the deepest zoom", () => {
    expect(MIN_SPAN).toBe(100);
    expect(clampWindow(200, 250, 1000)).toEqual([200, 300]);
  });

  it("limits a window to the trace plus 5%, starting at most 5% before it", () => {
    expect(clampWindow(-5000, 5000, 1000)).toEqual([-50, 1000]);
  });

  it("lets a window hang at most half its width past either end", () => {
    expect(clampWindow(990, 1100, 1000)).toEqual([945, 1055]);
    expect(clampWindow(-300, -200, 1000)).toEqual([-50, 50]);
  });

  it("gives a window of no width (or NaN) 1 ns", () => {
    expect(clampWindow(0, NaN, 1000)).toEqual([0, 1]);
    expect(clampWindow(0, 0, 0)).toEqual([-0.5, 0.5]);
  });
});

describe("traceSummary", () => {
  it("counts events, lanes and flows, and says how long the trace runs", () => {
    expect(traceSummary(ref())).toBe("4 events · 2 lanes · 2 flows · 200 ms");
    const one = ref({ lanes: [{ id: 0, name: "main", kind: "thread" }], count: 1234567, flows: 0, end_ns: S + 1500 });
    expect(traceSummary(one)).toBe("1.23M events · 1 lane · 0 flows · 1.50 µs");
  });
});

describe("describeEvent", () => {
  const m = buildTimeline(ref(), packed());

  it("names the event, its category, lane and depth, its exact start and duration", () => {
    expect(describeEvent(m, 1)).toEqual(["matmul", "category: python", "lane: main (depth 1)", "start: +1.000000 ms", "duration: 500 µs"]);
    expect(describeEvent(m, 3)).toEqual(["kernel", "category: cuda", "lane: stream 7 (depth 0)", "start: +127.055123 ms", "duration: 3.00 ms"]);
  });

  it("names a C++ kernel as deuteron view does, its full name apart (null where the same)", () => {
    const mangled = buildTimeline(
      ref({
        names: ["step", "_ZN2at6native18elementwise_kernelILi128ELi4EEEviT1_", "kernel"],
        display_names: ["step", "at::native::elementwise_kernel<128, 4>", "kernel"],
        full_names: ["step", "void at::native::elementwise_kernel<128, 4>(int, T1_)", "kernel"],
      }),
      packed(),
    );
    expect(describeEvent(mangled, 1)[0]).toBe("at::native::elementwise_kernel<128, 4>");
    expect(shownName(mangled.ref, 1)).toBe("at::native::elementwise_kernel<128, 4>");
    expect(fullName(mangled.ref, 1)).toBe("void at::native::elementwise_kernel<128, 4>(int, T1_)");
    expect(fullName(mangled.ref, 2)).toBeNull();
    // An older page (no display names): as recorded; out of range: "?".
    expect(shownName(m.ref, 1)).toBe("matmul");
    expect(fullName(m.ref, 1)).toBeNull();
    expect(shownName(m.ref, 42)).toBe("?");
  });

  it("shows ? for names and categories out of range, and a lane's number when it has no entry", () => {
    const odd = buildTimeline(ref({ lanes: [] }), {
      start: Float64Array.of(S),
      name: Uint32Array.of(42),
      cat: Uint8Array.of(9),
      lane: Uint16Array.of(3),
    });
    // With no lanes listed, the model makes one ("lane 0"); the event's own lane number is 3.
    expect(describeEvent(odd, 0)).toEqual(["?", "category: ?", "lane: 3 (depth 0)", "start: +0 ns", "duration: 0 ns"]);
  });
});

// A trace with lanes inside kernels, as deuteron/render/web/timeline.py orders them: the main
// thread, then kernel "three" (2 CTAs × 2 warps), then kernel "two" (2 interpreted programs).
type LaneRef = TraceRef["lanes"][number];
const gpuLane = (id: number, cta: number, sm: number, warp: number): LaneRef => ({
  id,
  name: `three Core${sm} CTA${cta} · warp ${warp}`,
  kind: "intra",
  intra: { kernel: "three", cta, sm, unit: "warp", index: warp },
});
const programLane = (id: number, p: number): LaneRef => ({
  id,
  name: `two · program ${p}`,
  kind: "intra",
  intra: { kernel: "two", cta: null, sm: null, unit: "program", index: p },
});

function intraRef(): TraceRef {
  return ref({
    lanes: [
      { id: 0, name: "main thread", kind: "thread" },
      gpuLane(1, 0, 124, 0),
      gpuLane(2, 0, 124, 1),
      gpuLane(3, 1, 126, 0),
      gpuLane(4, 1, 126, 1),
      programLane(5, 0),
      programLane(6, 1),
    ],
    names: ["kernel", "load", "compute", "inner"],
    cats: ["kernel", "intra"],
    count: 12,
    flows: 0,
    end_ns: S + 1000,
  });
}

// Lane 0: the kernel (0..1000). "three": load then compute in each warp, the compute of CTA 1
// warp 1 four times as long, and an "inner" inside the load of CTA 0 warp 0. "two": one load each.
function intraPacked(): Packed {
  const ev: [number, number, number, number, number][] = [
    // start, dur, name, lane, depth
    [0, 1000, 0, 0, 0], // the kernel
    [10, 20, 1, 1, 0], [10, 20, 1, 2, 0], [10, 20, 1, 3, 0], [10, 40, 1, 4, 0], // "three"'s loads
    [12, 5, 3, 1, 1], // "inner"
    [30, 100, 2, 1, 0], [30, 100, 2, 2, 0], [30, 100, 2, 3, 0], [50, 400, 2, 4, 0], // its computes
    [500, 30, 1, 5, 0], [600, 50, 1, 6, 0], // "two"'s loads
  ];
  ev.sort((a, b) => a[0] - b[0] || b[1] - a[1]); // by start, the longer first: as the server sends them
  return {
    start: Float64Array.from(ev, (e) => S + e[0]),
    dur: Float64Array.from(ev, (e) => e[1]),
    name: Uint32Array.from(ev, (e) => e[2]),
    lane: Uint16Array.from(ev, (e) => e[3]),
    cat: Uint8Array.from(ev, (e) => (e[2] === 0 ? 0 : 1)),
    depth: Uint8Array.from(ev, (e) => e[4]),
  };
}

describe("lanes inside kernels", () => {
  it("labels a CTA's warp by CTA, SM and warp, a program by its number, anything else by its name", () => {
    expect(laneLabel("three Core124 CTA0 · warp 1", { kernel: "three", cta: 0, sm: 124, unit: "warp", index: 1 })).toBe("CTA 0 · SM 124 · warp 1");
    expect(laneLabel("k · program 3", { kernel: "k", cta: null, sm: null, unit: "program", index: 3 })).toBe("program 3");
    expect(laneLabel("x", { kernel: "k", cta: 2, sm: null, unit: "warp group", index: 1 })).toBe("CTA 2 · warp group 1");
    expect(laneLabel("odd lane", { kernel: "odd lane", cta: null, sm: null, unit: "", index: null })).toBe("odd lane");
    expect(laneLabel("no info", undefined)).toBe("no info");
  });

  it("heads a kernel with its CTAs and warps, or its programs, or its lanes", () => {
    const warps = [0, 1, 2, 3].flatMap((w) => [0, 1, 63].map((cta) => ({ kernel: "three", cta, sm: 100 + cta, unit: "warp", index: w })));
    expect(groupLabel("three", warps)).toBe("three — 3 CTAs × 4 warps");
    expect(groupLabel("k", [{ kernel: "k", cta: 0, sm: 1, unit: "warp", index: 0 }])).toBe("k — 1 CTA × 1 warp");
    expect(groupLabel("two", [0, 1, 2].map((p) => ({ kernel: "two", cta: null, sm: null, unit: "program", index: p })))).toBe("two — 3 programs");
    expect(groupLabel("odd", [undefined, undefined])).toBe("odd — 2 lanes");
  });

  it("groups consecutive lanes of a kernel under a header row, short labels, a small gap inside", () => {
    const m = buildTimeline(intraRef(), intraPacked());
    expect(m.groups.map((g) => [g.kernel, g.label, g.first, g.count, g.expanded])).toEqual([
      ["three", "three — 2 CTAs × 2 warps", 1, 4, true],
      ["two", "two — 2 programs", 5, 2, true],
    ]);
    expect(m.lanes.map((l) => [l.label, l.group])).toEqual([
      ["main thread", -1],
      ["CTA 0 · SM 124 · warp 0", 0],
      ["CTA 0 · SM 124 · warp 1", 0],
      ["CTA 1 · SM 126 · warp 0", 0],
      ["CTA 1 · SM 126 · warp 1", 0],
      ["program 0", 1],
      ["program 1", 1],
    ]);
    // main thread (one level), header, warp 0 of CTA 0 (two levels: "inner"), three one-level
    // warps, a lane's gap, header, two programs.
    let y = AXIS_H + 4;
    expect(m.lanes[0].y).toBe(y);
    y += ROW_H + LANE_GAP;
    expect(m.groups[0].y).toBe(y);
    y += GROUP_H + INTRA_GAP;
    expect([m.lanes[1].y, m.lanes[1].height]).toEqual([y, 2 * ROW_H]);
    y += 2 * ROW_H + INTRA_GAP;
    expect([m.lanes[2].y, m.lanes[3].y, m.lanes[4].y]).toEqual([y, y + ROW_H + INTRA_GAP, y + 2 * (ROW_H + INTRA_GAP)]);
    y += 3 * (ROW_H + INTRA_GAP) + LANE_GAP - INTRA_GAP;
    expect(m.groups[1].y).toBe(y);
    y += GROUP_H + INTRA_GAP;
    expect(m.lanes[5].y).toBe(y);
    expect(m.height).toBe(y + 2 * (ROW_H + INTRA_GAP) + LANE_GAP - INTRA_GAP);
    expect([m.groups[0].t0, m.groups[0].t1, m.groups[1].t0, m.groups[1].t1]).toEqual([10, 450, 500, 650]);
    expect(m.rows.length).toBe(8);
  });

  it("folds a kernel to its header row: no rows, no height, nothing to hit", () => {
    const m = buildTimeline(intraRef(), intraPacked());
    const full = m.height;
    setExpanded(m, 0, false);
    expect(m.lanes.slice(1, 5).every((l) => l.hidden && l.height === 0 && l.rows.length === 0)).toBe(true);
    expect(m.rows.map((r) => r.lane)).toEqual([0, 5, 6]);
    expect(m.groups[1].y).toBe(m.groups[0].y + GROUP_H + INTRA_GAP + LANE_GAP - INTRA_GAP);
    expect(m.height).toBe(full - (5 * ROW_H + 4 * INTRA_GAP));
    expect(groupAt(m, m.groups[0].y + 3)).toBe(0);
    expect(groupAt(m, m.groups[1].y + GROUP_H - 1)).toBe(1);
    expect(groupAt(m, m.lanes[0].y)).toBe(-1);
    setExpanded(m, 0, true);
    expect(m.height).toBe(full);
    expect(m.rows.length).toBe(8);
  });

  it("starts with only the first kernel unfolded past 64 lanes inside kernels", () => {
    const lanes: LaneRef[] = [];
    for (let w = 0; w < 40; w++) lanes.push(gpuLane(w, w >> 2, 0, w & 3));
    for (let p = 0; p < 40; p++) lanes.push(programLane(40 + p, p));
    const m = buildTimeline(ref({ lanes, count: 0 }), { start: new Float64Array(0) });
    expect(m.groups.map((g) => [g.count, g.expanded])).toEqual([
      [40, true],
      [40, false],
    ]);
    expect(m.lanes.filter((l) => !l.hidden).length).toBe(40);
    expect(m.lanes[40].y).toBe(m.groups[1].y); // folded lanes sit on their header
  });

  it("folds the farthest other kernels when unfolding one would make the canvas too tall", () => {
    // Four kernels of 250 one-level lanes: 4.5k px each, so at most three fit in MAX_HEIGHT.
    const lanes: LaneRef[] = [];
    for (let k = 0; k < 4; k++) for (let w = 0; w < 250; w++) lanes.push({ ...gpuLane(k * 250 + w, w >> 2, 0, w & 3), intra: { kernel: `k${k}`, cta: w >> 2, sm: 0, unit: "warp", index: w & 3 } });
    const m = buildTimeline(ref({ lanes, count: 0 }), { start: new Float64Array(0) });
    expect(m.groups.map((g) => g.expanded)).toEqual([true, false, false, false]);
    expect(setExpanded(m, 1, true)).toEqual([]);
    expect(setExpanded(m, 2, true)).toEqual([]);
    expect(setExpanded(m, 3, true)).toEqual([0]);
    expect(m.groups.map((g) => g.expanded)).toEqual([false, true, true, true]);
    expect(m.height).toBeLessThanOrEqual(MAX_HEIGHT);
    expect(setExpanded(m, 3, true)).toEqual([]); // already so: nothing changes
  });

  it("colours a span by its name alone, the same in every lane, as kernels always were", () => {
    expect(spanColour("load")).toBe(colourOf("load", 58, 64));
    expect(spanColour("load")).not.toBe(spanColour("store"));
  });
});

describe("levelCap", () => {
  it("keeps every level when the rows fit", () => {
    expect(levelCap([1, 2, 3])).toBe(256);
    expect(levelCap([])).toBe(256);
  });

  it("lets shallow lanes keep all their levels and the deep ones share the rest", () => {
    // 100 one-level lanes and two 300-deep ones: 400 rows left for the two, 200 each.
    expect(levelCap([...Array(100).fill(1), 300, 300])).toBe(200);
    expect(levelCap([201, 201, 201])).toBe(166);
  });

  it("keeps at least one level however many lanes there are", () => {
    expect(levelCap(Array(600).fill(3))).toBe(1);
  });
});

describe("median", () => {
  it("takes the middle value, or the mean of the middle two", () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([7])).toBe(7);
    expect(median([])).toBeNaN();
  });
});

describe("scopeTable", () => {
  it("gives each kernel's scopes their instances, spread and imbalance, in program order", () => {
    const rows = scopeTable(buildTimeline(intraRef(), intraPacked()));
    expect(rows.map((r) => [r.kernel, r.scope, r.instances, r.lanes])).toEqual([
      ["three", "load", 4, 4],
      ["three", "inner", 1, 1],
      ["three", "compute", 4, 4],
      ["two", "load", 2, 2],
    ]);
    const [load, inner, compute, two] = rows;
    expect([load.min, load.median, load.max, load.imbalance, load.total]).toEqual([20, 20, 40, 2, 100]);
    expect([compute.min, compute.median, compute.max, compute.imbalance]).toEqual([100, 100, 400, 4]);
    expect([compute.laneMin, compute.laneMedian, compute.laneMax]).toEqual([100, 100, 400]);
    expect([inner.min, inner.median, inner.max, inner.imbalance]).toEqual([5, 5, 5, 1]);
    expect([two.min, two.median, two.max, two.imbalance, two.laneMedian]).toEqual([30, 40, 50, 1.25, 40]);
    expect(load.nameId).toBe(1);
    expect(two.nameId).toBe(1); // the same name in another kernel: its own row
  });

  it("sums a lane's instances for the per-lane spread", () => {
    const lanes = [gpuLane(0, 0, 1, 0), gpuLane(1, 0, 1, 1)];
    const m = buildTimeline(ref({ lanes, names: ["loop"], cats: ["intra"], count: 3 }), {
      start: Float64Array.of(S, S + 10, S + 20),
      dur: Float64Array.of(5, 5, 30),
      name: Uint32Array.of(0, 0, 0),
      lane: Uint16Array.of(0, 0, 1),
      cat: Uint8Array.of(0, 0, 0),
    });
    const [loop] = scopeTable(m);
    expect([loop.instances, loop.lanes, loop.median, loop.laneMin, loop.laneMedian, loop.laneMax]).toEqual([3, 2, 5, 10, 20, 30]);
  });

  it("is empty without spans inside kernels, and gives no imbalance over a zero median", () => {
    expect(scopeTable(buildTimeline(ref(), packed()))).toEqual([]);
    const m = buildTimeline(ref({ lanes: [gpuLane(0, 0, 1, 0)], names: ["s"], cats: ["intra"], count: 3 }), {
      start: Float64Array.of(S, S + 1, S + 2),
      dur: Float64Array.of(0, 0, 4),
    });
    expect(scopeTable(m)[0].imbalance).toBeNull();
  });
});

describe("a job's ranks", () => {
  // Two ranks, each a thread and a GPU stream; rank 1's kernel is a collective linked to rank 0's.
  function ranked(ranks: number): { r: TraceRef; p: Packed } {
    const lanes: TraceRef["lanes"] = [];
    for (let k = 0; k < ranks; k++) {
      lanes.push({ id: 2 * k, name: `rank ${k} · MainThread`, kind: "thread", rank: String(k) });
      lanes.push({ id: 2 * k + 1, name: `rank ${k} · stream 7`, kind: "stream", rank: String(k) });
    }
    const n = ranks * 3;
    const start = new Float64Array(n);
    const dur = new Float64Array(n);
    const lane = new Uint16Array(n);
    const name = new Uint32Array(n);
    for (let k = 0; k < ranks; k++) {
      // per rank: a step on its thread, then two kernels on its stream
      start.set([S + k, S + 1e6 + k, S + 5e6 + k], 3 * k);
      dur.set([10e6, 2e6, 3e6], 3 * k);
      lane.set([2 * k, 2 * k + 1, 2 * k + 1], 3 * k);
      name.set([0, 1, 2], 3 * k);
    }
    const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => start[a] - start[b]);
    const pick = <T extends Float64Array | Uint16Array | Uint32Array>(a: T): T => {
      const out = a.slice() as T;
      order.forEach((i, k) => (out[k] = a[i]));
      return out;
    };
    const r = ref({
      lanes,
      names: ["step", "gemm", "ncclDevKernel_AllReduce"],
      count: n,
      job: {
        clock: "one host (h): the ranks share its monotonic clock",
        ranks: Array.from({ length: ranks }, (_, k) => ({ rank: String(k), source: `t.rank${k}.chrome_trace`, host: "h", shift_ns: k })),
        links: ranks - 1,
      },
    });
    const p: Packed = { start: pick(start), dur: pick(dur), name: pick(name), lane: pick(lane), cat: new Uint8Array(n), depth: new Uint8Array(n) };
    return { r, p };
  }

  it("puts each rank's lanes under a header that says what they are, the rank left out of their labels", () => {
    const { r, p } = ranked(2);
    const m = buildTimeline(r, p);
    expect(m.groups.map((g) => g.label)).toEqual(["rank 0 — 1 GPU stream, 1 thread", "rank 1 — 1 GPU stream, 1 thread"]);
    expect(m.groups.every((g) => g.expanded)).toBe(true);
    expect(m.lanes.map((l) => l.label)).toEqual(["MainThread", "stream 7", "MainThread", "stream 7"]);
    expect(m.lanes[0].name).toBe("rank 0 · MainThread"); // the whole name for tooltips
    expect(m.groups[1].y).toBeGreaterThan(m.lanes[1].y); // rank 1's header below rank 0's lanes
    expect(traceSummary(r)).toMatch(/^2 ranks · 6 events/);
  });

  it("folds a rank to one summary row of its GPU stream's kernels, and unfolds it", () => {
    const { r, p } = ranked(2);
    const m = buildTimeline(r, p);
    setExpanded(m, 0, false);
    expect(m.lanes[0].hidden && m.lanes[1].hidden).toBe(true);
    const sum = m.groups[0].summary!;
    expect(Array.from(sum.idx).map((i) => r.names[m.name[i]])).toEqual(["gemm", "ncclDevKernel_AllReduce"]);
    expect(sum.y).toBe(m.groups[0].y + 2);
    expect(m.groups[1].y).toBe(m.groups[0].y + GROUP_H + INTRA_GAP + LANE_GAP - INTRA_GAP);
    setExpanded(m, 0, true);
    expect(m.lanes[0].hidden).toBe(false);
  });

  it("starts folded past 16 ranks, each rank a header with its summary", () => {
    const { r, p } = ranked(17);
    const m = buildTimeline(r, p);
    expect(m.groups).toHaveLength(17);
    expect(m.groups.every((g) => !g.expanded && g.summary !== null)).toBe(true);
    expect(m.rows).toHaveLength(0);
    expect(m.height).toBeLessThan(17 * (GROUP_H + LANE_GAP) + AXIS_H + 10);
  });
});
