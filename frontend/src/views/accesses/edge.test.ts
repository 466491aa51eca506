// The Accesses view's places past a tensor's edge: where out-of-bounds lanes (which touch no
// element, so the record's cells cannot hold them) are drawn, clicked and found.
import { describe, expect, it } from "vitest";
import { launchData as launch, tensorView as view } from "../../fixtures";
import type { PlacedFinding } from "../../types";
import { edgeCells, findingFor, findingPlace, padsFor, placeAt, placeIndex, placeRect, programOf } from "./model";

describe("past the edge", () => {
  const oob = (index: number[], extra: Partial<PlacedFinding> = {}): PlacedFinding => ({
    kind: "out-of-bounds",
    severity: "error",
    message: `load outside x: x${JSON.stringify(index)}`,
    line: 22,
    program: [2, 1, 0],
    index,
    slice: null,
    bin: null,
    ...extra,
  });

  it("places an index inside on its bin, one past an edge in the band on that side", () => {
    const v = view(); // [2, 40, 24], bins 3×2 of 16×16
    expect(placeIndex(v, [1, 17, 5])).toEqual({ slice: 1, row: 1, col: 0 });
    expect(placeIndex(v, [0, 39, 30])).toEqual({ slice: 0, row: 2, col: 2 }); // right band
    expect(placeIndex(v, [1, 40, 0])).toEqual({ slice: 1, row: 3, col: 0 }); // bottom band
    expect(placeIndex(v, [0, -1, -3])).toEqual({ slice: 0, row: -1, col: -1 }); // top-left corner
    expect(placeIndex(v, [2, 0, 0])).toEqual({ slice: 1, row: 3, col: 0 }); // past the last slice
    expect(placeIndex(v, [0, 0])).toBeNull(); // wrong rank
    expect(placeIndex(v, null)).toBeNull();
  });

  it("places the softmax overrun x[64, 0] of a 64×100 tensor below its last row", () => {
    const v = view({ shape: [64, 100], rows: 64, cols: 100, lead: [], slices: 1, bin_rows: 64, bin_cols: 100, row_step: 1, col_step: 1 });
    expect(placeIndex(v, [64, 0])).toEqual({ slice: 0, row: 64, col: 0 });
    const f = oob([64, 0], { indices: [[64, 0]] });
    expect(findingPlace(v, f)).toEqual({ slice: 0, row: 64, col: 0 });
    expect(padsFor(v, edgeCells(view({ ...v, findings: [f] })))).toEqual({ top: 0, left: 0, bottom: 14, right: 0 });
  });

  it("collects every lane of every out-of-bounds finding into band cells", () => {
    const a = oob([0, 5, 24], { indices: [[0, 5, 24], [0, 6, 25], [0, 20, 24], [1, 5, 24]] });
    const b = oob([0, 5, 30], { message: "store outside x" });
    const onGrid = { ...oob([0, 1, 1]), bin: [0, 0] as [number, number], slice: 0 };
    const cells = edgeCells(view({ findings: [a, b, onGrid] }));
    const at = (s: number, r: number, c: number) => cells.find((x) => x.slice === s && x.row === r && x.col === c);
    expect(cells).toHaveLength(3);
    expect(at(0, 0, 2)?.lanes).toBe(3); // [0,5,24], [0,6,25] and b's [0,5,30]
    expect(at(0, 0, 2)?.findings).toEqual([a, b]);
    expect(at(0, 1, 2)?.lanes).toBe(1);
    expect(at(1, 0, 2)?.lanes).toBe(1);
    expect(findingPlace(view(), onGrid)).toEqual({ slice: 0, row: 0, col: 0 });
  });

  it("maps band cells to rectangles and back", () => {
    const geo = { cellW: 10, cellH: 10, width: 20, height: 30 };
    const pads = { top: 0, left: 0, bottom: 14, right: 14 };
    expect(placeRect(geo, pads, 3, 2, 1, 1)).toEqual({ x: 10, y: 10, w: 10, h: 10 });
    expect(placeRect(geo, pads, 3, 2, 3, 0)).toEqual({ x: 0, y: 30, w: 10, h: 14 });
    expect(placeRect(geo, pads, 3, 2, 0, 2)).toEqual({ x: 20, y: 0, w: 14, h: 10 });
    expect(placeAt(geo, pads, 3, 2, 5, 35)).toEqual({ row: 3, col: 0 });
    expect(placeAt(geo, pads, 3, 2, 25, 5)).toEqual({ row: 0, col: 2 });
    expect(placeAt(geo, pads, 3, 2, 15, 15)).toEqual({ row: 1, col: 1 });
    expect(placeAt(geo, pads, 3, 2, 40, 5)).toBeNull();
    const left = { top: 14, left: 14, bottom: 0, right: 0 };
    expect(placeAt(geo, left, 3, 2, 3, 3)).toEqual({ row: -1, col: -1 });
    expect(placeAt(geo, left, 3, 2, 20, 20)).toEqual({ row: 0, col: 0 });
    expect(placeAt(geo, { top: 0, left: 0, bottom: 0, right: 0 }, 3, 2, 25, 5)).toBeNull();
  });

  it("finds a table row's finding whether or not it has a bin, and its program", () => {
    const a = oob([0, 5, 24]);
    const b = { ...oob([0, 1, 1]), bin: [0, 0] as [number, number] };
    expect(findingFor([b, a], a.message, [0, 5, 24])).toBe(a);
    expect(findingFor([b, a], a.message, [9, 9, 9])).toBe(a);
    expect(findingFor([b], "nothing", null)).toBeUndefined();
    expect(programOf(launch(), [0, 0, 0])).toBe(0);
    expect(programOf(launch(), [99, 0, 0])).toBe(-1);
    expect(programOf(launch(), null)).toBe(-1);
  });
});
