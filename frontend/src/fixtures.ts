// What the tests share: builders of the views' data, so each test names only what its case is
// about, and a check of a function against a table of answers. Only tests import this module
// (main.ts never does), so it never reaches the bundle.
import { expect } from "vitest";
import type { Packed } from "./data";
import type { ExplainData, ExplainKernel, LaunchData, ProfileData, TensorView, TraceRef } from "./types";

/** An explained kernel on cuda:90 with 4 warps and 3 stages, one launch, nothing measured. */
export function explainKernel(name: string, extra: Partial<ExplainKernel> = {}): ExplainKernel {
  return {
    name,
    target: "cuda:90",
    file: "/work/main/examples/hot_line.py",
    line: 24,
    num_warps: 4,
    num_stages: 3,
    num_ctas: 1,
    args: [],
    launches: 1,
    grids: [],
    registers: null,
    spills: null,
    shared_bytes: null,
    occupancy: null,
    sass: null,
    findings: [],
    source_text: null,
    stage_text: {},
    ...extra,
  };
}

/** An explain report (ex.json) of these kernels. */
export function explainReport(...kernels: ExplainKernel[]): ExplainData {
  return { name: "ex.json", source: "ex.json", device: null, errors: [], kernels };
}

/** The tree of a profile: each node's parent, name and type, and values[column][node]. */
export type Tree = Pick<ProfileData, "parent" | "name_id" | "type_id" | "names" | "values">;

/** A profile of `tree` (time/ms and `columns[1]`; functions and kernels), nothing pruned. */
export function profileData(tree: Tree, extra: Partial<ProfileData> = {}): ProfileData {
  return {
    name: "new.hatchet",
    source: "new.hatchet",
    metadata: {},
    columns: ["time/ms", "avg/ms"],
    primary: 0,
    ...tree,
    types: ["function", "kernel"],
    total_nodes: tree.parent.length,
    pruned_nodes: 0,
    threshold: 0,
    ...extra,
  };
}

/** Tensor x of the Accesses view: 2 slices of 40×24 in bins of 16×16 (3×2), slice 1 not on the page. */
export function tensorView(extra: Partial<TensorView> = {}): TensorView {
  return {
    name: "x",
    shape: [2, 40, 24],
    dtype: "float32",
    rows: 40,
    cols: 24,
    merged: [],
    lead: [2],
    slices: 2,
    bin_rows: 3,
    bin_cols: 2,
    row_step: 16,
    col_step: 16,
    outside: 0,
    findings: [],
    slice_urls: ["/a/0.bin", null],
    ...extra,
  };
}

/** A launch of tile_copy on a 3×2×2 grid, programs (0..2, 0, 0) recorded, at three sites. */
export function launchData(extra: Partial<LaunchData> = {}): LaunchData {
  return {
    index: 0,
    kernel: "tile_copy",
    file: "k.py",
    grid: [3, 2, 2],
    programs: [
      [0, 0, 0],
      [1, 0, 0],
      [2, 0, 0],
    ],
    sites: [
      { file: "k.py", line: 10, function: "tile_copy" },
      { file: "k.py", line: 12, function: "tile_copy" },
      { file: "lib.py", line: 3, function: "helper" },
    ],
    sources: { "k.py": "a\nb\n" },
    tensors: [],
    ...extra,
  };
}

/** Checks `fn` against a table of answers, each row an argument and the result it must give
 * (`toBe`); a failure names the row. */
export function expectAnswers<T, R>(fn: (arg: T) => R, rows: [T, R][]): void {
  for (const [arg, want] of rows) expect(fn(arg), `${fn.name || "the function"}(${String(arg)})`).toBe(want);
}

/** A trace starting at `TRACE_START` (absolute ns), 1 ms long: lane 0 a thread, lane 1 a GPU
 * stream; names a, b, c. */
export const TRACE_START = 5e9;
export function traceRef(extra: Partial<TraceRef> = {}): TraceRef {
  return {
    name: "big.chrome_trace",
    source: "runs/big.chrome_trace",
    lanes: [
      { id: 0, name: "main", kind: "thread" },
      { id: 1, name: "stream 7", kind: "stream" },
    ],
    names: ["a", "b", "c"],
    cats: ["python", "cuda"],
    count: 0,
    flows: 0,
    start_ns: TRACE_START,
    end_ns: TRACE_START + 1e6,
    events: "/api/trace/0.bin",
    ...extra,
  };
}

/** In level of detail: the trace's window address, each lane's depth (main 2 levels, the stream
 * 1) and its events in all. */
export function lodRef(extra: Partial<TraceRef> = {}): TraceRef {
  return traceRef({ window: "/api/trace/0/window.bin", lane_depths: [1, 0], lod: { events: 5012331, store: "big.lod" }, count: 5012331, ...extra });
}

/** One event: start (ns from the trace's start), duration, name, lane, depth, and the events it
 * stands for (a merged block when more than 1; left out: 1). */
export type EventRow = [number, number, number, number, number, number?];

/** Events packed as the server sends them (sorted by start, absolute starts); a `count` column
 * only when some row gives one. */
export function packedEvents(rows: EventRow[], extra: Packed = {}): Packed {
  const ev = [...rows].sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  const out: Packed = {
    start: Float64Array.from(ev, (e) => TRACE_START + e[0]),
    dur: Float64Array.from(ev, (e) => e[1]),
    name: Uint32Array.from(ev, (e) => e[2]),
    lane: Uint16Array.from(ev, (e) => e[3]),
    cat: Uint8Array.from(ev, (e) => (e[3] === 1 ? 1 : 0)),
    depth: Uint8Array.from(ev, (e) => e[4]),
    ...extra,
  };
  if (rows.some((e) => e[5] !== undefined)) out.count = Uint32Array.from(ev, (e) => e[5] ?? 1);
  return out;
}
