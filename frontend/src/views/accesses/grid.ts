// The Accesses view's grid drawing: the bins (aggregated and coloured in model.ts) as one ImageData
// (one pixel per screen pixel, then scaled onto the canvas), and the outlines on top. Bins run to
// 512×512, so everything here works on typed arrays in single passes; no per-cell canvas calls.
import { binColours, darken, type Aggregate, type Filter, type Geometry, type Marker } from "./model";

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
