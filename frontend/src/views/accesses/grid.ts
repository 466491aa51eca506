// The Accesses view's grid drawing: the bins (aggregated and coloured in model.ts) as one ImageData
// (one pixel per screen pixel, then scaled onto the canvas), and the outlines on top. Bins run to
// 512×512, so everything here works on typed arrays in single passes; no per-cell canvas calls.
import { binColours, darken, EDGE_COLOUR, OOB_COLOUR, pack, packedCss, placeRect, type Aggregate, type EdgeCell, type Filter, type Geometry, type Marker, type Pads } from "./model";

/** A colour "#rrggbb" as a packed pixel. */
function packHex(css: string): number {
  const n = parseInt(css.slice(1), 16);
  return pack((n >> 16) & 255, (n >> 8) & 255, n & 255);
}

/** The grid's frame on its canvas: the bins' geometry, the bands past the edges, the bin counts. */
export interface Frame {
  geo: Geometry;
  pads: Pads;
  binRows: number;
  binCols: number;
}

/** The canvas's CSS size for a frame: the grid plus its bands. */
export function frameSize(f: Frame): { width: number; height: number } {
  return { width: f.geo.width + f.pads.left + f.pads.right, height: f.geo.height + f.pads.top + f.pads.bottom };
}

let scratch: HTMLCanvasElement | null = null;

/** Draw the bins into `canvas` (already sized to geo): one putImageData onto a scratch canvas at
 * CSS-pixel size, then one scaled drawImage (no smoothing) so the device pixel ratio is honoured.
 * Bins several programs touch (program mode) get dark diagonal stripes. With `marks` (a class
 * per bin, 0 for none) and their colours, each marked bin gets a frame of its class's colour
 * (a cell under 4 px a side: every other pixel), drawn in the same pass. */
export function drawBins(
  canvas: HTMLCanvasElement,
  frame: Frame,
  agg: Aggregate,
  filter: Filter,
  palette: Uint32Array,
  marks: Uint8Array | null = null,
  markColours: Record<number, string> = {},
): void {
  const { geo, binCols } = frame;
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
  const markOf = new Uint32Array(8);
  for (const [k, css] of Object.entries(markColours)) markOf[Number(k) & 7] = packHex(css);
  const framed = cellW >= 4 && cellH >= 4;
  for (let y = 0; y < height; y++) {
    const rowBase = Math.floor(y / cellH) * binCols;
    const lineBase = y * width;
    const yIn = y % cellH;
    const yEdge = yIn === 0 || yIn === cellH - 1;
    for (let x = 0; x < width; x++) {
      const b = rowBase + colOf[x];
      let c = colours[b];
      if (hatch && agg.multi[b] && ((x + y) & 3) === 0) c = darken(c);
      const m = marks ? marks[b] : 0;
      if (m && markOf[m & 7]) {
        const xIn = x - colOf[x] * cellW;
        const edge = framed ? yEdge || xIn <= 1 || xIn >= cellW - 2 || yIn === 1 || yIn === cellH - 2 : ((x + y) & 1) === 0;
        if (edge) c = markOf[m & 7];
      }
      pixels[lineBase + x] = c;
    }
  }
  sctx.putImageData(image, 0, 0);
  const ctx = canvas.getContext("2d")!;
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.imageSmoothingEnabled = false;
  const size = frameSize(frame);
  const ratio = canvas.width / Math.max(size.width, 1);
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.drawImage(scratch, frame.pads.left * ratio, frame.pads.top * ratio, width * ratio, height * ratio);
}

/** The bands past the tensor's edges: a pale backdrop with the edge drawn as a dashed line, and
 * the cells out-of-bounds lanes land in, in their own colour. */
export function drawEdges(canvas: HTMLCanvasElement, frame: Frame, cells: EdgeCell[], slice: number): number {
  const { pads, geo } = frame;
  if (!pads.top && !pads.left && !pads.bottom && !pads.right) return 0;
  const ctx = canvas.getContext("2d")!;
  const size = frameSize(frame);
  const ratio = canvas.width / Math.max(size.width, 1);
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.fillStyle = packedCss(EDGE_COLOUR);
  if (pads.top) ctx.fillRect(0, 0, size.width, pads.top);
  if (pads.bottom) ctx.fillRect(0, size.height - pads.bottom, size.width, pads.bottom);
  if (pads.left) ctx.fillRect(0, 0, pads.left, size.height);
  if (pads.right) ctx.fillRect(size.width - pads.right, 0, pads.right, size.height);
  ctx.strokeStyle = "#868e96";
  ctx.lineWidth = 1;
  ctx.setLineDash([3, 2]);
  ctx.strokeRect(pads.left - 0.5, pads.top - 0.5, geo.width + 1, geo.height + 1);
  ctx.setLineDash([]);
  ctx.fillStyle = packedCss(OOB_COLOUR);
  let drawn = 0;
  for (const c of cells) {
    if (c.slice !== slice) continue;
    const r = placeRect(geo, pads, frame.binRows, frame.binCols, c.row, c.col);
    // At least 3 px along the edge so a lane in a 1-px column still shows.
    const w = Math.max(r.w, 3);
    const h = Math.max(r.h, 3);
    ctx.fillRect(r.x + r.w / 2 - w / 2, r.y + r.h / 2 - h / 2, w, h);
    drawn++;
  }
  return drawn;
}

/** Outlines on top of the bins (findings, the clicked cell); at least 9 px so a 1-px cell's
 * marker is still visible. Returns how many were drawn. */
export function drawMarkers(canvas: HTMLCanvasElement, frame: Frame, markers: Marker[]): number {
  const ctx = canvas.getContext("2d")!;
  const ratio = canvas.width / Math.max(frameSize(frame).width, 1);
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.lineWidth = 2;
  for (const m of markers) {
    const r = placeRect(frame.geo, frame.pads, frame.binRows, frame.binCols, m.row, m.col);
    const w = Math.max(r.w, 9);
    const hgt = Math.max(r.h, 9);
    const x = r.x + r.w / 2 - w / 2;
    const y = r.y + r.h / 2 - hgt / 2;
    ctx.strokeStyle = "#fff";
    ctx.strokeRect(x - 1, y - 1, w + 2, hgt + 2);
    ctx.strokeStyle = m.colour;
    ctx.strokeRect(x, y, w, hgt);
  }
  return markers.length;
}
