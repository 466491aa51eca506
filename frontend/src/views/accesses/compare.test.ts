// Two launches side by side: which launch pairs with which, which tensors, the cells touched
// differently, one heat scale, and the address state.
import { describe, expect, it } from "vitest";
import { hashOf, hashParams } from "../../route";
import type { AccessCells, RecordRef, TensorView } from "../../types";
import {
  accessesParams,
  diffFootprints,
  diffText,
  firstLaunch,
  followVs,
  footprint,
  KINDS_DIFFER,
  kernelOrdinal,
  LANES_DIFFER,
  ONLY_A,
  ONLY_B,
  pairTensors,
  parseAccessesState,
  partnerOf,
  programIn,
  SAME,
  sameGrid,
  sharedRange,
} from "./compare";
import { aggregate, type LaunchRef } from "./model";

function record(name: string, kernels: string[], first = 0): RecordRef {
  return {
    name,
    source: name,
    dropped_lanes: 0,
    limit: 0,
    launches: kernels.map((kernel, i) => ({
      index: first + i,
      kernel,
      grid: [1, 1, 1],
      programs: 1,
      accesses: 1,
      lanes: 1,
      tensors: ["x"],
      url: `/api/access/${name}/${i}.json`,
    })),
  };
}

function refsOf(...records: RecordRef[]): LaunchRef[] {
  return records.flatMap((r) => r.launches.map((launch) => ({ record: r, launch })));
}

function cells(rows: [program: number, bin: number, kind: number, lanes: number][]): AccessCells {
  return {
    program: Uint32Array.from(rows.map((r) => r[0])),
    bin: Uint32Array.from(rows.map((r) => r[1])),
    kind: Uint8Array.from(rows.map((r) => r[2])),
    site: Int32Array.from(rows.map(() => -1)),
    lanes: Uint32Array.from(rows.map((r) => r[3])),
  };
}

function view(name: string, shape: number[], extra: Partial<TensorView> = {}): TensorView {
  const cols = shape[shape.length - 1];
  const rows = shape.length > 1 ? shape[shape.length - 2] : 1;
  return {
    name,
    shape,
    dtype: "float32",
    rows,
    cols,
    merged: [],
    lead: shape.slice(0, -2),
    slices: 1,
    bin_rows: rows,
    bin_cols: cols,
    row_step: 1,
    col_step: 1,
    outside: 0,
    findings: [],
    slice_urls: ["/0.bin"],
    ...extra,
  };
}

describe("which launch pairs with which", () => {
  // learn check --record: each record numbers its launches on its own (yours 4..6, the reference 7..9).
  const reference = record("11_blur_bounds.reference.npz", ["blur", "blur", "blur"], 7);
  const yours = record("11_blur_bounds.yours.npz", ["blur", "blur", "blur"], 4);
  const refs = refsOf(reference, yours);

  it("pairs the n-th launch of a kernel with the other record's n-th launch of it", () => {
    expect([0, 1, 2, 3, 4, 5].map((i) => kernelOrdinal(refs, i))).toEqual([0, 1, 2, 0, 1, 2]);
    expect([0, 1, 2, 3, 4, 5].map((i) => partnerOf(refs, i))).toEqual([3, 4, 5, 0, 1, 2]);
  });

  it("pairs by kernel name and order, not by position, when kernels interleave", () => {
    const a = record("a.npz", ["prep", "blur", "blur"]);
    const b = record("b.npz", ["blur", "blur", "prep"]);
    const r = refsOf(a, b);
    expect(partnerOf(r, 0)).toBe(5); // prep -> prep
    expect(partnerOf(r, 1)).toBe(3); // first blur -> first blur
    expect(partnerOf(r, 2)).toBe(4);
    expect(partnerOf(r, 5)).toBe(0);
  });

  it("with exactly two records and no kernel in common, pairs by position; with one, never", () => {
    const r = refsOf(record("a.npz", ["add", "mul"]), record("b.npz", ["copy", "scale", "more"]));
    expect([0, 1, 2, 3, 4].map((i) => partnerOf(r, i))).toEqual([2, 3, 0, 1, -1]);
    const one = refsOf(record("a.npz", ["add", "add"]));
    expect([partnerOf(one, 0), partnerOf(one, 1)]).toEqual([-1, -1]);
    const three = refsOf(record("a.npz", ["add"]), record("b.npz", ["mul"]), record("c.npz", ["sub"]));
    expect(partnerOf(three, 0)).toBe(-1);
  });

  it("shows the learner's launch first when the other record is the reference", () => {
    expect(firstLaunch(refs)).toBe(3);
    expect(firstLaunch(refsOf(yours, reference))).toBe(0);
    expect(firstLaunch(refsOf(record("a.npz", ["k"]), record("b.npz", ["k"])))).toBe(0);
  });

  it("keeps following the partner when another launch is picked, unless another was chosen", () => {
    expect(followVs(refs, 3, 0, 4)).toBe(1); // the default comparison follows
    expect(followVs(refs, 3, 2, 4)).toBe(2); // one picked by hand stays
    expect(followVs(refs, 3, -1, 4)).toBe(-1); // none chosen stays none
    expect(followVs(refs, 3, 2, 2)).toBe(-1); // never a launch beside itself
  });
});

describe("the address", () => {
  const refs = refsOf(record("11_x.reference.npz", ["k", "k"]), record("11_x.yours.npz", ["k", "k"]));

  it("defaults to the learner's first launch beside its partner, and round-trips", () => {
    const opened = parseAccessesState({}, refs);
    expect(opened).toEqual({ launch: 2, vs: 0, mode: "program" });
    expect(accessesParams(opened, refs)).toEqual({ launch: 2, vs: 0, mode: null });
    const heat = { launch: 3, vs: 0, mode: "heat" as const };
    const hash = hashOf("accesses", accessesParams(heat, refs));
    expect(hash).toBe("#accesses?launch=3&vs=0&mode=heat");
    expect(parseAccessesState(hashParams(hash), refs)).toEqual(heat);
  });

  it("spells out no comparison, and reads bad values as the defaults", () => {
    const none = { launch: 1, vs: -1, mode: "program" as const };
    expect(accessesParams(none, refs).vs).toBe("none");
    expect(parseAccessesState({ launch: "1", vs: "none" }, refs)).toEqual(none);
    expect(parseAccessesState({ launch: "99", vs: "x", mode: "bogus" }, refs)).toEqual({ launch: 2, vs: 0, mode: "program" });
    expect(parseAccessesState({ launch: "1", vs: "1" }, refs)).toEqual({ launch: 1, vs: 3, mode: "program" });
    // One record: no partner, so nothing to spell out.
    const one = refsOf(record("a.npz", ["k", "k"]));
    expect(accessesParams({ launch: 1, vs: -1, mode: "program" }, one)).toEqual({ launch: 1, vs: null, mode: null });
    expect(parseAccessesState({ launch: "1", vs: "0" }, one)).toEqual({ launch: 1, vs: 0, mode: "program" });
  });
});

describe("tensors and programs", () => {
  it("pairs tensors by name, else by position when the name is in neither", () => {
    const a = [view("x", [4]), view("out", [4]), view("tmp", [4])];
    const b = [view("out", [4]), view("x", [4]), view("scratch", [4])];
    expect(pairTensors(a, b)).toEqual([1, 0, 2]);
    expect(pairTensors([view("x", [4]), view("y", [4])], [view("y", [4])])).toEqual([-1, 0]);
  });

  it("compares cells only on the same grid", () => {
    expect(sameGrid(view("x", [64]), view("y", [64]))).toBe(true);
    expect(sameGrid(view("x", [64]), view("x", [100]))).toBe(false);
    expect(sameGrid(view("x", [8, 8]), view("x", [64], { bin_rows: 8, bin_cols: 8 }))).toBe(false);
  });

  it("maps a program by (x, y, z)", () => {
    const from: [number, number, number][] = [[0, 0, 0], [1, 0, 0], [2, 0, 0]];
    const to: [number, number, number][] = [[1, 0, 0], [0, 0, 0]];
    expect(programIn(from, to, null)).toBeNull();
    expect(programIn(from, to, 0)).toBe(1);
    expect(programIn(from, to, 2)).toBe(-1);
    expect(programIn(from, to, 7)).toBe(-1);
  });
});

describe("cells touched differently", () => {
  const all = { kinds: [true, true, true] as [boolean, boolean, boolean] };

  it("takes every program's accesses of the kinds shown, never masked-off lanes", () => {
    const fp = footprint(cells([[0, 0, 0, 3], [1, 0, 1, 2], [0, 1, 3, 5], [2, 2, 2, 1], [0, 9, 0, 1]]), 4, all);
    expect([...fp.kinds]).toEqual([1 | 2, 0, 4, 0]); // bin 9 is past the grid: dropped
    expect([...fp.lanes]).toEqual([5, 0, 1, 0]);
    const loads = footprint(cells([[0, 0, 0, 3], [1, 0, 1, 2]]), 1, { kinds: [true, false, false] });
    expect([...loads.kinds]).toEqual([1]);
  });

  it("classes each bin, counts them and says it in words", () => {
    // bins: 0 alike, 1 left only, 2 right only, 3 read here / written there, 4 same kind other lanes, 5 untouched
    const a = footprint(cells([[0, 0, 0, 1], [0, 1, 0, 1], [0, 3, 0, 1], [0, 4, 0, 2]]), 6, all);
    const b = footprint(cells([[3, 0, 0, 1], [0, 2, 1, 1], [0, 3, 1, 1], [1, 4, 0, 3]]), 6, all);
    const d = diffFootprints(a, b);
    expect([...d.cls]).toEqual([SAME, ONLY_A, ONLY_B, KINDS_DIFFER, LANES_DIFFER, SAME]);
    expect(d).toMatchObject({ onlyA: 1, onlyB: 1, kinds: 1, lanes: 1, differ: 3 });
    expect(diffText(d, "yours", "the reference")).toBe(
      "3 cells touched differently (1 only in yours, 1 only in the reference, 1 by other kinds); 1 touched alike but a different number of times",
    );
    const same = diffFootprints(a, a);
    expect(same.differ + same.lanes).toBe(0);
    expect(diffText(same, "yours", "the reference")).toBe("touched alike in yours and the reference");
  });

  it("puts both sides on one heat scale", () => {
    const filter = { mode: "heat" as const, kinds: all.kinds, program: null };
    const a = aggregate(cells([[0, 0, 0, 2], [0, 1, 0, 8]]), 4, filter);
    const b = aggregate(cells([[0, 0, 0, 1], [0, 2, 0, 32]]), 4, filter);
    expect(sharedRange(a, b)).toEqual({ minLanes: 1, maxLanes: 32 });
    const none = aggregate(cells([]), 4, filter);
    expect(sharedRange(a, none)).toEqual({ minLanes: 2, maxLanes: 8 });
    expect(sharedRange(none, none)).toEqual({ minLanes: 0, maxLanes: 0 });
  });
});
