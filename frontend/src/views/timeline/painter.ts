// One frame of the timeline. Level of detail: per row, events under a pixel wide are merged into
// one block per run of pixel columns, so a million events cost one pass of arithmetic and a few
// thousand fillRects; wider events are drawn (and labelled) one by one. Lane names are not drawn
// here: they are elements over the canvas' left gutter (view.ts), so they can be clicked and read.
// In level of detail (lod.ts) the model drawn changes with the view (`m`), and the server's merged
// blocks (count > 1) that are wide enough to see are drawn hatched, labelled with their count.
import { timeUnit } from "../../format";
import { mergedLabel } from "./lod";
import type { MarkLane } from "./marks";
import { AXIS_H, GROUP_H, LABEL_W, ROW_H, lowerBound, niceStep, shownName, spanColour, tickLabel, type Row, type TimelineModel } from "./model";

export const MAX_FLOWS = 2000; // arrows are drawn only when fewer are in the window

export interface Window {
  t0: number; // relative ns at the plot's left edge
  t1: number; // ... right edge
  width: number; // css px of the whole canvas
}

/** A scope picked in the scope table: its spans (that kernel's, that name) stand out, the other
 * spans inside kernels fade. */
export interface Highlight {
  kernel: string;
  nameId: number;
}

export interface FrameStats {
  drawn: number; // rectangles
  events: number; // the events in view they stand for (merged blocks count their events)
  flows: number; // arrows drawn (0 when too many were visible)
  flowsVisible: number;
}

export class Painter {
  private colours: (string | undefined)[] = [];
  private charW = 6.5;
  private pattern: CanvasPattern | null | undefined; // merged blocks' hatching, made once

  /** `m`: the model drawn; the view sets another in level of detail (the same trace's). */
  constructor(public m: TimelineModel) {}

  colour(nameId: number): string {
    return (this.colours[nameId] ??= spanColour(this.m.ref.names[nameId] ?? "?"));
  }

  /** One frame. `match` (per name id, from a search) lights its events and dims the others;
   * `arrows` false leaves out the launch arrows. */
  frame(ctx: CanvasRenderingContext2D, w: Window, selected: number, highlight: Highlight | null = null, match: Uint8Array | null = null, arrows = true): FrameStats {
    const m = this.m;
    ctx.clearRect(0, 0, w.width, m.height);
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    this.charW = ctx.measureText("abcdefghijklmnopqrstuvwxyz_:0123456789").width / 38;
    const plotW = w.width - LABEL_W;
    const scale = plotW / (w.t1 - w.t0);
    this.lanes(ctx, w.width);
    this.grid(ctx, w, scale, plotW);
    this.headers(ctx, w, scale, plotW);
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, AXIS_H, plotW, m.height - AXIS_H);
    ctx.clip();
    for (const mark of m.marks) this.mark(ctx, mark, w, scale);
    const counted = { drawn: 0, events: 0 };
    for (const row of m.rows) this.row(ctx, row, w, scale, selected, highlight, match, counted);
    for (const g of m.groups) if (!g.expanded && g.summary) this.row(ctx, g.summary, w, scale, selected, highlight, match, counted);
    const [flows, flowsVisible] = arrows ? this.flows(ctx, w, scale) : [0, 0];
    ctx.restore();
    return { ...counted, flows, flowsVisible };
  }

  /** Lane bands (the warps of one CTA share a shade) and the gutter's edge. */
  private lanes(ctx: CanvasRenderingContext2D, width: number): void {
    this.m.lanes.forEach((lane, k) => {
      if (lane.hidden) return;
      const odd = lane.cta !== null ? lane.cta % 2 : k % 2;
      ctx.fillStyle = odd ? "#f6f6f8" : "#fbfbfc";
      ctx.fillRect(0, lane.y - lane.gap / 2, width, lane.height + lane.gap);
    });
    for (const mark of this.m.marks) {
      ctx.fillStyle = "#f1f3f9";
      ctx.fillRect(0, mark.y - 4, width, ROW_H + 8);
    }
    ctx.fillStyle = "#dcdcdf";
    ctx.fillRect(LABEL_W - 1, 0, 1, this.m.height);
  }

  /** A steps or backward lane: its spans, alternating shades (a warm-up step paler), labelled
   * where they are wide enough. */
  private mark(ctx: CanvasRenderingContext2D, lane: MarkLane, w: Window, scale: number): void {
    const hgt = ROW_H - 1;
    lane.spans.forEach((s, k) => {
      if (s.t1 < w.t0 || s.t0 > w.t1) return;
      const left = Math.max(LABEL_W + (s.t0 - w.t0) * scale, LABEL_W - 2);
      const right = Math.min(LABEL_W + (s.t1 - w.t0) * scale, w.width + 2);
      if (lane.kind === "steps") ctx.fillStyle = s.warm ? "#d0d4e4" : k % 2 ? "#748ffc" : "#91a7ff";
      else ctx.fillStyle = k % 2 ? "#ffa94d" : "#ffc078";
      ctx.fillRect(left, lane.y, Math.max(1, right - left - (right - left > 3 ? 1 : 0)), hgt);
      if (right - left > this.charW * 4 + 6) this.label(ctx, s.label, left, right, lane.y);
    });
  }

  /** Each kernel's header row; folded, it shows where in time the kernel's spans lie. */
  private headers(ctx: CanvasRenderingContext2D, w: Window, scale: number, plotW: number): void {
    for (const g of this.m.groups) {
      ctx.fillStyle = "#eef1fd";
      ctx.fillRect(0, g.y, w.width, GROUP_H);
      ctx.fillStyle = "#cfd7f7";
      ctx.fillRect(0, g.y + GROUP_H - 1, w.width, 1);
      if (g.expanded || !(g.t1 >= g.t0)) continue;
      if (g.summary) continue; // a folded rank: its summary row is drawn with the others
      const x0 = Math.max(LABEL_W, LABEL_W + (g.t0 - w.t0) * scale);
      const x1 = Math.min(LABEL_W + plotW, LABEL_W + (g.t1 - w.t0) * scale);
      if (x1 < LABEL_W || x0 > LABEL_W + plotW) continue;
      ctx.fillStyle = "rgba(59, 91, 219, 0.35)";
      ctx.fillRect(x0, g.y + 6, Math.max(1, x1 - x0), GROUP_H - 12);
    }
  }

  /** Time axis: ticks every 1, 2 or 5 × 10^k ns, about 100 px apart, labels relative to the start. */
  private grid(ctx: CanvasRenderingContext2D, w: Window, scale: number, plotW: number): void {
    const step = niceStep((w.t1 - w.t0) / Math.max(1, plotW / 110));
    const unit = timeUnit(Math.max(Math.abs(w.t0), Math.abs(w.t1)));
    ctx.fillStyle = "#fff";
    ctx.fillRect(LABEL_W, 0, plotW, AXIS_H);
    ctx.fillStyle = "#6b6b70";
    for (let t = Math.ceil(w.t0 / step) * step; t <= w.t1; t += step) {
      const x = LABEL_W + (t - w.t0) * scale;
      ctx.fillStyle = "#e6e6ea";
      ctx.fillRect(Math.round(x), AXIS_H, 1, this.m.height - AXIS_H);
      ctx.fillStyle = "#6b6b70";
      ctx.fillRect(Math.round(x), AXIS_H - 6, 1, 6);
      const text = tickLabel(t, step, unit);
      if (x + 3 + text.length * this.charW < w.width) ctx.fillText(text, x + 3, AXIS_H / 2 - 1);
    }
    ctx.fillStyle = "#dcdcdf";
    ctx.fillRect(LABEL_W, AXIS_H - 1, plotW, 1);
  }

  /** One lane+depth row; adds the rectangles drawn and the events in view to `counted`. Inside
   * kernels, a block of thin spans takes the colour of its longest span, and a highlighted scope's
   * spans stand out while the others fade. */
  private row(ctx: CanvasRenderingContext2D, row: Row, w: Window, scale: number, selected: number, highlight: Highlight | null, match: Uint8Array | null, counted: { drawn: number; events: number }): void {
    const m = this.m;
    const count = m.count;
    const s = row.start;
    const e = row.end;
    const len = s.length;
    let k = lowerBound(row.maxEnd, w.t0);
    const y = row.y;
    const hgt = ROW_H - 1;
    let drawn = 0;
    let blockX0 = -1;
    let blockX1 = -1;
    let covered = 0; // px of events inside the block: its shade says how busy those pixels are
    let longest = -1; // inside kernels: the block's longest span, whose colour it takes
    let lit = false; // the block holds a highlighted span
    const lane = m.lanes[Math.min(row.lane, m.lanes.length - 1)];
    const intra = lane?.kind === "intra";
    const blockFill = lane?.kind === "stream" ? "#7b6bb0" : "#6c7a93";
    const picked = intra && highlight !== null; // a scope of the scope table: its spans only
    const focus = picked && m.groups[lane.group]?.kernel === highlight.kernel ? highlight.nameId : -2;
    const fade = picked || match !== null; // every span of another scope or kernel, or not found
    const shines = (nameId: number): boolean => (!picked || nameId === focus) && (match === null || match[nameId] === 1);
    const flush = (): void => {
      if (blockX1 > blockX0) {
        ctx.fillStyle = intra && longest >= 0 ? this.colour(m.name[longest]) : blockFill;
        const busy = 0.3 + 0.7 * Math.min(1, covered / (blockX1 - blockX0));
        ctx.globalAlpha = fade ? (lit ? 1 : 0.15) : busy;
        ctx.fillRect(blockX0, y, blockX1 - blockX0, hgt);
        ctx.globalAlpha = 1;
        drawn++;
      }
      blockX0 = blockX1 = -1;
      covered = 0;
      longest = -1;
      lit = false;
    };
    for (; k < len && s[k] <= w.t1; k++) {
      if (e[k] >= w.t0) counted.events += count ? count[row.idx[k]] : 1;
      const x0 = LABEL_W + (s[k] - w.t0) * scale;
      const x1 = LABEL_W + (e[k] - w.t0) * scale;
      if (x1 - x0 < 1) {
        // Thin: join the current block when it reaches this pixel column, else start one.
        const px = Math.floor(x0);
        if (px <= blockX1) blockX1 = Math.max(blockX1, px + 1);
        else {
          flush();
          blockX0 = px;
          blockX1 = px + 1;
        }
        covered += x1 - x0;
        const i = row.idx[k];
        if (intra && (longest < 0 || m.dur[i] > m.dur[longest])) longest = i;
        if (fade && !lit && shines(m.name[i])) lit = true;
        continue;
      }
      flush();
      const i = row.idx[k];
      const left = Math.max(x0, LABEL_W - 2);
      const right = Math.min(x1, w.width + 2);
      ctx.fillStyle = this.colour(m.name[i]);
      const dim = fade && !shines(m.name[i]);
      if (dim) ctx.globalAlpha = 0.15;
      ctx.fillRect(left, y, Math.max(1, right - left - (right - left > 3 ? 1 : 0)), hgt);
      ctx.globalAlpha = 1;
      drawn++;
      if (fade && !dim) {
        ctx.strokeStyle = "#1d1d1f";
        ctx.lineWidth = 1;
        ctx.strokeRect(left + 0.5, y + 0.5, Math.max(1, right - left - 1), hgt - 1);
      }
      const many = count ? count[i] : 1;
      if (many > 1) {
        if (dim) ctx.globalAlpha = 0.15;
        this.hatch(ctx, left, right, y, hgt);
        ctx.globalAlpha = 1;
      }
      if (i === selected) {
        ctx.strokeStyle = "#111";
        ctx.lineWidth = 2;
        ctx.strokeRect(left + 1, y + 1, Math.max(1, right - left - 2), hgt - 2);
      }
      if (right - left > this.charW * 4 + 6) this.label(ctx, many > 1 ? mergedLabel(many) : shownName(m.ref, m.name[i]), left, right, y);
    }
    flush();
    counted.drawn += drawn;
  }

  /** A merged block (level of detail): white stripes over its colour, so it reads as many events. */
  private hatch(ctx: CanvasRenderingContext2D, left: number, right: number, y: number, hgt: number): void {
    if (this.pattern === undefined) {
      const tile = document.createElement("canvas");
      tile.width = tile.height = 6;
      const t = tile.getContext("2d");
      if (t) {
        t.strokeStyle = "rgba(255, 255, 255, 0.75)";
        t.lineWidth = 1.5;
        t.beginPath();
        for (const d of [-6, 0, 6]) (t.moveTo(d, 6), t.lineTo(d + 6, 0));
        t.stroke();
      }
      this.pattern = t ? ctx.createPattern(tile, "repeat") : null;
    }
    if (!this.pattern) return;
    ctx.fillStyle = this.pattern;
    ctx.fillRect(left, y, Math.max(1, right - left - 1), hgt);
  }

  private label(ctx: CanvasRenderingContext2D, text: string, left: number, right: number, y: number): void {
    const room = Math.floor((right - left - 6) / this.charW);
    const label = text.length <= room ? text : text.slice(0, Math.max(1, room - 1)) + "…";
    ctx.fillStyle = "#1d1d1f";
    ctx.fillText(label, left + 3, y + ROW_H / 2);
  }

  /** Where an arrow can end on a lane: the lane itself, or, folded under a rank's header, that
   * header's summary row; null where the lane is folded away. */
  private arrowEnd(lane: number): { y: number; height: number } | null {
    const ln = this.m.lanes[lane];
    if (!ln) return null;
    if (!ln.hidden) return { y: ln.y, height: ln.height };
    const g = this.m.groups[ln.group];
    return g && !g.expanded && g.summary ? { y: g.y + 2, height: GROUP_H - 4 } : null;
  }

  /** An arrow between two ranks' lanes: a collective's link to the rank that came last. */
  private isLink(k: number): boolean {
    const f = this.m.flows;
    const a = this.m.lanes[f.fromLane[k]];
    const b = this.m.lanes[f.toLane[k]];
    return !!a && !!b && a.group !== b.group && this.m.groups[a.group]?.rank !== undefined;
  }

  /** Launch→kernel arrows and the links between ranks' collectives in the window, each kind when
   * there are few enough of it to read (the links, a few per step, stay when the launches are
   * too many); an arrow into a folded rank ends on its summary row. Returns [drawn, in view]. */
  private flows(ctx: CanvasRenderingContext2D, w: Window, scale: number): [number, number] {
    const f = this.m.flows;
    if (!f.n) return [0, 0];
    const lo = lowerBound(f.from, w.t0 - f.maxGap);
    const hi = lowerBound(f.from, w.t1 + 1e-9);
    let launches = 0;
    let links = 0;
    for (let k = lo; k < hi; k++) {
      if (f.to[k] < w.t0 || !this.arrowEnd(f.fromLane[k]) || !this.arrowEnd(f.toLane[k])) continue;
      if (this.isLink(k)) links++;
      else launches++;
    }
    const drawLaunches = launches <= MAX_FLOWS;
    const drawLinks = links <= MAX_FLOWS;
    ctx.lineWidth = 1;
    let drawn = 0;
    for (let k = lo; k < hi; k++) {
      if (f.to[k] < w.t0) continue;
      const link = this.isLink(k);
      if (link ? !drawLinks : !drawLaunches) continue;
      const a = this.arrowEnd(f.fromLane[k]);
      const b = this.arrowEnd(f.toLane[k]);
      if (!a || !b) continue;
      // Between two ranks: a collective's link to the rank that came last, in its own colour.
      ctx.strokeStyle = link ? "rgba(214, 120, 20, 0.85)" : "rgba(59, 91, 219, 0.75)";
      ctx.fillStyle = link ? "rgba(214, 120, 20, 0.95)" : "rgba(59, 91, 219, 0.9)";
      const x0 = LABEL_W + (f.from[k] - w.t0) * scale;
      const x1 = LABEL_W + (f.to[k] - w.t0) * scale;
      const down = b.y >= a.y; // streams usually sit below threads, but not necessarily
      const dir = down ? 1 : -1;
      const y0 = down ? a.y + a.height - 2 : a.y + 2;
      const y1 = down ? b.y + 1 : b.y + b.height - 1;
      ctx.beginPath();
      ctx.moveTo(x0, y0);
      ctx.bezierCurveTo(x0, (y0 + y1) / 2, x1, (y0 + y1) / 2, x1, y1 - 4 * dir);
      ctx.stroke();
      ctx.beginPath(); // arrowhead
      ctx.moveTo(x1, y1);
      ctx.lineTo(x1 - 3, y1 - 6 * dir);
      ctx.lineTo(x1 + 3, y1 - 6 * dir);
      ctx.fill();
      drawn++;
    }
    return [drawn, launches + links];
  }
}
