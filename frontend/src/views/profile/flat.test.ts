import { describe, expect, it } from "vitest";
import type { ProfileData } from "../../types";
import { buildModel, flatRows, isAdditive, sandwich, sortFlat } from "./model";

// ROOT(0) ─┬─ f(1) 10 ─┬─ f(2) 6 ─── k(3) 4     (f nested in itself)
//          │           └─ g(4) 3
//          └─ g(5) 5 ─── k(6) 2
function recursive(): ProfileData {
  return {
    name: "r.hatchet",
    source: "r.hatchet",
    metadata: {},
    columns: ["time/ms", "avg/ms"],
    primary: 0,
    parent: [-1, 0, 1, 2, 1, 0, 5],
    name_id: [0, 1, 1, 3, 2, 2, 3],
    type_id: [0, 0, 0, 1, 0, 0, 1],
    names: ["ROOT", "f", "g", "k"],
    types: ["function", "kernel"],
    values: [
      [null, 10, 6, 4, 3, 5, 2],
      [null, 1, 1, 1, 1, 1, 1],
    ],
    total_nodes: 7,
    pruned_nodes: 0,
    threshold: 0,
  };
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
