// The Accesses view's grid: aggregate a tensor slice's cells per bin for the current filter, and
// draw the bins as one ImageData (one pixel per screen pixel, then scaled onto the canvas). Cells
// can run to hundreds of thousands of entries and bins to 512×512, so everything here works on
// typed arrays in single passes; no per-cell canvas calls.
import type { AccessCells } from "../types";

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

// Colours are packed as the bytes of an RGBA pixel read through a little-endian Uint32Array.
function pack(r: number, g: number, b: number): number {
  return ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
}

const EMPTY = pack(0xf1, 0xf3, 0xf5);
export const MASKED_COLOUR = pack(0x49, 0x50, 0x57);
const BACKDROP = [0xf1, 0xf3, 0xf5] as const;

function hslPacked(hue: number, sat: number, light: number): number {
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

export function packedCss(colour: number): string {
  return `rgb(${colour & 255} ${(colour >> 8) & 255} ${(colour >> 16) & 255})`;
}

// Heat ramp: light yellow → orange → red → dark red (sequential, readable on white).
const HEAT_STOPS: [number, number, number][] = [
  [255, 247, 188],
  [254, 196, 79],
  [236, 112, 20],
  [204, 30, 30],
  [103, 0, 13],
];

export const HEAT: Uint32Array = (() => {
  const out = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    const t = (i / 255) * (HEAT_STOPS.length - 1);
    const j = Math.min(Math.floor(t), HEAT_STOPS.length - 2);
    const f = t - j;
    const [a, b] = [HEAT_STOPS[j], HEAT_STOPS[j + 1]];
    out[i] = pack(
      Math.round(a[0] + (b[0] - a[0]) * f),
      Math.round(a[1] + (b[1] - a[1]) * f),
      Math.round(a[2] + (b[2] - a[2]) * f),
    );
  }
  return out;
})();

/** A colour faded most of the way to the backdrop: cells of programs not selected. */
function dim(colour: number): number {
  const mix = (c: number, bg: number): number => Math.round(c * 0.14 + bg * 0.86);
  return pack(mix(colour & 255, BACKDROP[0]), mix((colour >> 8) & 255, BACKDROP[1]), mix((colour >> 16) & 255, BACKDROP[2]));
}

/** Half the brightness: the hatch stripes over bins several programs touch. */
function darken(colour: number): number {
  return (((colour & 0xfefefe) >>> 1) | 0xff000000) >>> 0;
}

/** Each bin's colour under the filter (program hue or heat), dimmed when another program is
 * selected. */
function binColours(agg: Aggregate, filter: Filter, palette: Uint32Array): Uint32Array {
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
      colour = HEAT[Math.max(0, Math.min(255, Math.round(t * 255)))];
    } else {
      // The selected program's own hue where it touches, so its footprint reads as one colour.
      colour = chosen !== null && agg.mine[b] ? palette[chosen] : palette[f] ?? EMPTY;
    }
    if (chosen !== null && !agg.mine[b]) colour = dim(colour);
    out[b] = colour;
  }
  return out;
}

let scratch: HTMLCanvasElement | null = null;

/** Draw the bins into `canvas` (already sized to geo): one putImageData onto a scratch canvas at
 * CSS-pixel size, then one scaled drawImage (no smoothing) so the device pixel ratio is honoured.
 * Bins several programs touch (program mode) get dark diagonal stripes. */
export function drawBins(
  canvas: HTMLCanvasElement,
  geo: Geometry,
  binCols: number,
  agg: Aggregate,
  filter: Filter,
  palette: Uint32Array,
): void {
  const { width, height, cellW, cellH } = geo;
  if (width <= 0 || height <= 0) return; // an empty tensor: nothing to draw (createImageData throws)
  const colours = binColours(agg, filter, palette);
  const hatch = filter.mode === "program";
  scratch ??= document.createElement("canvas");
  scratch.width = width;
  scratch.height = height;
  const sctx = scratch.getContext("2d")!;
  const image = sctx.createImageData(width, height);
  const pixels = new Uint32Array(image.data.buffer);
  const colOf = new Int32Array(width);
  for (let x = 0; x < width; x++) colOf[x] = Math.floor(x / cellW);
  for (let y = 0; y < height; y++) {
    const rowBase = Math.floor(y / cellH) * binCols;
    const lineBase = y * width;
    for (let x = 0; x < width; x++) {
      const b = rowBase + colOf[x];
      let c = colours[b];
      if (hatch && agg.multi[b] && ((x + y) & 3) === 0) c = darken(c);
      pixels[lineBase + x] = c;
    }
  }
  sctx.putImageData(image, 0, 0);
  const ctx = canvas.getContext("2d")!;
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(scratch, 0, 0, canvas.width, canvas.height);
}

export interface Marker {
  row: number;
  col: number;
  colour: string;
}

/** Outlines on top of the bins (findings, the clicked cell); at least 9 px so a 1-px cell's
 * marker is still visible. Returns how many were drawn. */
export function drawMarkers(canvas: HTMLCanvasElement, geo: Geometry, markers: Marker[]): number {
  const ctx = canvas.getContext("2d")!;
  const ratio = canvas.width / Math.max(geo.width, 1);
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.lineWidth = 2;
  for (const m of markers) {
    const w = Math.max(geo.cellW, 9);
    const hgt = Math.max(geo.cellH, 9);
    const x = m.col * geo.cellW + geo.cellW / 2 - w / 2;
    const y = m.row * geo.cellH + geo.cellH / 2 - hgt / 2;
    ctx.strokeStyle = "#fff";
    ctx.strokeRect(x - 1, y - 1, w + 2, hgt + 2);
    ctx.strokeStyle = m.colour;
    ctx.strokeRect(x, y, w, hgt);
  }
  return markers.length;
}

export const SEVERITY_COLOUR: Record<string, string> = {
  error: "#e03131",
  warning: "#f08c00",
  info: "#1c7ed6",
};
