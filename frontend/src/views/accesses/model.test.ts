import { describe, expect, it } from "vitest";
import { expectAnswers, launchData as launch, tensorView as view } from "../../fixtures";
import type { AccessCells, CheckData, Finding, PlacedFinding, RecordRef } from "../../types";
import {
  aggregate,
  asCells,
  binColours,
  cellRange,
  clampProgram,
  clampSlice,
  darken,
  dim,
  EMPTY,
  emptyCells,
  findingMarkers,
  findingOnGrid,
  findingRows,
  findingsOnSlice,
  geometry,
  HEAT,
  heatStops,
  hoverText,
  hslPacked,
  KIND_NAMES,
  launchLabel,
  launchWithTensor,
  linesByFile,
  MASKED,
  MASKED_COLOUR,
  pack,
  packedCss,
  programPalette,
  rangeText,
  SEVERITY_COLOUR,
  sliceIndex,
  touchesOf,
  type Filter,
  type LaunchRef,
} from "./model";

const ALL: Filter = { mode: "program", kinds: [true, true, true], program: null };
const css = (colour: number): string => packedCss(colour);

// A 2×2 grid (bins 0..3) and its cells: program 2 loads and program 1 stores in bin 0, program 1
// loads bin 1 (and has masked-off atomic lanes there), program 0 has masked-off load lanes in
// bin 3, program 1 masked-off store lanes in bin 2, and one malformed entry points past the grid.
function cells(): AccessCells {
  return {
    program: Uint32Array.of(2, 1, 1, 0, 1, 0, 1),
    bin: Uint32Array.of(0, 0, 1, 3, 2, 9, 1),
    kind: Uint8Array.of(0, 1, 0, 3, 4, 0, 5),
    site: Int32Array.of(0, 1, 0, -1, 2, 0, 1),
    lanes: Uint32Array.of(4, 2, 8, 4, 1, 100, 3),
  };
}

function finding(extra: Partial<PlacedFinding> = {}): PlacedFinding {
  return { kind: "out-of-bounds", severity: "error", message: "oob", line: 12, program: [1, 0, 0], index: [1], slice: null, bin: [0, 1], ...extra };
}

describe("kinds", () => {
  it("name the access kinds, the masked-off ones MASKED codes later", () => {
    expect(MASKED).toBe(3);
    expect(KIND_NAMES.length).toBe(6);
    for (let k = MASKED; k < KIND_NAMES.length; k++) expect(KIND_NAMES[k]).toBe(`masked ${KIND_NAMES[k % MASKED]}`);
  });
});

describe("aggregate", () => {
  it("finds each bin's lowest program, whether several touch it, and its lanes", () => {
    const a = aggregate(cells(), 4, ALL);
    expect(Array.from(a.first)).toEqual([1, 1, -1, -1]);
    expect(Array.from(a.multi)).toEqual([1, 0, 0, 0]);
    expect(Array.from(a.lanes)).toEqual([6, 8, 0, 0]);
    expect(a.touched).toBe(2);
    expect(a.minLanes).toBe(6);
    expect(a.maxLanes).toBe(8);
  });

  it("shows masked-off lanes only for the selected program, and only where it does not access", () => {
    const none = aggregate(cells(), 4, ALL);
    expect(Array.from(none.masked)).toEqual([0, 0, 0, 0]);
    expect(Array.from(none.mine)).toEqual([0, 0, 0, 0]);
    expect(none.selected).toBe(0);
    // Program 1: its masked atomic lanes in bin 1 hide behind its load there; bin 2 stays masked.
    const one = aggregate(cells(), 4, { ...ALL, program: 1 });
    expect(Array.from(one.mine)).toEqual([1, 1, 0, 0]);
    expect(Array.from(one.masked)).toEqual([0, 0, 1, 0]);
    expect(one.selected).toBe(2);
    expect(one.maskedSelected).toBe(1);
    // Program 0 only accessed past the grid (skipped) and has masked lanes in bin 3.
    const zero = aggregate(cells(), 4, { ...ALL, program: 0 });
    expect(Array.from(zero.mine)).toEqual([0, 0, 0, 0]);
    expect(Array.from(zero.masked)).toEqual([0, 0, 0, 1]);
    expect(zero.touched).toBe(2);
  });

  it("skips the kinds filtered out, masked-off lanes with their access's kind", () => {
    const a = aggregate(cells(), 4, { ...ALL, kinds: [true, false, true], program: 1 });
    expect(Array.from(a.first)).toEqual([2, 1, -1, -1]);
    expect(Array.from(a.multi)).toEqual([0, 0, 0, 0]);
    expect(Array.from(a.lanes)).toEqual([4, 8, 0, 0]);
    expect(Array.from(a.masked)).toEqual([0, 0, 0, 0]); // its masked stores are off too
    const loadsOff = aggregate(cells(), 4, { ...ALL, kinds: [false, true, false] });
    expect(Array.from(loadsOff.first)).toEqual([1, -1, -1, -1]);
    expect(loadsOff.touched).toBe(1);
  });

  it("reports 0 lanes, not infinities, when nothing is touched", () => {
    const a = aggregate(emptyCells(), 4, ALL);
    expect(Array.from(a.first)).toEqual([-1, -1, -1, -1]);
    expect(a.touched).toBe(0);
    expect(a.minLanes).toBe(0);
    expect(a.maxLanes).toBe(0);
    const none = aggregate(cells(), 0, ALL);
    expect(none.first.length).toBe(0);
    expect(none.touched).toBe(0);
  });

  it("adds lane counts beyond 32 bits exactly", () => {
    const c: AccessCells = {
      program: Uint32Array.of(0, 0),
      bin: Uint32Array.of(0, 0),
      kind: Uint8Array.of(0, 1),
      site: Int32Array.of(0, 0),
      lanes: Uint32Array.of(4294967295, 4294967295),
    };
    expect(aggregate(c, 1, ALL).lanes[0]).toBe(8589934590);
  });
});

describe("geometry", () => {
  it("scales square cells so the longer side fits 512 px", () => {
    expect(geometry(1, 1)).toEqual({ cellW: 512, cellH: 512, width: 512, height: 512 });
    expect(geometry(512, 512)).toEqual({ cellW: 1, cellH: 1, width: 512, height: 512 });
    expect(geometry(3, 100)).toEqual({ cellW: 5, cellH: 5, width: 500, height: 15 });
  });

  it("keeps at least 1 px a cell for grids over 512 bins", () => {
    expect(geometry(1000, 10)).toEqual({ cellW: 1, cellH: 1, width: 10, height: 1000 });
  });

  it("makes short grids (1-D tensors) at least 14 px tall", () => {
    expect(geometry(1, 64)).toEqual({ cellW: 8, cellH: 14, width: 512, height: 14 });
    expect(geometry(2, 100)).toEqual({ cellW: 5, cellH: 7, width: 500, height: 14 });
  });

  it("gives an empty grid no size", () => {
    expect(geometry(0, 0)).toEqual({ cellW: 512, cellH: 14, width: 0, height: 0 });
  });
});

describe("packed colours", () => {
  it("are the bytes of an opaque RGBA pixel read little-endian", () => {
    expect(pack(1, 2, 3)).toBe(0xff030201);
    expect(Array.from(new Uint8Array(Uint32Array.of(pack(1, 2, 3)).buffer))).toEqual([1, 2, 3, 255]);
    expect(css(pack(1, 2, 3))).toBe("rgb(1 2 3)");
    expect(css(EMPTY)).toBe("rgb(241 243 245)");
    expect(css(MASKED_COLOUR)).toBe("rgb(73 80 87)");
  });

  it("convert HSL at the primaries and greys", () => {
    expect(css(hslPacked(0, 1, 0.5))).toBe("rgb(255 0 0)");
    expect(css(hslPacked(60, 1, 0.5))).toBe("rgb(255 255 0)");
    expect(css(hslPacked(120, 1, 0.5))).toBe("rgb(0 255 0)");
    expect(css(hslPacked(240, 1, 0.5))).toBe("rgb(0 0 255)");
    expect(css(hslPacked(300, 1, 0.5))).toBe("rgb(255 0 255)");
    expect(css(hslPacked(200, 0, 1))).toBe("rgb(255 255 255)");
    expect(css(hslPacked(200, 0.5, 0))).toBe("rgb(0 0 0)");
  });

  it("dim most of the way to the backdrop", () => {
    expect(css(dim(pack(0, 0, 0)))).toBe("rgb(207 209 211)");
    expect(dim(EMPTY)).toBe(EMPTY);
  });

  it("darken by halving each channel, without bleeding between channels", () => {
    expect(css(darken(pack(255, 255, 255)))).toBe("rgb(127 127 127)");
    expect(darken(pack(1, 3, 5))).toBe(pack(0, 1, 2));
    expect(darken(pack(1, 3, 5)) >>> 24).toBe(255);
  });
});

describe("programPalette", () => {
  it("steps the hue by the golden angle, lightness cycling over 3 programs", () => {
    // Expected from the HSL → RGB formula worked out separately (hue p × 137.508°, saturation 62%,
    // lightness 52/62/44%).
    expect(Array.from(programPalette(4), css)).toEqual(["rgb(208 57 57)", "rgb(98 218 133)", "rgb(124 43 182)", "rgb(208 190 57)"]);
  });

  it("gives neighbouring programs different colours", () => {
    const p = programPalette(4096);
    const same = p.filter((c, i) => i > 0 && c === p[i - 1]);
    expect(same.length).toBe(0);
  });

  it("is empty for no programs", () => {
    expect(programPalette(0).length).toBe(0);
  });
});

describe("heat ramp", () => {
  it("runs from light yellow to dark red over 256 steps", () => {
    expect(HEAT.length).toBe(256);
    expect(css(HEAT[0])).toBe("rgb(255 247 188)");
    expect(css(HEAT[128])).toBe("rgb(236 111 20)");
    expect(css(HEAT[255])).toBe("rgb(103 0 13)");
  });

  it("gives the legend 6 stops", () => {
    expect(heatStops()).toBe("rgb(255 247 188),rgb(254 206 101),rgb(243 146 44),rgb(223 79 24),rgb(184 24 27),rgb(103 0 13)");
  });
});

describe("binColours", () => {
  const palette = programPalette(3);

  it("colours each bin by its first program, untouched bins empty", () => {
    const out = binColours(aggregate(cells(), 4, ALL), ALL, palette);
    expect(Array.from(out)).toEqual([palette[1], palette[1], EMPTY, EMPTY]);
  });

  it("shows the selected program's own hue, its masked-off lanes, and dims the rest", () => {
    const one = { ...ALL, program: 1 };
    expect(Array.from(binColours(aggregate(cells(), 4, one), one, palette))).toEqual([palette[1], palette[1], MASKED_COLOUR, EMPTY]);
    // Program 2 is not bin 0's first program, but bin 0 shows its hue; bin 1 is dimmed.
    const two = { ...ALL, program: 2 };
    expect(Array.from(binColours(aggregate(cells(), 4, two), two, palette))).toEqual([palette[2], dim(palette[1]), EMPTY, EMPTY]);
  });

  it("maps lanes onto the heat ramp on a log scale between the tensor's min and max", () => {
    const heat: Filter = { ...ALL, mode: "heat" };
    expect(Array.from(binColours(aggregate(cells(), 4, heat), heat, palette))).toEqual([HEAT[0], HEAT[255], EMPTY, EMPTY]);
    // Lanes 1, 100 and 1000: 100 sits at ln 100 / ln 1000 = 2/3 of the ramp (a linear scale would
    // put it at 99/999, near the start).
    const c: AccessCells = {
      program: Uint32Array.of(0, 1, 2),
      bin: Uint32Array.of(0, 1, 3),
      kind: Uint8Array.of(0, 1, 2),
      site: Int32Array.of(0, 0, 0),
      lanes: Uint32Array.of(1, 100, 1000),
    };
    expect(Array.from(binColours(aggregate(c, 4, heat), heat, palette))).toEqual([HEAT[0], HEAT[170], EMPTY, HEAT[255]]);
  });

  it("puts a tensor with one lane count mid-ramp", () => {
    const heat: Filter = { ...ALL, mode: "heat" };
    const c: AccessCells = { ...emptyCells(), program: Uint32Array.of(0, 1), bin: Uint32Array.of(0, 3), kind: Uint8Array.of(0, 0), site: Int32Array.of(0, 0), lanes: Uint32Array.of(7, 7) };
    expect(Array.from(binColours(aggregate(c, 4, heat), heat, palette))).toEqual([HEAT[153], EMPTY, EMPTY, HEAT[153]]);
  });

  it("leaves bins of programs past the palette empty", () => {
    expect(Array.from(binColours(aggregate(cells(), 4, ALL), ALL, new Uint32Array(0)))).toEqual([EMPTY, EMPTY, EMPTY, EMPTY]);
  });
});

describe("findings on the grid", () => {
  it("takes a finding without a slice as one of slice 0", () => {
    const fs = [finding({ slice: null }), finding({ slice: 0 }), finding({ slice: 1 })];
    expect(findingsOnSlice(fs, 0)).toEqual([fs[0], fs[1]]);
    expect(findingsOnSlice(fs, 1)).toEqual([fs[2]]);
    expect(findingsOnSlice([], 0)).toEqual([]);
  });

  it("outlines findings with a bin in their severity's colour", () => {
    const fs = [finding({ bin: [1, 2] }), finding({ severity: "warning", bin: [0, 0] }), finding({ bin: null }), finding({ severity: "hint", bin: [3, 4] })];
    expect(findingMarkers(fs)).toEqual([
      { row: 1, col: 2, colour: SEVERITY_COLOUR.error },
      { row: 0, col: 0, colour: "#f08c00" },
      { row: 3, col: 4, colour: "#862e9c" },
    ]);
  });

  it("finds the finding a table row stands for: same message and index, else same message", () => {
    const offGrid = finding({ bin: null, index: [1] });
    const other = finding({ bin: [0, 1], index: [2] });
    const exact = finding({ bin: [1, 1], index: [1] });
    const fs = [offGrid, other, exact];
    expect(findingOnGrid(fs, "oob", [1])).toBe(exact);
    expect(findingOnGrid(fs, "oob", [5])).toBe(other);
    expect(findingOnGrid(fs, "race", null)).toBeUndefined();
    expect(findingOnGrid([finding({ index: null })], "oob", [])).toEqual(finding({ index: null }));
  });
});

describe("where a bin sits", () => {
  it("turns a slice number into the leading dims' index, row-major", () => {
    expect(sliceIndex([2, 3, 4], 0)).toEqual([0, 0, 0]);
    expect(sliceIndex([2, 3, 4], 5)).toEqual([0, 1, 1]);
    expect(sliceIndex([2, 3, 4], 13)).toEqual([1, 0, 1]);
    expect(sliceIndex([2, 3, 4], 23)).toEqual([1, 2, 3]);
    expect(sliceIndex([], 0)).toEqual([]);
  });

  it("gives a bin's inclusive element range, cut at the tensor's edge", () => {
    expect(cellRange(view(), 0, 0)).toEqual({ r0: 0, r1: 15, c0: 0, c1: 15 });
    expect(cellRange(view(), 2, 1)).toEqual({ r0: 32, r1: 39, c0: 16, c1: 23 });
  });

  it("writes the range as rows and cols, or elements for a 1-D tensor", () => {
    expect(rangeText(view(), 2, 1)).toBe("rows 32..39, cols 16..23");
    expect(rangeText(view({ rows: 6, row_step: 1, col_step: 4 }), 5, 0)).toBe("rows 5, cols 0..3");
    const flat = view({ shape: [10], rows: 1, cols: 10, lead: [], row_step: 1, col_step: 4 });
    expect(rangeText(flat, 0, 2)).toBe("elements 8..9");
    expect(rangeText({ ...flat, col_step: 1 }, 0, 3)).toBe("elements 3");
  });
});

describe("hoverText", () => {
  const v = view({ bin_rows: 2, bin_cols: 2 });
  const agg = aggregate(cells(), 4, ALL);
  const programs: [number, number, number][] = [
    [0, 0, 0],
    [1, 0, 0],
  ];

  it("gives the bin's range, lanes and first program, and whether others touched it", () => {
    expect(hoverText(v, agg, programs, 0, 0)).toBe("rows 0..15, cols 0..15 · 6 lanes · program (1,0,0) and others");
    expect(hoverText(v, agg, programs, 0, 1)).toBe("rows 0..15, cols 16..23 · 8 lanes · program (1,0,0)");
  });

  it("says when nothing touched the bin", () => {
    expect(hoverText(v, agg, programs, 1, 1)).toBe("rows 16..31, cols 16..23 · not touched");
  });

  it("falls back to the program number when the launch does not list it", () => {
    expect(hoverText(v, agg, [], 0, 1)).toBe("rows 0..15, cols 16..23 · 8 lanes · program (1,0,0)");
    const two = aggregate(cells(), 4, { ...ALL, kinds: [true, false, true] });
    expect(hoverText(v, two, programs, 0, 0)).toBe("rows 0..15, cols 0..15 · 4 lanes · program (2,0,0)");
  });
});

describe("pickers", () => {
  it("clamp a slice to the tensor's slices, 0 for anything unreadable", () => {
    expectAnswers((text: string) => clampSlice(text, 5), [["3", 3], ["7", 4], ["-2", 0], ["2.9", 2], ["", 0], ["abc", 0]]);
    expect(clampSlice("4", 1)).toBe(0);
  });

  it("clamp a program to the launch's programs, empty meaning all", () => {
    const programs: [string, number | null][] = [["", null], ["  ", null], ["4", 4], [" 4 ", 4], ["99", 9], ["-1", 0], ["3.7", 3]];
    expectAnswers((text: string) => clampProgram(text, 10), programs);
    expect(clampProgram("1e12", 100000)).toBe(99999);
  });
});

describe("asCells and emptyCells", () => {
  it("takes the five columns of a packed slice as they are", () => {
    const c = cells();
    const got = asCells({ ...c });
    expect(got.program).toBe(c.program);
    expect(got.bin).toBe(c.bin);
    expect(got.kind).toBe(c.kind);
    expect(got.site).toBe(c.site);
    expect(got.lanes).toBe(c.lanes);
  });

  it("names the first column missing", () => {
    const { site: _site, ...rest } = cells();
    expect(() => asCells(rest)).toThrow('packed cells lack "site"');
    expect(() => asCells({})).toThrow('packed cells lack "program"');
  });

  it("makes five empty columns", () => {
    const e = emptyCells();
    expect([e.program.length, e.bin.length, e.kind.length, e.site.length, e.lanes.length]).toEqual([0, 0, 0, 0, 0]);
  });
});

describe("touchesOf", () => {
  it("lists a bin's entries in program, kind, site order", () => {
    expect(touchesOf(cells(), 0, ALL)).toEqual([
      { program: 1, kind: 1, site: 1, lanes: 2 },
      { program: 2, kind: 0, site: 0, lanes: 4 },
    ]);
    expect(touchesOf(cells(), 1, ALL)).toEqual([
      { program: 1, kind: 0, site: 0, lanes: 8 },
      { program: 1, kind: 5, site: 1, lanes: 3 },
    ]);
  });

  it("keeps masked-off lanes with their access's kind", () => {
    expect(touchesOf(cells(), 2, ALL)).toEqual([{ program: 1, kind: 4, site: 2, lanes: 1 }]);
    expect(touchesOf(cells(), 2, { ...ALL, kinds: [true, false, true] })).toEqual([]);
    expect(touchesOf(cells(), 0, { ...ALL, kinds: [true, false, true] })).toEqual([{ program: 2, kind: 0, site: 0, lanes: 4 }]);
  });

  it("finds nothing without cells or in a bin nobody touched", () => {
    expect(touchesOf(null, 0, ALL)).toEqual([]);
    expect(touchesOf(cells(), 5, ALL)).toEqual([]);
  });
});

describe("linesByFile", () => {
  const touch = (site: number): { program: number; kind: number; site: number; lanes: number } => ({ program: 0, kind: 0, site, lanes: 1 });

  it("collects the touching sites' lines by file, unknown sites left out", () => {
    const got = linesByFile(launch(), [touch(1), touch(2), touch(0), touch(-1), touch(7), touch(1)]);
    expect([...got.keys()]).toEqual(["k.py", "lib.py"]);
    expect([...got.get("k.py")!]).toEqual([12, 10]);
    expect([...got.get("lib.py")!]).toEqual([3]);
  });

  it("falls back to the kernel's file when no site is known, if the record has its source", () => {
    const got = linesByFile(launch(), [touch(-1)]);
    expect([...got.keys()]).toEqual(["k.py"]);
    expect(got.get("k.py")!.size).toBe(0);
    expect(linesByFile(launch({ sources: {} }), []).size).toBe(0);
  });
});

describe("findingRows", () => {
  const checkFinding: Finding = {
    kind: "out-of-bounds",
    severity: "error",
    kernel: "tile_copy",
    file: "k.py",
    line: 12,
    column: 4,
    program: [2, 1, 0],
    tensor: "dst",
    index: [0, 40],
    launch: 0,
    tests: [],
    message: "store past the end",
    programs: 6,
    launches: 1,
    details: {},
  };
  const check = (findings: Finding[]): CheckData => ({ name: "rep.json", source: "rep.json", findings, launches: 2, programs: 16, summary: {} });

  it("lists every check report's findings", () => {
    const rows = findingRows([check([checkFinding]), check([{ ...checkFinding, line: 13 }])], launch());
    expect(rows.map((r) => [r.kernel, r.tensor, r.line])).toEqual([
      ["tile_copy", "dst", 12],
      ["tile_copy", "dst", 13],
    ]);
  });

  it("without check findings, lists the launch's tensors' findings with kernel and tensor", () => {
    const t = view({ name: "src", findings: [finding()] });
    const rows = findingRows([check([])], launch({ tensors: [t] }));
    expect(rows).toEqual([{ ...finding(), kernel: "tile_copy", tensor: "src" }]);
  });

  it("has no rows with nothing given", () => {
    expect(findingRows([], null)).toEqual([]);
    expect(findingRows([], launch())).toEqual([]);
  });
});

describe("launches", () => {
  const record = (name: string, launches: RecordRef["launches"]): RecordRef => ({ name, source: name, dropped_lanes: 0, limit: 0, launches });
  const entry = (index: number, kernel: string, programs: number, tensors: string[]): RecordRef["launches"][number] => ({
    index,
    kernel,
    grid: [programs, 1, 1],
    programs,
    accesses: 0,
    lanes: 0,
    tensors,
    url: `/api/access/0/${index}.json`,
  });
  const rec = record("acc.npz", [entry(0, "tile_copy", 12, ["x", "y"]), entry(1, "tile_copy", 1, ["t", "u"]), entry(2, "add", 4, ["u"])]);
  const refs: LaunchRef[] = rec.launches.map((l) => ({ record: rec, launch: l }));

  it("are labelled by index, kernel, grid and programs, with the record's name when there are several", () => {
    expect(launchLabel(refs[0], false)).toBe("#0 tile_copy grid (12,1,1) · 12 programs");
    expect(launchLabel(refs[1], true)).toBe("acc.npz: #1 tile_copy grid (1,1,1) · 1 program");
  });

  it("are found by kernel and tensor", () => {
    expect(launchWithTensor(refs, "tile_copy", "u")).toBe(1);
    expect(launchWithTensor(refs, "add", "u")).toBe(2);
    expect(launchWithTensor(refs, "add", "x")).toBe(-1);
    expect(launchWithTensor([], "add", "x")).toBe(-1);
  });
});
