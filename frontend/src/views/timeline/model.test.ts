import { describe, expect, it } from "vitest";
import type { Packed } from "../../data";
import type { TraceRef } from "../../types";
import {
  AXIS_H,
  LANE_GAP,
  ROW_H,
  buildTimeline,
  clampWindow,
  describeEvent,
  eventAt,
  lowerBound,
  MIN_SPAN,
  niceStep,
  tickLabel,
  traceSummary,
} from "./model";

const S = 5e9; // the trace's first start, absolute ns

function ref(extra: Partial<TraceRef> = {}): TraceRef {
  return {
    name: "new.chrome_trace",
    source: "runs/new.chrome_trace",
    lanes: [
      { id: 0, name: "main", kind: "thread" },
      { id: 1, name: "stream 7", kind: "stream" },
    ],
    names: ["step", "matmul", "kernel"],
    cats: ["python", "cuda"],
    count: 4,
    flows: 2,
    start_ns: S,
    end_ns: S + 200e6,
    events: "/api/trace/0.bin",
    ...extra,
  };
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
