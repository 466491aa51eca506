import { describe, expect, it } from "vitest";
import type { TraceRef } from "../../types";
import { MIN_SPAN, buildTimeline } from "./model";
import { eventContext, focusWindow, matchingNames, parseState, searchEvents, searchText, stateParams, stepMatch } from "./search";

const ref: TraceRef = {
  name: "t",
  source: "t",
  lanes: [{ id: 0, name: "main", kind: "thread" }],
  names: ["step", "_ZN7cutlass6KernelI4GemmEEvv", "add_kernel"],
  display_names: ["step", "cutlass::Kernel<Gemm>", "add_kernel"],
  full_names: ["step", "void cutlass::Kernel<Gemm>()", "add_kernel"],
  cats: ["python"],
  count: 5,
  flows: 0,
  start_ns: 0,
  end_ns: 1000,
  events: "",
  stacks: [[], ["ROOT", "step"], ["ROOT", "step", "add_kernel"], ["ROOT", "step", "_ZN7cutlass6KernelI4GemmEEvv"]],
  frame_names: { _ZN7cutlass6KernelI4GemmEEvv: ["cutlass::Kernel<Gemm>", "void cutlass::Kernel<Gemm>()"] },
  arg_sets: [[], [["device", "0"], ["grid", "[4,1,1]"]]],
};

describe("matchingNames", () => {
  it("finds a substring in any spelling of a name, ignoring case", () => {
    expect(Array.from(matchingNames(ref, "GEMM")!)).toEqual([0, 1, 0]);
    expect(Array.from(matchingNames(ref, "kernel")!)).toEqual([0, 1, 1]);
    expect(Array.from(matchingNames(ref, "  add_")!)).toEqual([0, 0, 1]);
  });

  it("is null for an empty query: no search, nothing dimmed", () => {
    expect(matchingNames(ref, "")).toBeNull();
    expect(matchingNames(ref, "   ")).toBeNull();
  });
});

describe("searchEvents and stepMatch", () => {
  const names = Uint32Array.of(0, 2, 1, 2, 0, 2);
  const matches = searchEvents(names, Uint8Array.of(0, 0, 1));

  it("lists the matching events in time (id) order", () => {
    expect(Array.from(matches)).toEqual([1, 3, 5]);
    expect(searchEvents(names, Uint8Array.of(0, 0, 0)).length).toBe(0);
  });

  it("steps to the neighbour of a selected match, wrapping around", () => {
    expect(stepMatch(matches, 3, 1)).toBe(2);
    expect(stepMatch(matches, 5, 1)).toBe(0);
    expect(stepMatch(matches, 1, -1)).toBe(2);
    expect(stepMatch(matches, 3, -1)).toBe(0);
  });

  it("from no selection or another event, goes to the first match after it (or last before)", () => {
    expect(stepMatch(matches, -1, 1)).toBe(0);
    expect(stepMatch(matches, -1, -1)).toBe(2);
    expect(stepMatch(matches, 2, 1)).toBe(1);
    expect(stepMatch(matches, 2, -1)).toBe(0);
    expect(stepMatch(matches, 9, 1)).toBe(0);
    expect(stepMatch(new Uint32Array(0), 0, 1)).toBe(-1);
  });
});

describe("searchText", () => {
  it("counts the matches among the events, or says none matches", () => {
    expect(searchText("gemm", 12, 4310)).toBe("12 of 4,310 events match");
    expect(searchText("gemm", 1, 4310)).toBe("1 of 4,310 events matches");
    expect(searchText("gemm", 12, 4310, 2)).toBe("12 of 4,310 events match · 3 of 12 shown");
    expect(searchText(" x ", 0, 4310)).toBe("no event matches 'x'");
  });
});

describe("focusWindow", () => {
  it("centres the current span on an event that fits", () => {
    expect(focusWindow(0, 1000, 5000, 100, 1e6)).toEqual([4550, 5550]);
  });

  it("zooms out to show a longer event whole, with a margin", () => {
    const [a, b] = focusWindow(0, 1000, 5000, 4000, 1e6);
    expect(b - a).toBe(5000);
    expect(a).toBeLessThan(5000);
    expect(b).toBeGreaterThan(9000);
    expect(focusWindow(0, 50, 10, 0, 1e6)[1] - focusWindow(0, 50, 10, 0, 1e6)[0]).toBe(MIN_SPAN);
  });
});

describe("eventContext", () => {
  it("gives an event's call stack and args from the interned tables", () => {
    const m = buildTimeline(ref, {
      start: Float64Array.of(0, 10),
      dur: Float64Array.of(100, 5),
      name: Uint32Array.of(0, 2),
      lane: Uint16Array.of(0, 0),
      cat: Uint8Array.of(0, 0),
      depth: Uint8Array.of(0, 1),
      stack: Uint32Array.of(1, 2),
      args: Uint32Array.of(0, 1),
    });
    const plain = (name: string) => ({ name, full: null });
    expect(eventContext(ref, m.stack, m.args, 1)).toEqual({ stack: ["ROOT", "step", "add_kernel"].map(plain), args: [["device", "0"], ["grid", "[4,1,1]"]] });
    expect(eventContext(ref, m.stack, m.args, 0)).toEqual({ stack: ["ROOT", "step"].map(plain), args: [] });
  });

  it("names a mangled frame as the timeline names events: short, with the full name beside it", () => {
    const m = buildTimeline(ref, {
      start: Float64Array.of(0),
      dur: Float64Array.of(5),
      name: Uint32Array.of(1),
      lane: Uint16Array.of(0),
      cat: Uint8Array.of(0),
      depth: Uint8Array.of(0),
      stack: Uint32Array.of(3),
      args: Uint32Array.of(0),
    });
    const frames = eventContext(ref, m.stack, m.args, 0).stack;
    expect(frames.map((f) => f.name)).toEqual(["ROOT", "step", "cutlass::Kernel<Gemm>"]);
    expect(frames[2].full).toBe("void cutlass::Kernel<Gemm>()");
    // A page from before frame_names: the frames as recorded.
    expect(eventContext({ ...ref, frame_names: undefined }, m.stack, m.args, 0).stack[2]).toEqual({ name: "_ZN7cutlass6KernelI4GemmEEvv", full: null });
  });

  it("is empty for a page without the columns or tables", () => {
    expect(eventContext({ ...ref, stacks: undefined }, null, null, 0)).toEqual({ stack: [], args: [] });
  });
});

describe("parseState and stateParams", () => {
  it("round-trips the window, selection, search and arrows", () => {
    const state = { trace: 1, t0: 1200.4, t1: 9000, selected: 7, query: "gemm k", arrows: false };
    const params = stateParams(state);
    expect(params).toEqual({ trace: 1, t0: 1200, t1: 9000, sel: 7, q: "gemm k", arrows: 0 });
    const text: Record<string, string> = {};
    for (const [k, v] of Object.entries(params)) if (v !== null) text[k] = String(v);
    expect(parseState(text)).toEqual({ ...state, t0: 1200 });
  });

  it("leaves defaults out and ignores anything malformed", () => {
    expect(stateParams({ trace: 0, t0: null, t1: null, selected: -1, query: "", arrows: true })).toEqual({ trace: null, t0: null, t1: null, sel: null, q: null, arrows: null });
    expect(parseState({ t0: "5", t1: "3", sel: "-2", trace: "x", arrows: "1" })).toEqual({ trace: 0, t0: null, t1: null, selected: -1, query: "", arrows: true });
    expect(parseState({ t0: "abc", t1: "10" }).t0).toBeNull();
  });
});
