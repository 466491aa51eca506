// The Accesses view's pure model: the kinds and filter of the toolbar, a tensor slice's cells
// aggregated per bin, the grid's geometry and colours (program palette, heat ramp, packed RGBA
// pixels), where a bin sits in the tensor, which entries touched a bin, and the findings' rows,
// markers and look-ups. Cells can run to hundreds of thousands of entries and bins to 512×512, so
// the per-bin work runs on typed arrays in single passes. No DOM, no canvas: model.test.ts runs
// all of it under Node; grid.ts draws what this computes.
import type { Packed } from "../../data";
import { fmt } from "../../format";
import { HEAT, heatStep, pack } from "../../heat";
import type { AccessCells, CheckData, Finding, LaunchData, PlacedFinding, RecordRef, TensorView } from "../../types";

export { HEAT, heatStops, pack, packedCss } from "../../heat";

export type Mode = "program" | "heat";

/** What the toolbar selects: colour mode, which access kinds count, one program or all. */
export interface Filter {
  mode: Mode;
  kinds: [boolean, boolean, boolean]; // load, store, atomic (the `kind` codes 0, 1, 2)
  program: number | null; // null: all programs
}

/** Kind codes of the cells: 0-2 accesses, 3-5 the masked-off lanes of each (`kind % 3` is the
 * access's own kind). */
export const KIND_NAMES = ["load", "store", "atomic", "masked load", "masked store", "masked atomic"] as const;
export const MASKED = 3;

/** Per-bin sums for one slice under one filter. */
export interface Aggregate {
  first: Int32Array; // lowest (first in run order) program touching the bin, -1 when untouched
  multi: Uint8Array; // 1 when more than one program touches the bin
  lanes: Float64Array; // element accesses in the bin
  mine: Uint8Array; // 1 when the selected program touches the bin (all 0 with no selection)
  masked: Uint8Array; // 1 when the selected program has masked-off lanes there and no access
  touched: number; // bins touched
  selected: number; // bins the selected program touches
  maskedSelected: number; // bins where the selected program's lanes are only masked off
  minLanes: number; // over touched bins (0 when none)
  maxLanes: number;
}

/** One pass over the cells: entries of filtered-out kinds are skipped. */
export function aggregate(cells: AccessCells, bins: number, filter: Filter): Aggregate {
  const first = new Int32Array(bins).fill(-1);
  const multi = new Uint8Array(bins);
  const lanes = new Float64Array(bins);
  const mine = new Uint8Array(bins);
  const masked = new Uint8Array(bins);
  const { program, bin, kind } = cells;
  const counts = cells.lanes;
  const [wantLoad, wantStore, wantAtomic] = filter.kinds;
  const chosen = filter.program ?? -1;
  for (let i = 0, n = bin.length; i < n; i++) {
    const k = kind[i];
    const base = k % MASKED;
    if ((base === 0 && !wantLoad) || (base === 1 && !wantStore) || (base === 2 && !wantAtomic)) continue;
    const b = bin[i];
    if (b >= bins) continue; // a malformed entry must not write past the grid
    if (k >= MASKED) {
      // Masked-off lanes are not accesses: shown only for the selected program.
      if (program[i] === chosen) masked[b] = 1;
      continue;
    }
    const p = program[i];
    const f = first[b];
    if (f === -1) first[b] = p;
    else if (f !== p) {
      multi[b] = 1;
      if (p < f) first[b] = p;
    }
    lanes[b] += counts[i];
    if (p === chosen) mine[b] = 1;
  }
  let touched = 0;
  let selected = 0;
  let maskedSelected = 0;
  let minLanes = Infinity;
  let maxLanes = 0;
  for (let b = 0; b < bins; b++) {
    if (masked[b] && mine[b]) masked[b] = 0; // where it also accesses, the access shows
    maskedSelected += masked[b];
    if (first[b] === -1) continue;
    touched++;
    selected += mine[b];
    const v = lanes[b];
    if (v < minLanes) minLanes = v;
    if (v > maxLanes) maxLanes = v;
  }
  if (!touched) minLanes = 0;
  return { first, multi, lanes, mine, masked, touched, selected, maskedSelected, minLanes, maxLanes };
}

/** Screen size of a grid: square cells scaled so the longer side fits ~512 px (at least 1 px a
 * cell); a grid only a few cells tall (a 1-D tensor) gets taller cells so it stays visible. */
export interface Geometry {
  cellW: number;
  cellH: number;
  width: number;
  height: number;
}

const MAX_SIDE = 512;
const MIN_HEIGHT = 14;

export function geometry(binRows: number, binCols: number): Geometry {
  const cell = Math.max(1, Math.floor(MAX_SIDE / Math.max(binRows, binCols, 1)));
  const cellW = cell;
  let cellH = cell;
  if (binRows * cellH < MIN_HEIGHT) cellH = Math.ceil(MIN_HEIGHT / Math.max(binRows, 1));
  return { cellW, cellH, width: binCols * cellW, height: binRows * cellH };
}

// Colours are packed as the bytes of an RGBA pixel read through a little-endian Uint32Array
// (heat.ts: pack, packedCss and the heat ramp, shared with the Explain view's heat column).

export const EMPTY = pack(0xf1, 0xf3, 0xf5);
export const MASKED_COLOUR = pack(0x49, 0x50, 0x57);
const BACKDROP = [0xf1, 0xf3, 0xf5] as const;

export function hslPacked(hue: number, sat: number, light: number): number {
  // Standard HSL → RGB (hue in degrees, sat/light in 0..1).
  const c = (1 - Math.abs(2 * light - 1)) * sat;
  const hp = hue / 60;
  const x = c * (1 - Math.abs((hp % 2) - 1));
  const [r1, g1, b1] =
    hp < 1 ? [c, x, 0] : hp < 2 ? [x, c, 0] : hp < 3 ? [0, c, x] : hp < 4 ? [0, x, c] : hp < 5 ? [x, 0, c] : [c, 0, x];
  const m = light - c / 2;
  return pack(Math.round((r1 + m) * 255), Math.round((g1 + m) * 255), Math.round((b1 + m) * 255));
}

/** A hue per program: golden-angle steps so neighbouring programs (adjacent tiles) differ. */
export function programPalette(count: number): Uint32Array {
  const out = new Uint32Array(count);
  for (let p = 0; p < count; p++) {
    const light = p % 3 === 0 ? 0.52 : p % 3 === 1 ? 0.62 : 0.44;
    out[p] = hslPacked((p * 137.508) % 360, 0.62, light);
  }
  return out;
}

/** A colour faded most of the way to the backdrop: cells of programs not selected. */
export function dim(colour: number): number {
  const mix = (c: number, bg: number): number => Math.round(c * 0.14 + bg * 0.86);
  return pack(mix(colour & 255, BACKDROP[0]), mix((colour >> 8) & 255, BACKDROP[1]), mix((colour >> 16) & 255, BACKDROP[2]));
}

/** Half the brightness: the hatch stripes over bins several programs touch. */
export function darken(colour: number): number {
  return (((colour & 0xfefefe) >>> 1) | 0xff000000) >>> 0;
}

/** Each bin's colour under the filter (program hue or heat), dimmed when another program is
 * selected. */
export function binColours(agg: Aggregate, filter: Filter, palette: Uint32Array): Uint32Array {
  const bins = agg.first.length;
  const out = new Uint32Array(bins).fill(EMPTY);
  const chosen = filter.program;
  const logMin = Math.log(Math.max(agg.minLanes, 1));
  const span = Math.log(Math.max(agg.maxLanes, 1)) - logMin;
  for (let b = 0; b < bins; b++) {
    const f = agg.first[b];
    if (agg.masked[b]) {
      out[b] = MASKED_COLOUR; // the selected program's masked-off lanes, where it accesses nothing
      continue;
    }
    if (f === -1) continue;
    let colour: number;
    if (filter.mode === "heat") {
      const t = span > 0 ? (Math.log(Math.max(agg.lanes[b], 1)) - logMin) / span : 0.6; // one value: mid-ramp
      colour = HEAT[heatStep(t)];
    } else {
      // The selected program's own hue where it touches, so its footprint reads as one colour.
      colour = chosen !== null && agg.mine[b] ? palette[chosen] : palette[f] ?? EMPTY;
    }
    if (chosen !== null && !agg.mine[b]) colour = dim(colour);
    out[b] = colour;
  }
  return out;
}

export interface Marker {
  row: number;
  col: number;
  colour: string;
}

export const SEVERITY_COLOUR: Record<string, string> = {
  error: "#e03131",
  warning: "#f08c00",
  info: "#1c7ed6",
};

/** The leading-dims index of slice s (row-major over `lead`). */
export function sliceIndex(lead: number[], s: number): number[] {
  const out = new Array<number>(lead.length).fill(0);
  for (let d = lead.length - 1; d >= 0; d--) {
    out[d] = s % lead[d];
    s = Math.floor(s / lead[d]);
  }
  return out;
}

/** The element range a bin stands for, inclusive, in the tensor's last two dims. */
export function cellRange(view: TensorView, row: number, col: number): { r0: number; r1: number; c0: number; c1: number } {
  const r0 = row * view.row_step;
  const c0 = col * view.col_step;
  return {
    r0,
    r1: Math.min(view.rows, r0 + view.row_step) - 1,
    c0,
    c1: Math.min(view.cols, c0 + view.col_step) - 1,
  };
}

export function rangeText(view: TensorView, row: number, col: number): string {
  const { r0, r1, c0, c1 } = cellRange(view, row, col);
  const span = (a: number, b: number): string => (a === b ? `${a}` : `${a}..${b}`);
  return view.shape.length <= 1 ? `elements ${span(c0, c1)}` : `rows ${span(r0, r1)}, cols ${span(c0, c1)}`;
}

export function asCells(packed: Packed): AccessCells {
  const need = ["program", "bin", "kind", "site", "lanes"] as const;
  for (const name of need) if (!packed[name]) throw new Error(`packed cells lack "${name}"`);
  return {
    program: packed.program as Uint32Array,
    bin: packed.bin as Uint32Array,
    kind: packed.kind as Uint8Array,
    site: packed.site as Int32Array,
    lanes: packed.lanes as Uint32Array,
  };
}

/** No cells: what a card aggregates before its slice has loaded (or when it failed to). */
export function emptyCells(): AccessCells {
  return {
    program: new Uint32Array(0),
    bin: new Uint32Array(0),
    kind: new Uint8Array(0),
    site: new Int32Array(0),
    lanes: new Uint32Array(0),
  };
}

/** Findings on slice s (a finding with no slice belongs to a tensor with one slice). */
export function findingsOnSlice(findings: PlacedFinding[], s: number): PlacedFinding[] {
  return findings.filter((f) => (f.slice ?? 0) === s);
}

/** Outlines for the findings that have a bin, coloured by severity (purple for an unknown one). */
export function findingMarkers(findings: PlacedFinding[]): Marker[] {
  const markers: Marker[] = [];
  for (const f of findings) {
    if (f.bin) markers.push({ row: f.bin[0], col: f.bin[1], colour: SEVERITY_COLOUR[f.severity] ?? "#862e9c" });
  }
  return markers;
}

/** The slice picker's text as a slice: a whole number in [0, slices), 0 for anything unreadable. */
export function clampSlice(text: string, slices: number): number {
  return Math.max(0, Math.min(slices - 1, Math.floor(Number(text) || 0)));
}

/** The program box's text (launches of over 4096 programs) as a program: null (all) when empty,
 * else a whole number in [0, count). The box is a number input: the browser hands over "" for
 * text that is not a number. */
export function clampProgram(text: string, count: number): number | null {
  const raw = text.trim();
  return raw === "" ? null : Math.max(0, Math.min(count - 1, Math.floor(Number(raw))));
}

/** The hover line under a grid: the bin's element range, then its lanes and first program (by
 * (x,y,z)), or that nothing touched it. */
export function hoverText(view: TensorView, agg: Aggregate, programs: [number, number, number][], row: number, col: number): string {
  const b = row * view.bin_cols + col;
  const first = agg.first[b];
  let text = `${rangeText(view, row, col)} · `;
  if (first < 0) text += "not touched";
  else {
    const xyz = programs[first] ?? [first, 0, 0];
    text += `${fmt(agg.lanes[b])} lanes · program (${xyz.join(",")})${agg.multi[b] ? " and others" : ""}`;
  }
  return text;
}

/** One entry of a slice's cells: a program's accesses of one kind from one site in a bin. */
export interface Touch {
  program: number;
  kind: number;
  site: number;
  lanes: number;
}

/** The entries of the cells that fall in one bin and pass the kind filter, in program order
 * (then kind, then site). */
export function touchesOf(cells: AccessCells | null, bin: number, filter: Filter): Touch[] {
  if (!cells) return [];
  const out: Touch[] = [];
  for (let i = 0, n = cells.bin.length; i < n; i++) {
    if (cells.bin[i] !== bin || !filter.kinds[cells.kind[i] % 3]) continue; // masked lanes: by their access's kind
    out.push({ program: cells.program[i], kind: cells.kind[i], site: cells.site[i], lanes: cells.lanes[i] });
  }
  out.sort((a, b) => a.program - b.program || a.kind - b.kind || a.site - b.site);
  return out;
}

/** The source lines the touches' sites point to, by file; with no site known, the kernel's own
 * file (when the record carries its source) with no line. */
export function linesByFile(launch: LaunchData, touches: Touch[]): Map<string, Set<number>> {
  const byFile = new Map<string, Set<number>>();
  for (const t of touches) {
    const site = t.site >= 0 ? launch.sites[t.site] : undefined;
    if (!site) continue;
    if (!byFile.has(site.file)) byFile.set(site.file, new Set());
    byFile.get(site.file)!.add(site.line);
  }
  if (!byFile.size && launch.sources[launch.file] !== undefined) byFile.set(launch.file, new Set());
  return byFile;
}

/** A row of the findings table: what a check report's finding and a placed one (with its launch's
 * kernel and its tensor's name) both give. */
export type FindingRow = Pick<Finding, "kind" | "severity" | "kernel" | "tensor" | "index" | "program" | "line" | "message">;

/** The findings table's rows: every check report's findings, or, with none, those the launch's
 * tensors carry (with the launch's kernel and the tensor's name). */
export function findingRows(checks: CheckData[], launch: LaunchData | null): FindingRow[] {
  const rows: FindingRow[] = [];
  for (const c of checks) for (const f of c.findings) rows.push(f);
  if (!rows.length && launch) {
    for (const t of launch.tensors) for (const f of t.findings) rows.push({ ...f, kernel: launch.kernel, tensor: t.name });
  }
  return rows;
}

/** A recorded launch with the record it is in. */
export interface LaunchRef {
  record: RecordRef;
  launch: RecordRef["launches"][number];
}

/** The launch picker's label: "#index kernel grid (x,y,z) · N programs", prefixed with the
 * record's name when there are several records. */
export function launchLabel(ref: LaunchRef, many: boolean): string {
  const l = ref.launch;
  const prefix = many ? `${ref.record.name}: ` : "";
  return `${prefix}#${l.index} ${l.kernel} grid (${l.grid.join(",")}) · ${l.programs} program${l.programs === 1 ? "" : "s"}`;
}

/** The first launch of `kernel` that recorded `tensor`, or -1. */
export function launchWithTensor(refs: LaunchRef[], kernel: string, tensor: string): number {
  return refs.findIndex((r) => r.launch.kernel === kernel && r.launch.tensors.includes(tensor));
}

/** The tensor's finding a findings-table row stands for, on the grid or past its edge: the one
 * with the same message and index, else the first with the same message; undefined if none. */
export function findingFor(findings: PlacedFinding[], message: string, index: number[] | null): PlacedFinding | undefined {
  const same = (a: number[] | null, b: number[] | null): boolean => (a ?? []).join() === (b ?? []).join();
  return findings.find((x) => x.message === message && same(x.index, index)) ?? findings.find((x) => x.message === message);
}

/** The tensor's finding a findings-table row stands for: one on the grid (with a bin) with the
 * same message and index, else the first on the grid with the same message; undefined if none. */
export function findingOnGrid(findings: PlacedFinding[], message: string, index: number[] | null): PlacedFinding | undefined {
  const same = (a: number[] | null, b: number[] | null): boolean => (a ?? []).join() === (b ?? []).join();
  return findings.find((x) => x.bin && x.message === message && same(x.index, index)) ??
    findings.find((x) => x.bin && x.message === message);
}

// ---- Past the tensor's edge: out-of-bounds lanes (they touch no element, so the record's cells
// cannot hold them) are placed from the findings' indices in a band drawn around the grid.

/** A place on a tensor's grid: slice and bin; row -1 or bin_rows, col -1 or bin_cols, is the band
 * past that edge. */
export interface Place {
  slice: number;
  row: number;
  col: number;
}

/** Out-of-bounds lanes: a colour of their own, apart from every program hue and the heat ramp. */
export const OOB_COLOUR = pack(0xd6, 0x33, 0x6c);
/** The band past the edge where nothing landed. */
export const EDGE_COLOUR = pack(0xfa, 0xfa, 0xfb);
/** The band's thickness in CSS px: wide enough to see and to click whatever the cell size. */
export const EDGE_PX = 14;

/** Where a tensor index lands: its slice and bin, a row or col past the edge clamped into the band
 * on that side (a leading index past its dim counts as past the bottom or top). null when the
 * index does not fit the tensor's rank. */
export function placeIndex(view: TensorView, index: number[] | null): Place | null {
  if (!index || index.length !== view.shape.length) return null;
  const n = index.length;
  const c = n ? index[n - 1] : 0;
  let r = n >= 2 ? index[n - 2] : 0;
  let lead = index.slice(0, Math.max(0, n - 2));
  let over = 0; // -1 / +1: a leading (or merged) index is before / past its dim
  if (view.merged.length) {
    r = 0;
    view.merged.forEach((size, d) => {
      const i = index[d];
      if (i < 0 && !over) over = -1;
      else if (i >= size && !over) over = 1;
      r = r * size + Math.max(0, Math.min(size - 1, i));
    });
    lead = [];
  }
  let slice = 0;
  lead.forEach((i, d) => {
    const size = view.lead[d] ?? 1;
    if (i < 0 && !over) over = -1;
    else if (i >= size && !over) over = 1;
    slice = slice * size + Math.max(0, Math.min(size - 1, i));
  });
  const row = over < 0 || r < 0 ? -1 : over > 0 || r >= view.rows ? view.bin_rows : Math.floor(r / view.row_step);
  const col = c < 0 ? -1 : c >= view.cols ? view.bin_cols : Math.floor(c / view.col_step);
  return { slice, row, col };
}

export function pastEdge(view: TensorView, p: { row: number; col: number }): boolean {
  return p.row < 0 || p.col < 0 || p.row >= view.bin_rows || p.col >= view.bin_cols;
}

/** Where a finding is on the grid: its bin, or where its example index lands past the edge. */
export function findingPlace(view: TensorView, f: PlacedFinding): Place | null {
  if (f.bin) return { slice: f.slice ?? 0, row: f.bin[0], col: f.bin[1] };
  return placeIndex(view, f.index);
}

/** A band cell holding out-of-bounds lanes, with the findings whose lanes land there. */
export interface EdgeCell extends Place {
  lanes: number;
  findings: PlacedFinding[];
}

/** Every out-of-bounds lane of the tensor's findings (each finding's `indices`, else its example
 * index), placed past the edge; one entry per band cell, across all slices. */
export function edgeCells(view: TensorView): EdgeCell[] {
  const byKey = new Map<string, EdgeCell>();
  for (const f of view.findings) {
    if (f.bin) continue;
    for (const index of f.indices?.length ? f.indices : [f.index]) {
      const p = placeIndex(view, index);
      if (!p || !pastEdge(view, p)) continue;
      const key = `${p.slice},${p.row},${p.col}`;
      let cell = byKey.get(key);
      if (!cell) byKey.set(key, (cell = { ...p, lanes: 0, findings: [] }));
      cell.lanes++;
      if (!cell.findings.includes(f)) cell.findings.push(f);
    }
  }
  return [...byKey.values()];
}

/** Band thickness (px) on each side: only the sides some out-of-bounds lane lies past. */
export interface Pads {
  top: number;
  left: number;
  bottom: number;
  right: number;
}

export function padsFor(view: TensorView, cells: Place[]): Pads {
  const pads = { top: 0, left: 0, bottom: 0, right: 0 };
  for (const c of cells) {
    if (c.row < 0) pads.top = EDGE_PX;
    if (c.row >= view.bin_rows) pads.bottom = EDGE_PX;
    if (c.col < 0) pads.left = EDGE_PX;
    if (c.col >= view.bin_cols) pads.right = EDGE_PX;
  }
  return pads;
}

/** A place's rectangle on the canvas in CSS px (band cells span the band's thickness). */
export function placeRect(geo: Geometry, pads: Pads, binRows: number, binCols: number, row: number, col: number): { x: number; y: number; w: number; h: number } {
  const x = col < 0 ? 0 : pads.left + Math.min(col, binCols) * geo.cellW;
  const w = col < 0 ? pads.left : col >= binCols ? pads.right : geo.cellW;
  const y = row < 0 ? 0 : pads.top + Math.min(row, binRows) * geo.cellH;
  const h = row < 0 ? pads.top : row >= binRows ? pads.bottom : geo.cellH;
  return { x, y, w, h };
}

/** The place under a point (CSS px on the canvas), band cells included; null outside. */
export function placeAt(geo: Geometry, pads: Pads, binRows: number, binCols: number, x: number, y: number): { row: number; col: number } | null {
  const gx = x - pads.left;
  const gy = y - pads.top;
  const col = gx < 0 ? (pads.left && x >= 0 ? -1 : NaN) : gx >= geo.width ? (gx < geo.width + pads.right ? binCols : NaN) : Math.floor(gx / geo.cellW);
  const row = gy < 0 ? (pads.top && y >= 0 ? -1 : NaN) : gy >= geo.height ? (gy < geo.height + pads.bottom ? binRows : NaN) : Math.floor(gy / geo.cellH);
  if (Number.isNaN(row) || Number.isNaN(col)) return null;
  return { row, col };
}

/** The program a finding names, as an index into the launch's programs (-1 when absent). */
export function programOf(launch: LaunchData, xyz: [number, number, number] | null): number {
  if (!xyz) return -1;
  return launch.programs.findIndex((p) => p[0] === xyz[0] && p[1] === xyz[1] && p[2] === xyz[2]);
}
