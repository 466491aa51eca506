// The icicle graph: ROOT on top, children below, widths from one column's inclusive values, drawn
// on one canvas. Layout is a single pass over typed arrays; drawing walks only the nodes at least
// half a pixel wide, so a 100 000-node tree costs what is visible, not what is in the file.
import { fitCanvas, h, placeTip } from "../../dom";
import { colourOf } from "../../format";
import { describeNode, diffColour, flameLayout, isUnder, nameOf, type ProfileModel } from "./model";

const ROW = 18; // px per depth level
// Browsers draw nothing on a canvas taller than about 16k CSS px at a pixel ratio of 2: levels
// below this one are counted as culled (the table still shows them).
const MAX_DEPTH_DRAWN = Math.floor(8000 / ROW);
const MIN_PX = 0.5; // narrower rectangles are culled (counted, not drawn)

export interface FlameOptions {
  /** A node was clicked (ROOT included): the view selects its table row. */
  onPick: (node: number) => void;
}

export class Flame {
  readonly el: HTMLElement;
  readonly canvas: HTMLCanvasElement;
  private tip: HTMLDivElement;
  private note: HTMLParagraphElement; // says when a file's frames do not cover their children
  private column: number;
  private width: Float64Array = new Float64Array(0); // the width column, NaN/negatives as 0
  private x0: Float64Array = new Float64Array(0); // left edge in value units (ROOT starts at 0)
  private zoom = 0;
  private depthLimit = Infinity;
  private match: Uint8Array | null = null;
  private selected = -1;
  // The last frame's rectangles, for hit testing: node, left px, width px.
  private drawnNode = new Int32Array(0);
  private drawnX = new Float64Array(0);
  private drawnW = new Float64Array(0);
  private drawnCount = 0;
  private nameColour: (string | undefined)[] = [];
  private frame = 0;

  constructor(private m: ProfileModel, private opts: FlameOptions) {
    this.column = m.data.primary;
    this.canvas = h("canvas", { class: "flame-canvas", "data-zoom": "ROOT", "data-zoom-node": 0, "data-selected": -1, "data-drawn": 0 });
    this.tip = h("div", { class: "tip", hidden: true });
    this.note = h("p", { class: "flame-rule", role: "status", hidden: true });
    this.el = h("div", { class: "flame-box" }, this.note, this.canvas, this.tip);
    this.canvas.addEventListener("mousemove", (e) => this.hover(e));
    this.canvas.addEventListener("mouseleave", () => this.unhover());
    this.canvas.addEventListener("click", (e) => this.click(e));
    new ResizeObserver(() => this.schedule()).observe(this.el);
    this.layout();
  }

  setColumn(column: number): void {
    this.column = column;
    this.layout();
    this.schedule();
  }

  setDepthLimit(limit: number): void {
    this.depthLimit = limit;
    this.schedule();
  }

  /** Nodes to keep in colour (a regex filter); others are drawn grey. null: all. */
  setMatch(match: Uint8Array | null): void {
    this.match = match;
    this.schedule();
  }

  zoomTo(node: number): void {
    this.zoom = node;
    this.canvas.dataset.zoom = nameOf(this.m, node);
    this.canvas.dataset.zoomNode = String(node); // the node ids the address names (zoom, sel)
    this.canvas.dataset.selected = String(this.selected);
    this.schedule();
  }

  resetZoom(): void {
    this.zoomTo(0);
  }

  /** The zoomed frame (0: ROOT) and the outlined one (-1: none), as the address keeps them. */
  get zoomed(): number {
    return this.zoom;
  }

  get picked(): number {
    return this.selected;
  }

  /** Put back a zoom and an outline exactly as a link names them (highlight() would move the
   * zoom to keep the outlined frame in view). */
  restore(zoom: number, selected: number): void {
    this.selected = selected;
    this.zoomTo(zoom);
  }

  /** Outline a node (a table row was clicked); zoom out or in when it would not be visible. */
  highlight(node: number): void {
    this.selected = node;
    if (!isUnder(this.m, node, this.zoom)) this.zoom = 0;
    if (this.width[node] > 0 && this.width[node] * this.scale() < 2) this.zoom = node;
    this.zoomTo(this.zoom);
  }

  /** Positions: children packed left to right by value, largest first, from the parent's left. */
  private layout(): void {
    const { width, x0, overflowing } = flameLayout(this.m, this.column);
    this.width = width;
    this.x0 = x0;
    this.canvas.dataset.column = this.m.data.columns[this.column];
    this.canvas.dataset.overflowing = String(overflowing);
    this.note.hidden = overflowing === 0;
    this.note.textContent = overflowing
      ? `${overflowing.toLocaleString()} frame${overflowing === 1 ? "" : "s"} with children wider than ${overflowing === 1 ? "itself" : "themselves"} in ${this.m.data.columns[this.column]}: this file breaks the rule that a frame covers its children (deuteron view FILE --check says where)`
      : "";
  }

  private scale(): number {
    const full = this.width[this.zoom];
    return full > 0 ? this.el.clientWidth / full : 0;
  }

  private schedule(): void {
    if (!this.frame) this.frame = requestAnimationFrame(() => ((this.frame = 0), this.draw()));
  }

  /** Draw now (also used by the first paint so it is not a frame late). */
  draw(): void {
    const m = this.m;
    const cssWidth = Math.max(100, this.el.clientWidth);
    const scale = this.width[this.zoom] > 0 ? cssWidth / this.width[this.zoom] : 0;
    const left = this.x0[this.zoom];
    // Gather first: the canvas height depends on the deepest drawn row.
    const nodes: number[] = [];
    const xs: number[] = [];
    const ws: number[] = [];
    let culled = 0;
    let deepest = 0;
    for (let a = m.parent[this.zoom]; a >= 0; a = m.parent[a]) {
      nodes.push(a), xs.push(0), ws.push(cssWidth); // ancestors of the zoomed node: full width
    }
    const stack = [this.zoom];
    while (stack.length) {
      const i = stack.pop()!;
      const pw = this.width[i] * scale;
      if (pw < MIN_PX || m.depth[i] > this.depthLimit || m.depth[i] > MAX_DEPTH_DRAWN) {
        culled += m.subtree[i];
        continue;
      }
      nodes.push(i), xs.push((this.x0[i] - left) * scale), ws.push(pw);
      if (m.depth[i] > deepest) deepest = m.depth[i];
      for (let k = m.kidStart[i]; k < m.kidStart[i + 1]; k++) stack.push(m.kids[k]);
    }
    const ctx = fitCanvas(this.canvas, cssWidth, (deepest + 1) * ROW + 1);
    this.paint(ctx, nodes, xs, ws);
    this.drawnNode = Int32Array.from(nodes);
    this.drawnX = Float64Array.from(xs);
    this.drawnW = Float64Array.from(ws);
    this.drawnCount = nodes.length;
    this.canvas.dataset.drawn = String(nodes.length);
    this.canvas.dataset.culled = String(culled);
  }

  private paint(ctx: CanvasRenderingContext2D, nodes: number[], xs: number[], ws: number[]): void {
    const m = this.m;
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    const charW = ctx.measureText("abcdefghijklmnopqrstuvwxyz_0123456789").width / 37;
    for (let k = 0; k < nodes.length; k++) {
      const i = nodes[k];
      const y = m.depth[i] * ROW;
      const x = xs[k];
      const w = ws[k];
      const ancestor = m.depth[i] < m.depth[this.zoom];
      ctx.fillStyle = ancestor ? "#e9e9ee" : this.fill(i);
      // A 1 px gap between neighbours (when there is room) keeps boundaries readable.
      ctx.fillRect(x, y, w > 2 ? w - 1 : w, ROW - 1);
      if (i === this.selected) {
        ctx.strokeStyle = "#111";
        ctx.lineWidth = 2;
        ctx.strokeRect(x + 1, y + 1, Math.max(1, w - 3), ROW - 3);
      }
      if (w > charW * 3 + 6) {
        const name = nameOf(m, i);
        const room = Math.floor((w - 6) / charW);
        const label = name.length <= room ? name : name.slice(0, Math.max(1, room - 1)) + "…";
        const dim = this.match !== null && !this.match[i];
        ctx.fillStyle = dim ? "#8a8a92" : "#1d1d1f";
        ctx.fillText(label, x + 3, y + ROW / 2);
      }
    }
  }

  private fill(i: number): string {
    const m = this.m;
    if (this.match !== null && !this.match[i]) return "#e4e4e8";
    if (m.base) return diffColour(this.width[i], m.base[this.column][i]);
    const id = m.data.name_id[i];
    return (this.nameColour[id] ??= colourOf(m.data.names[id]));
  }

  private hit(e: MouseEvent): number {
    const r = this.canvas.getBoundingClientRect();
    const x = e.clientX - r.left;
    const row = Math.floor((e.clientY - r.top) / ROW);
    for (let k = 0; k < this.drawnCount; k++) {
      const i = this.drawnNode[k];
      if (this.m.depth[i] === row && x >= this.drawnX[k] && x < this.drawnX[k] + Math.max(1, this.drawnW[k])) return i;
    }
    return -1;
  }

  private hover(e: MouseEvent): void {
    const i = this.hit(e);
    if (i < 0) return this.unhover();
    this.canvas.dataset.hover = nameOf(this.m, i);
    this.canvas.style.cursor = "pointer";
    this.tip.textContent = describeNode(this.m, i);
    placeTip(this.tip, e);
  }

  private unhover(): void {
    this.tip.hidden = true;
    this.canvas.style.cursor = "";
    delete this.canvas.dataset.hover;
  }

  private click(e: MouseEvent): void {
    const i = this.hit(e);
    if (i < 0) return;
    this.unhover(); // the rectangle under the pointer is about to move
    this.selected = i;
    // ROOT, or the zoomed node itself, un-zooms; an ancestor bar zooms out to it.
    this.zoomTo(i === this.zoom ? 0 : i);
    this.opts.onPick(i);
  }
}
