import { describe, expect, it } from "vitest";
import type { TraceRef } from "../../types";
import { TRACE_START, traceRef } from "../../fixtures";
import { AXIS_H, LANE_GAP, ROW_H, buildTimeline } from "./model";
import { buildMarks, markAt, openingWindow, spanWindow } from "./marks";

const S = TRACE_START;
const MS = 1e6;

function ref(extra: Partial<TraceRef> = {}): TraceRef {
  return traceRef({
    names: ["step", "aten::mm"],
    lanes: [
      { id: 0, name: "main thread", kind: "thread" },
      { id: 1, name: "thread 140529113233088", kind: "thread", role: "autograd thread" },
    ],
    count: 2,
    end_ns: S + 100 * MS,
    ...extra,
  });
}

const STEPS: Partial<TraceRef> = {
  steps: [[0, 10 * MS], [10 * MS, 30 * MS], [30 * MS, 50 * MS]],
  steps_how: "the scopes named step",
  step_window: [10 * MS, 55 * MS],
  steady_from: 2,
  backward: [[5 * MS, 8 * MS], [20 * MS, 28 * MS], [60 * MS, 61 * MS]],
};

describe("the steps and backward lanes", () => {
  it("number the steps with their lengths, the warm-up step marked", () => {
    const [steps, backward] = buildMarks(ref(STEPS));
    expect(steps.kind).toBe("steps");
    expect(steps.spans.map((s) => s.label)).toEqual(["step 1 · 10.0 ms", "step 2 · 20.0 ms", "step 3 · 20.0 ms"]);
    expect(steps.spans.map((s) => s.warm)).toEqual([true, false, false]);
    expect(steps.title).toContain("steps 2–3");
    // Each backward pass says the step it lies in (none past the last step).
    expect(backward.spans.map((s) => s.number)).toEqual([1, 2, 0]);
    expect(backward.spans[1].label).toBe("backward · step 2 · 8.00 ms");
  });

  it("are none without steps or backward passes, and the page opens on the whole trace", () => {
    expect(buildMarks(ref())).toEqual([]);
    expect(openingWindow(ref(), 100 * MS)).toEqual([0, 100 * MS]);
  });

  it("open the page on the steady steps", () => {
    expect(openingWindow(ref(STEPS), 100 * MS)).toEqual([10 * MS, 55 * MS]);
  });

  it("sit on top of the lanes, which keep their order below", () => {
    const m = buildTimeline(ref(STEPS), { start: Float64Array.of(S, S + 1), dur: Float64Array.of(5, 5), lane: Uint16Array.of(0, 1) });
    expect(m.marks.map((k) => [k.kind, k.y])).toEqual([
      ["steps", AXIS_H + 4],
      ["backward", AXIS_H + 4 + ROW_H + LANE_GAP],
    ]);
    expect(m.lanes[0].y).toBe(AXIS_H + 4 + 2 * (ROW_H + LANE_GAP));
    // A thread's role is its label; its id stays in the name (the hover).
    expect(m.lanes[1].label).toBe("autograd thread");
    expect(m.lanes[1].name).toBe("autograd thread — thread 140529113233088");
    expect(m.lanes[0].label).toBe("main thread");
  });

  it("find the span under the pointer and the window that shows it", () => {
    const [steps] = buildMarks(ref(STEPS));
    expect(markAt(steps, 15 * MS, 1000)?.number).toBe(2);
    expect(markAt(steps, 70 * MS, 1000)).toBeNull();
    const [t0, t1] = spanWindow(steps.spans[1], 100 * MS);
    expect(t0).toBeLessThan(10 * MS);
    expect(t1).toBeGreaterThan(30 * MS);
    expect(t1 - t0).toBeCloseTo(20 * MS * 1.06);
  });
});
