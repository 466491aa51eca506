import { describe, expect, it } from "vitest";
import type { ProfileData } from "../../types";
import {
  buildModel,
  byKey,
  childrenInOrder,
  columnNote,
  humanDuration,
  localDateTime,
  matchText,
  metaValue,
  ratioColour,
  describeNode,
  diffColour,
  flameLayout,
  isUnder,
  longNamesOf,
  matchNodes,
  metaRows,
  nameOf,
  nameTitle,
  parseDepthLimit,
  parseProfileState,
  profileParams,
  prunedText,
  ratioText,
  sortedKids,
  typeOf,
  visibleRows,
  withAncestors,
} from "./model";
import { profileData } from "../../fixtures";
import { hashOf, hashParams } from "../../route";

// ROOT(0) ─┬─ main(1) ─┬─ load(3)
//          │           └─ load(5)      (a second node of the same name)
//          └─ work(2) ─── store(4)
function profile(extra: Partial<ProfileData> = {}): ProfileData {
  const tree = {
    parent: [-1, 0, 0, 1, 2, 1],
    name_id: [0, 1, 2, 3, 4, 3],
    type_id: [0, 0, 0, 1, 1, 1],
    names: ["ROOT", "main", "work", "load", "store"],
    values: [
      [null, 6, 4, 2, 4, 3],
      [null, 1, 1, 2, 2, 5],
    ],
  };
  return profileData(tree, { source: "runs/new.hatchet", columns: ["time/ms", "count"], ...extra });
}

// The same tree as a diff: load(3) is only in the base (removed), load(5) only in the new one.
const diff = (): ProfileData =>
  profile({
    values: [
      [null, 6, 4, null, 4, 3],
      [null, 1, 1, null, 2, 5],
    ],
    base: {
      source: "runs/old.hatchet",
      values: [
        [null, 3, 8, 2, 4, null],
        [null, 1, 1, 1, 2, null],
      ],
    },
  });

const all = (m: { n: number }): Uint8Array => new Uint8Array(m.n).fill(1);

describe("buildModel", () => {
  it("derives depths, CSR children and subtree sizes from the parent list", () => {
    const m = buildModel(profile());
    expect(m.n).toBe(6);
    expect(Array.from(m.depth)).toEqual([0, 1, 1, 2, 2, 2]);
    expect(m.maxDepth).toBe(2);
    expect(Array.from(m.kidStart)).toEqual([0, 2, 4, 5, 5, 5, 5]);
    expect(Array.from(m.kids)).toEqual([1, 2, 3, 5, 4]);
    expect(Array.from(m.subtree)).toEqual([6, 3, 2, 1, 1, 1]);
  });

  it("turns nulls into NaN and has no base, ratio or removed nodes outside a diff", () => {
    const m = buildModel(profile());
    expect(Array.from(m.vals[0])).toEqual([NaN, 6, 4, 2, 4, 3]);
    expect(Array.from(m.vals[1])).toEqual([NaN, 1, 1, 2, 2, 5]);
    expect(m.base).toBeNull();
    expect(m.ratio).toBeNull();
    expect(Array.from(m.removed)).toEqual([0, 0, 0, 0, 0, 0]);
  });

  it("in a diff, marks nodes only in the base as removed and takes new / base of the primary column", () => {
    const m = buildModel(diff());
    expect(Array.from(m.base![0])).toEqual([NaN, 3, 8, 2, 4, NaN]);
    // ROOT has no value on either side: not removed. load(5) is new: not removed either.
    expect(Array.from(m.removed)).toEqual([0, 0, 0, 1, 0, 0]);
    expect(Array.from(m.ratio!)).toEqual([NaN, 2, 0.5, NaN, 1, NaN]);
  });

  it("handles a lone ROOT and an empty tree", () => {
    const one = buildModel(profile({ parent: [-1], name_id: [0], type_id: [0], values: [[null], [7]] }));
    expect(one.n).toBe(1);
    expect(one.maxDepth).toBe(0);
    expect(one.kids.length).toBe(0);
    expect(Array.from(one.kidStart)).toEqual([0, 0]);
    expect(Array.from(one.subtree)).toEqual([1]);
    const none = buildModel(profile({ parent: [], name_id: [], type_id: [], values: [[], []] }));
    expect(none.n).toBe(0);
    expect(none.kids.length).toBe(0);
  });

  it("keeps very large values exactly", () => {
    const m = buildModel(profile({ values: [[null, 1e300, Number.MAX_SAFE_INTEGER, 0, -0, 5e-324], [null, 0, 0, 0, 0, 0]] }));
    expect(m.vals[0][1]).toBe(1e300);
    expect(m.vals[0][2]).toBe(9007199254740991);
    expect(m.vals[0][5]).toBe(5e-324);
  });
});

describe("names and types", () => {
  it("look nodes up through the id tables, with ? for an id out of range", () => {
    const m = buildModel(profile());
    expect(nameOf(m, 5)).toBe("load");
    expect(typeOf(m, 4)).toBe("kernel");
    const bad = buildModel(profile({ name_id: [0, 1, 2, 3, 4, 99], type_id: [0, 0, 0, 1, 1, 7] }));
    expect(nameOf(bad, 5)).toBe("?");
    expect(typeOf(bad, 5)).toBe("?");
  });
});

describe("byKey and sortedKids", () => {
  it("sorts descending by default, ties by index, NaN last", () => {
    const key = Float64Array.of(NaN, 3, 1, NaN, 3);
    expect([0, 1, 2, 3, 4].sort(byKey(key))).toEqual([1, 4, 2, 0, 3]);
  });

  it("keeps NaN last when ascending too", () => {
    const key = Float64Array.of(NaN, 3, 1, NaN, 3);
    expect([4, 3, 2, 1, 0].sort(byKey(key, false))).toEqual([2, 1, 4, 0, 3]);
  });

  it("orders infinite keys like any other", () => {
    const key = Float64Array.of(Infinity, -Infinity, 0);
    expect([0, 1, 2].sort(byKey(key))).toEqual([0, 2, 1]);
  });

  it("sorts each sibling group and leaves the model's own children alone", () => {
    const m = buildModel(profile());
    const kids = sortedKids(m, byKey(m.vals[0]));
    expect(Array.from(kids)).toEqual([1, 2, 5, 3, 4]);
    expect(Array.from(m.kids)).toEqual([1, 2, 3, 5, 4]);
  });
});

describe("matchNodes and withAncestors", () => {
  it("matches names case-insensitively, every node of a matching name", () => {
    const m = buildModel(profile());
    expect(Array.from(matchNodes(m, "LOAD"))).toEqual([0, 0, 0, 1, 0, 1]);
    expect(Array.from(matchNodes(m, "^(main|store)$"))).toEqual([0, 1, 0, 0, 1, 0]);
    expect(Array.from(matchNodes(m, "nothing"))).toEqual([0, 0, 0, 0, 0, 0]);
  });

  it("throws on a pattern that is not a regular expression", () => {
    const m = buildModel(profile());
    expect(() => matchNodes(m, "(")).toThrow(SyntaxError);
  });

  it("adds the ancestors of matches, without changing the match", () => {
    const m = buildModel(profile());
    const match = Uint8Array.of(0, 0, 0, 0, 1, 0);
    expect(Array.from(withAncestors(m, match))).toEqual([1, 0, 1, 0, 1, 0]);
    expect(Array.from(match)).toEqual([0, 0, 0, 0, 1, 0]);
    expect(Array.from(withAncestors(m, new Uint8Array(6)))).toEqual([0, 0, 0, 0, 0, 0]);
  });
});

describe("isUnder", () => {
  it("tells whether a node is in a subtree (the subtree's top included)", () => {
    const m = buildModel(profile());
    expect(isUnder(m, 3, 1)).toBe(true);
    expect(isUnder(m, 1, 1)).toBe(true);
    expect(isUnder(m, 4, 1)).toBe(false);
    expect(isUnder(m, 0, 1)).toBe(false);
    for (let i = 0; i < m.n; i++) expect(isUnder(m, i, 0)).toBe(true);
  });
});

describe("flameLayout", () => {
  it("packs children left to right from the parent's left, largest first", () => {
    const m = buildModel(profile());
    const { width, x0 } = flameLayout(m, 0);
    // ROOT has no value: it is as wide as main (6) and work (4) together.
    expect(Array.from(width)).toEqual([10, 6, 4, 2, 4, 3]);
    // main's children: load(5) = 3 before load(3) = 2.
    expect(Array.from(x0)).toEqual([0, 0, 6, 3, 6, 0]);
    expect(flameLayout(m, 0).overflowing).toBe(0); // every frame covers its children
  });

  it("follows the column asked for", () => {
    const m = buildModel(profile());
    const { width, x0 } = flameLayout(m, 1);
    expect(Array.from(width)).toEqual([2, 1, 1, 2, 2, 5]);
    expect(Array.from(x0)).toEqual([0, 0, 1, 5, 1, 0]);
    // a count is not inclusive here: main (1) under its 2 + 5, work (1) under its 2
    expect(flameLayout(m, 1).overflowing).toBe(2);
  });

  it("draws a negative value 0 wide, and a leaf without a value too", () => {
    const m = buildModel(profile({ values: [[null, -5, 4, null, 4, 3], [null, 0, 0, 0, 0, 0]] }));
    const { width, x0 } = flameLayout(m, 0);
    expect(Array.from(width)).toEqual([4, 0, 4, 0, 4, 3]);
    // main (0 wide) comes after work; its children still start at its left edge.
    expect(Array.from(x0)).toEqual([0, 4, 0, 7, 0, 4]);
  });

  it("lays out a lone ROOT", () => {
    const m = buildModel(profile({ parent: [-1], name_id: [0], type_id: [0], values: [[2.5], [1]] }));
    const { width, x0 } = flameLayout(m, 0);
    expect(Array.from(width)).toEqual([2.5]);
    expect(Array.from(x0)).toEqual([0]);
  });
});

describe("diffColour", () => {
  it("shows added nodes red, and nodes with nothing on either side grey", () => {
    expect(diffColour(5, 0)).toBe("hsl(350 80% 58%)");
    expect(diffColour(5, NaN)).toBe("hsl(350 80% 58%)");
    expect(diffColour(0, 0)).toBe("hsl(0 0% 86%)");
    expect(diffColour(NaN, NaN)).toBe("hsl(0 0% 86%)");
  });

  it("shows nodes that went to zero (or lost their value) fully green", () => {
    expect(diffColour(0, 5)).toBe("hsl(130 55% 55%)");
    expect(diffColour(NaN, 5)).toBe("hsl(130 55% 55%)");
  });

  it("saturates at a ratio of 4 either way", () => {
    expect(diffColour(4, 1)).toBe("hsl(350 80% 58%)");
    expect(diffColour(1e6, 1)).toBe("hsl(350 80% 58%)");
    expect(diffColour(1, 4)).toBe("hsl(130 80% 58%)");
  });

  it("grades by |log ratio|: ×2 is half way", () => {
    // t = ln 2 / ln 4 = 0.5: saturation 25 + 27.5 → 53, lightness 88 - 15 = 73.
    expect(diffColour(2, 1)).toBe("hsl(350 53% 73%)");
    expect(diffColour(1, 2)).toBe("hsl(130 53% 73%)");
  });

  it("shows changes under about 3% grey", () => {
    expect(diffColour(1, 1)).toBe("hsl(0 0% 86%)");
    expect(diffColour(101, 100)).toBe("hsl(0 0% 86%)");
  });
});

describe("describeNode", () => {
  it("lists name, type and every column", () => {
    const m = buildModel(profile());
    expect(describeNode(m, 1)).toBe("main\ntype: function\ntime/ms: 6\ncount: 1");
    expect(describeNode(m, 0)).toBe("ROOT\ntype: function\ntime/ms: –\ncount: –");
  });

  it("adds the base and the ratio in a diff, and says which nodes were added", () => {
    const m = buildModel(diff());
    expect(describeNode(m, 1)).toBe("main\ntype: function\ntime/ms: 6   base 3  ×2\ncount: 1   base 1  ×1");
    expect(describeNode(m, 5)).toBe("load\ntype: kernel\ntime/ms: 3   base –  (added)\ncount: 5   base –  (added)");
    expect(describeNode(m, 3)).toBe("load\ntype: kernel\ntime/ms: –   base 2\ncount: –   base 1");
  });
});

describe("long names", () => {
  // load is a C++ kernel: shown short, demangled in full and recorded mangled; store is shown as recorded.
  const named = (): ProfileData =>
    profile({
      names: ["ROOT", "main", "work", "load<…>", "store"],
      full_names: ["ROOT", "main", "work", "void at::load<float>(float*)", "store"],
      raw_names: ["ROOT", "main", "work", "_ZN2at4loadIfEEvPT_", "store"],
    });

  it("gives the full and the recorded name only where they differ from the shown one", () => {
    const m = buildModel(named());
    expect(longNamesOf(m, 3)).toEqual({ full: "void at::load<float>(float*)", raw: "_ZN2at4loadIfEEvPT_" });
    expect(longNamesOf(m, 4)).toEqual({ full: null, raw: null });
    expect(longNamesOf(buildModel(profile()), 3)).toEqual({ full: null, raw: null }); // an older page
  });

  it("hovers with the full name and the recorded one, and lists the full one in the tooltip", () => {
    const m = buildModel(named());
    expect(nameTitle(m, 3)).toBe("void at::load<float>(float*)\n_ZN2at4loadIfEEvPT_ (kernel)");
    expect(nameTitle(m, 4)).toBe("store (kernel)");
    expect(describeNode(m, 3).split("\n").slice(0, 3)).toEqual(["load<…>", "void at::load<float>(float*)", "type: kernel"]);
  });
});

describe("ratioText", () => {
  it("writes a ratio with a ×, or a dash for none", () => {
    expect(ratioText(2)).toBe("×2");
    expect(ratioText(0.5)).toBe("×0.500");
    expect(ratioText(1234.5)).toBe("×1234.5");
    expect(ratioText(NaN)).toBe("–");
    expect(ratioText(Infinity)).toBe("×∞");
  });
});

describe("childrenInOrder", () => {
  it("orders by a column's key, either way", () => {
    const m = buildModel(profile());
    expect(Array.from(childrenInOrder(m, 1, m.vals[0], true))).toEqual([5, 3]);
    expect(Array.from(childrenInOrder(m, 1, m.vals[0], false))).toEqual([3, 5]);
  });

  it("orders by name without a key; descending reverses names and ties alike", () => {
    const m = buildModel(profile());
    expect(Array.from(childrenInOrder(m, 0, null, false))).toEqual([1, 2]);
    expect(Array.from(childrenInOrder(m, 0, null, true))).toEqual([2, 1]);
    // Both children of main are "load": a tie, broken by index.
    expect(Array.from(childrenInOrder(m, 1, null, false))).toEqual([3, 5]);
    expect(Array.from(childrenInOrder(m, 1, null, true))).toEqual([5, 3]);
  });

  it("gives a leaf no children and one child as it is", () => {
    const m = buildModel(profile());
    expect(childrenInOrder(m, 3, m.vals[0], true).length).toBe(0);
    expect(Array.from(childrenInOrder(m, 2, null, true))).toEqual([4]);
  });
});

describe("visibleRows", () => {
  const m = buildModel(profile());
  const byTime = (i: number): Int32Array => childrenInOrder(m, i, m.vals[0], true);

  it("flattens the open tree depth first, children in the order given", () => {
    expect(Array.from(visibleRows(m, all(m), null, Infinity, byTime))).toEqual([0, 1, 5, 3, 2, 4]);
  });

  it("shows the children of open nodes only", () => {
    const open = Uint8Array.of(1, 0, 0, 0, 0, 0);
    expect(Array.from(visibleRows(m, open, null, Infinity, byTime))).toEqual([0, 1, 2]);
    expect(Array.from(visibleRows(m, new Uint8Array(6), null, Infinity, byTime))).toEqual([0]);
  });

  it("stops at the depth limit", () => {
    expect(Array.from(visibleRows(m, all(m), null, 1, byTime))).toEqual([0, 1, 2]);
    expect(Array.from(visibleRows(m, all(m), null, 0, byTime))).toEqual([0]);
  });

  it("skips the nodes a filter does not keep", () => {
    const keep = Uint8Array.of(1, 0, 1, 0, 1, 0);
    expect(Array.from(visibleRows(m, all(m), keep, Infinity, byTime))).toEqual([0, 2, 4]);
  });
});

describe("parseDepthLimit", () => {
  it("reads a whole, non-negative depth; empty or unreadable means no limit", () => {
    expect(parseDepthLimit("")).toBe(Infinity);
    expect(parseDepthLimit("3")).toBe(3);
    expect(parseDepthLimit("2.7")).toBe(2);
    expect(parseDepthLimit("0")).toBe(0);
    expect(parseDepthLimit("-4")).toBe(0);
    expect(parseDepthLimit("abc")).toBe(Infinity);
    expect(parseDepthLimit("1e400")).toBe(Infinity);
  });
});

describe("metaRows", () => {
  it("lists the source, the metadata (objects as JSON, empty values left out) and the node count", () => {
    const data = profile({ metadata: { device: "H100", note: "", missing: null, config: { warps: 4 }, runs: 0 } });
    expect(metaRows(data)).toEqual([
      ["source", "runs/new.hatchet"],
      ["device", "H100"],
      ["config", '{"warps":4}'],
      ["runs", "0"],
      ["nodes", "6"],
    ]);
  });

  it("puts the base right after the source in a diff", () => {
    expect(metaRows(diff()).slice(0, 2)).toEqual([
      ["source", "runs/new.hatchet"],
      ["base", "runs/old.hatchet"],
    ]);
  });
});

describe("prunedText", () => {
  it("says nothing when nothing was pruned", () => {
    expect(prunedText(profile())).toBeNull();
  });

  it("counts the nodes shown and names the threshold as a percentage", () => {
    const data = profile({ total_nodes: 250000, pruned_nodes: 1500, threshold: 0.001 });
    expect(prunedText(data)).toBe("248,500 of 250,000 nodes shown (below 0.100% left out)");
    const huge = profile({ total_nodes: 12_000_000, pruned_nodes: 11_000_000, threshold: 0.01 });
    expect(prunedText(huge)).toBe("1.00M of 12.0M nodes shown (below 1% left out)");
  });
});

describe("metadata values", () => {
  it("shows epoch seconds as a local date-time and adds the run's duration", () => {
    const start = 1795641574.838;
    const d = new Date(start * 1000);
    const two = (n: number): string => String(n).padStart(2, "0");
    const expected = `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
    expect(localDateTime(start)).toBe(expected);
    const rows = metaRows(profile({ metadata: { start_time: start, end_time: start + 2.5, pid: 16331 } }));
    expect(rows).toContainEqual(["start_time", expected]);
    expect(rows).toContainEqual(["duration", "2.50 s"]);
    expect(rows).toContainEqual(["pid", "16331"]); // a plain number stays as written
    expect(rows.map((r) => r[0]).indexOf("duration")).toBe(rows.map((r) => r[0]).indexOf("end_time") + 1);
  });

  it("gives durations a unit by the key's suffix", () => {
    expect(metaValue("overhead_ns", 1_234_567)).toBe("1.23 ms");
    expect(metaValue("flush_us", 250)).toBe("250 µs");
    expect(metaValue("duration", 75)).toBe("1 min 15 s");
    expect(metaValue("start_time", 12.5)).toBe("12.5"); // too small to be an instant
    expect(metaValue("config", { a: 1 })).toBe('{"a":1}');
    expect(humanDuration(7300)).toBe("2 h 1 min");
    expect(humanDuration(0.0004)).toBe("400 µs");
  });
});

describe("columnNote", () => {
  it("is null while some frame has the column", () => {
    expect(columnNote(buildModel(profile()), 0)).toBeNull();
  });

  it("says why util is empty: no device table, or no kernel with all it needs", () => {
    const data = profile({ columns: ["time/ms", "util"], values: [[null, 6, 4, 2, 4, 3], [null, null, null, null, null, null]] });
    expect(columnNote(buildModel(data), 1)).toBe(
      "no frame has util: the profile has no device table (util needs each kernel's GPU; record on a GPU); pick another width column",
    );
    const withDevice = { ...data, metadata: { "device GPU:0": "sm_90" } };
    expect(columnNote(buildModel(withDevice), 1)).toContain("no kernel has all three");
  });

  it("says when every value is zero", () => {
    const data = profile({ values: [[null, 6, 4, 2, 4, 3], [0, 0, 0, 0, 0, 0]] });
    expect(columnNote(buildModel(data), 1)).toBe("every frame has count 0: nothing to draw; pick another width column");
  });
});

describe("matchText", () => {
  it("says no frame matches, or how many do", () => {
    expect(matchText("xyz", 0)).toBe("no frame matches 'xyz'");
    expect(matchText("load", 1)).toBe("1 frame matches 'load'");
    expect(matchText("o", 2500)).toBe("2,500 frames match 'o'");
  });
});

describe("ratioColour", () => {
  it("colours slower red and faster green like the flame graph, nothing without a ratio", () => {
    expect(ratioColour(2)).toBe(diffColour(2, 1));
    expect(ratioColour(2)).toMatch(/^hsl\(350 /);
    expect(ratioColour(0.5)).toMatch(/^hsl\(130 /);
    expect(ratioColour(NaN)).toBeNull();
  });
});

describe("parseProfileState and profileParams", () => {
  it("reads the profile, the flat view's name, the zoomed and picked frames, and writes them back", () => {
    const state = parseProfileState({ profile: "1", flat: "1", frame: "gemm", zoom: "12", sel: "14" });
    expect(state).toEqual({ profile: 1, flat: true, frame: "gemm", zoom: 12, sel: 14 });
    expect(profileParams(state)).toEqual({ profile: 1, flat: 1, frame: "gemm", zoom: 12, sel: 14 });
    expect(hashOf("profile", profileParams(state))).toBe("#profile?profile=1&flat=1&frame=gemm&zoom=12&sel=14");
  });

  it("leaves defaults and malformed values out: ROOT zoom, no pick, no name outside the flat view", () => {
    const none = parseProfileState({});
    expect(none).toEqual({ profile: 0, flat: false, frame: null, zoom: 0, sel: -1 });
    expect(hashOf("profile", profileParams(none))).toBe("#profile");
    expect(parseProfileState({ zoom: "-3", sel: "1.5", profile: "x", flat: "yes" })).toEqual(none);
    expect(profileParams({ profile: 0, flat: false, frame: "gemm", zoom: 0, sel: 0 })).toEqual({ profile: null, flat: null, frame: null, zoom: null, sel: null });
    expect(hashParams(hashOf("profile", profileParams({ ...none, flat: true, frame: "a b&c" })))).toEqual({ flat: "1", frame: "a b&c" });
  });
});
