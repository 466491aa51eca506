import { describe, expect, it } from "vitest";
import type { ProfileData } from "../../types";
import { callerTree, flatDiffRows, flatRows, isAdditive, sandwich, selfValue, sortFlat, sumRatio } from "./flatmodel";
import { buildModel } from "./model";
import { profileData } from "../../fixtures";

// ROOT(0) ─┬─ f(1) 10 ─┬─ f(2) 6 ─── k(3) 4     (f nested in itself)
//          │           └─ g(4) 3
//          └─ g(5) 5 ─── k(6) 2
function recursive(): ProfileData {
  const values = [
    [null, 10, 6, 4, 3, 5, 2],
    [null, 1, 1, 1, 1, 1, 1],
  ];
  const tree = { parent: [-1, 0, 1, 2, 1, 0, 5], name_id: [0, 1, 1, 3, 2, 2, 3], type_id: [0, 0, 0, 1, 0, 0, 1], names: ["ROOT", "f", "g", "k"], values };
  return profileData(tree, { name: "r.hatchet", source: "r.hatchet" });
}

describe("flatRows", () => {
  it("sums each name over its places: total once per outermost place, self of every place", () => {
    const rows = flatRows(buildModel(recursive()), 0);
    expect(rows.map((r) => [r.name, r.total, r.self, r.places])).toEqual([
      ["f", 10, 3, 2], // the inner f (6) is inside the outer one: not counted twice
      ["g", 8, 6, 2],
      ["k", 6, 6, 2],
    ]);
  });

  it("reads a missing value as 0 and leaves ROOT out", () => {
    const data = recursive();
    data.values[0][4] = null;
    const rows = flatRows(buildModel(data), 0);
    expect(rows.find((r) => r.name === "g")).toMatchObject({ total: 5, self: 3 });
    expect(rows.some((r) => r.name === "ROOT")).toBe(false);
  });
});

describe("self values", () => {
  it("a frame its children fill has self 0, not float residue (0.8 - 0.1 - 0.7)", () => {
    const data = recursive();
    data.values[0][5] = 0.8; // g(5) = 0.8 over k(6) = 0.1 and a new child h = 0.7
    data.values[0][6] = 0.1;
    data.values[0].push(0.7);
    data.values[1].push(1);
    data.parent.push(5);
    data.name_id.push(4);
    data.type_id.push(0);
    data.names.push("h");
    const m = buildModel(data);
    expect(0.8 - 0.1 - 0.7).toBeGreaterThan(0); // 1.1e-16: the residue the old view printed
    expect(selfValue(m, m.vals[0], 5)).toBe(0);
    expect(selfValue(m, m.vals[0], 1)).toBe(1); // f(1) 10 over 6 and 3: a real self value stays
  });
});

describe("sortFlat", () => {
  const rows = flatRows(buildModel(recursive()), 0);
  it("sorts by any header, either way, ties by name", () => {
    expect(sortFlat(rows, "self", true).map((r) => r.name)).toEqual(["g", "k", "f"]);
    expect(sortFlat(rows, "self", false).map((r) => r.name)).toEqual(["f", "g", "k"]);
    expect(sortFlat(rows, "places", true).map((r) => r.name)).toEqual(["f", "g", "k"]);
    expect(sortFlat(rows, "name", false).map((r) => r.name)).toEqual(["f", "g", "k"]);
    expect(sortFlat(rows, "name", true).map((r) => r.name)).toEqual(["k", "g", "f"]);
  });
});

describe("calls and average", () => {
  it("adds each name's calls over all its places, the average being total / calls", () => {
    const data = recursive();
    data.calls = [null, 2, 3, 40, null, 5, 10]; // f 2 + 3, k 40 + 10 launches, g: only g(5) records
    const rows = flatRows(buildModel(data), 0);
    expect(rows.map((r) => [r.name, r.calls, r.average])).toEqual([
      ["f", 5, 10 / 5],
      ["g", 5, 8 / 5],
      ["k", 50, 6 / 50],
    ]);
    expect(sortFlat(rows, "calls", true).map((r) => r.name)).toEqual(["k", "f", "g"]);
    expect(sortFlat(rows, "average", true).map((r) => r.name)).toEqual(["f", "g", "k"]);
  });

  it("is NaN (shown blank, sorted last) where no frame of the name records calls", () => {
    const rows = flatRows(buildModel(recursive()), 0);
    expect(rows.every((r) => Number.isNaN(r.calls) && Number.isNaN(r.average))).toBe(true);
    const data = recursive();
    data.calls = [null, 2, 3, null, null, null, null];
    const some = flatRows(buildModel(data), 0);
    expect(sortFlat(some, "calls", false).map((r) => r.name)).toEqual(["f", "g", "k"]);
    expect(some.find((r) => r.name === "k")!.calls).toBeNaN();
  });
});

describe("callerTree", () => {
  // ROOT ─┬─ a 10 ─┬─ b 6 ─── k 4
  //       │        └─ k 3
  //       └─ c 5 ──── b 5 ─── k 2
  function sites(): ProfileData {
    const tree = {
      parent: [-1, 0, 1, 2, 1, 0, 5, 6],
      name_id: [0, 1, 2, 3, 3, 4, 2, 3],
      type_id: [0, 0, 0, 1, 1, 0, 0, 1],
      names: ["ROOT", "a", "b", "k", "c"],
      values: [[null, 10, 6, 4, 3, 5, 5, 2]],
    };
    return profileData(tree, { name: "s.hatchet", source: "s.hatchet" });
  }

  it("lists every call site, direct callers first, then theirs up to ROOT's children", () => {
    const t = callerTree(buildModel(sites()), 0, 3);
    expect(t.total).toBe(9);
    const flat = (nodes: typeof t.callers, depth = 0): [number, string, number][] => nodes.flatMap((n) => [[depth, n.name, n.value] as [number, string, number], ...flat(n.callers, depth + 1)]);
    // k under b (4 + 2, called from a and from c) and directly under a (3).
    expect(flat(t.callers)).toEqual([
      [0, "b", 6],
      [1, "a", 4],
      [1, "c", 2],
      [0, "a", 3],
    ]);
    expect(t.callers[0].share).toBeCloseTo(6 / 9);
    expect(t.callers[0].callers[1].share).toBeCloseTo(2 / 9);
  });

  it("is empty for a name called from ROOT only; nested places count once", () => {
    const m = buildModel(sites());
    expect(callerTree(m, 0, 1)).toEqual({ total: 10, callers: [] });
    const r = callerTree(buildModel(recursive()), 0, 1); // f inside f: the outer place only
    expect(r).toEqual({ total: 10, callers: [] });
  });
});

describe("sandwich", () => {
  const m = buildModel(recursive());
  it("gives a name's callers and callees with their share of its total", () => {
    expect(sandwich(m, 0, 3)).toEqual({
      total: 6,
      callers: [
        { name: "f", value: 4, share: 4 / 6 },
        { name: "g", value: 2, share: 2 / 6 },
      ],
      callees: [],
    });
    expect(sandwich(m, 0, 2)).toEqual({
      total: 8,
      callers: [
        { name: "ROOT", value: 5, share: 5 / 8 },
        { name: "f", value: 3, share: 3 / 8 },
      ],
      callees: [{ name: "k", value: 2, share: 2 / 8 }],
    });
  });

  it("counts a name nested in itself at its outermost places: the inner one is a callee", () => {
    const f = sandwich(m, 0, 1);
    expect(f.callers).toEqual([{ name: "ROOT", value: 10, share: 1 }]);
    expect(f.callees).toEqual([
      { name: "f", value: 6, share: 0.6 },
      { name: "g", value: 3, share: 0.3 },
    ]);
  });
});

describe("isAdditive", () => {
  it("sums times, percentages and counts, not rates or averages", () => {
    expect(["time/ms", "time/%", "count", "flops"].map(isAdditive)).toEqual([true, true, true, true]);
    expect(["avg/ms", "tflop/s", "gbyte/s", "util"].map(isAdditive)).toEqual([false, false, false, false]);
  });
});

// A diff (new against base) on the union tree; values are inclusive, as the server sends them.
// ROOT(0) ─┬─ A(1) new 9, base 6 ─┬─ gemm(2) 6 / 2
//          │                      ├─ fresh(3) 2 / –     (only in the new profile)
//          │                      └─ gone(4) – / 3      (only in the base)
//          └─ B(5) new 4, base 5 ─── gemm(6) 2 / 2
function diff(): ProfileData {
  const values = [
    [13, 9, 6, 2, null, 4, 2],
    [1, 1, 1, 1, null, 1, 1],
  ];
  const base = {
    source: "old.hatchet",
    values: [
      [11, 6, 2, null, 3, 5, 2],
      [1, 1, 1, null, 1, 1, 1],
    ],
  };
  const tree = { parent: [-1, 0, 1, 1, 1, 0, 5], name_id: [0, 1, 2, 3, 4, 5, 2], type_id: [0, 0, 1, 1, 1, 0, 1], names: ["ROOT", "A", "gemm", "fresh", "gone", "B"], values };
  return profileData(tree, { base });
}

describe("flatDiffRows", () => {
  const rows = flatDiffRows(buildModel(diff()), 0);
  const byName = Object.fromEntries(rows.map((r) => [r.name, r]));

  it("sums each name in both profiles over the whole tree: ratio and change of the sums", () => {
    // gemm is 3x slower under A and unchanged under B: over the profile, 8 / 4.
    expect(byName.gemm).toMatchObject({ total: 8, base: 4, ratio: 2, change: 4, self: 8, places: 2, only: null });
    expect(byName.A).toMatchObject({ total: 9, base: 6, ratio: 1.5, change: 3, self: 1, places: 1, only: null });
    expect(byName.B).toMatchObject({ total: 4, base: 5, ratio: 0.8, change: -1, self: 2, places: 1, only: null });
    expect(rows.some((r) => r.name === "ROOT")).toBe(false);
  });

  it("gives a name of one profile only no ratio, its missing side NaN, its change in full", () => {
    expect(byName.fresh).toMatchObject({ total: 2, self: 2, places: 1, change: 2, only: "new" });
    expect(byName.fresh.base).toBeNaN();
    expect(byName.fresh.ratio).toBeNaN();
    expect(byName.gone).toMatchObject({ base: 3, change: -3, only: "base" });
    for (const key of ["total", "self", "places", "ratio"] as const) expect(byName.gone[key]).toBeNaN();
  });

  it("sorts by ratio or change over all names, not per sibling group; no ratio last either way", () => {
    expect(rows.map((r) => r.name)).toEqual(["A", "gemm", "B", "fresh", "gone"]); // total, largest first
    expect(sortFlat(rows, "ratio", true).map((r) => r.name)).toEqual(["gemm", "A", "B", "fresh", "gone"]);
    expect(sortFlat(rows, "ratio", false).map((r) => r.name)).toEqual(["B", "A", "gemm", "fresh", "gone"]);
    expect(sortFlat(rows, "change", true).map((r) => r.name)).toEqual(["gemm", "A", "fresh", "B", "gone"]);
    expect(sortFlat(rows, "change", false).map((r) => r.name)).toEqual(["gone", "B", "fresh", "A", "gemm"]);
    expect(sortFlat(rows, "base", true).map((r) => r.name)).toEqual(["A", "B", "gemm", "gone", "fresh"]);
    expect(sortFlat(rows, "total", false).map((r) => r.name)).toEqual(["fresh", "B", "gemm", "A", "gone"]);
  });

  it("refuses a profile without a base; a single profile's rows sort by ratio by name", () => {
    expect(() => flatDiffRows(buildModel(recursive()), 0)).toThrow(/diff/);
    const single = flatRows(buildModel(recursive()), 0);
    expect(sortFlat(single, "ratio", true).map((r) => r.name)).toEqual(["f", "g", "k"]);
  });

  it("sums the base's column of the chosen index", () => {
    const avg = Object.fromEntries(flatDiffRows(buildModel(diff()), 1).map((r) => [r.name, r]));
    expect(avg.gemm).toMatchObject({ total: 2, base: 2, ratio: 1 });
  });
});

describe("sumRatio", () => {
  it("is new / base only where both sides have the thing and the base is above 0", () => {
    expect(sumRatio(6, 2, true, true)).toBe(3);
    expect(sumRatio(6, 0, true, true)).toBeNaN();
    expect(sumRatio(6, 2, true, false)).toBeNaN();
    expect(sumRatio(0, 2, false, true)).toBeNaN();
  });
});

describe("sandwich in a diff", () => {
  const m = buildModel(diff());
  it("gives each caller and callee its base value and ratio beside its value", () => {
    expect(sandwich(m, 0, 2)).toEqual({
      total: 8,
      base: 4,
      ratio: 2,
      callers: [
        { name: "A", value: 6, share: 0.75, base: 2, ratio: 3 },
        { name: "B", value: 2, share: 0.25, base: 2, ratio: 1 },
      ],
      callees: [],
    });
  });

  it("says a side without the call with NaN and lists it last", () => {
    const a = sandwich(m, 0, 1);
    expect(a.callers).toEqual([{ name: "ROOT", value: 9, share: 1, base: 6, ratio: 1.5 }]);
    expect(a.callees.map((n) => n.name)).toEqual(["gemm", "fresh", "gone"]);
    expect(a.callees[1]).toMatchObject({ value: 2, share: 2 / 9 });
    expect(a.callees[1].base).toBeNaN();
    expect(a.callees[2]).toMatchObject({ base: 3, share: 0 });
    expect(a.callees[2].value).toBeNaN();
    const gone = sandwich(m, 0, 4);
    expect(gone.total).toBeNaN();
    expect(gone.base).toBe(3);
    expect(gone.ratio).toBeNaN();
    expect(gone.callers).toHaveLength(1);
    expect(gone.callers[0]).toMatchObject({ name: "A", base: 3, share: 0 });
  });
});
