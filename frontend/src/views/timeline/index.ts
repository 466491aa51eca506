// The Timeline view: lanes (threads, GPU streams, and the CTAs' warps inside kernels under a
// folding header per kernel) of nested events on one canvas, zoomed with the wheel around the
// cursor or the buttons, panned by dragging. Frames are drawn on demand (one per animation frame
// at most), from the per-row indexes built in model.ts. Lane names and kernel headers are elements
// over the canvas' gutter; below, a table of the scopes inside kernels when the trace has any.
import "./timeline.css";
import { getPacked } from "../../data";
import { fitCanvas, h, picker, placeTip } from "../../dom";
import { fmt } from "../../format";
import type { Index } from "../../types";
import { LABEL_W, ROW_H, buildTimeline, clampWindow, describeEvent, eventAt, groupAt, setExpanded, traceSummary, type TimelineModel } from "./model";
import { Painter, type Highlight, type Window } from "./painter";
import { scopePanel } from "./scopes";

export async function mountTimeline(root: HTMLElement, index: Index): Promise<void> {
  const slot = h("div", { class: "timeline-slot" });
  const traces = index.traces;
  // The shown view's window listeners; aborted when another trace replaces it, so the old view
  // (and its arrays of a million events) can be freed.
  let listening: AbortController | null = null;
  const show = async (k: number): Promise<void> => {
    listening?.abort();
    listening = new AbortController();
    const signal = listening.signal;
    const choose = traces.length > 1 ? picker(traces.map((t) => t.name), k, (j) => void show(j), { name: "trace", title: "trace" }) : null;
    if (traces[k].count === 0) {
      slot.replaceChildren(...(choose ? [choose] : []), h("p", { class: "empty", "data-empty": "trace" }, `${traces[k].name} holds no complete events ("ph": "X") to draw.`));
      return;
    }
    slot.replaceChildren(h("p", { class: "empty" }, `Loading ${traces[k].name} (${fmt(traces[k].count)} events)…`));
    try {
      const model = buildTimeline(traces[k], await getPacked(traces[k].events));
      slot.replaceChildren();
      new TimelineView(slot, model, choose, signal);
    } catch (error) {
      slot.replaceChildren(h("div", { class: "error", role: "alert" }, error instanceof Error ? error.message : String(error)));
    }
  };
  root.append(slot);
  await show(0);
}

class TimelineView {
  private canvas: HTMLCanvasElement;
  private box: HTMLDivElement;
  private gutter: HTMLDivElement;
  private cappedNote: HTMLSpanElement;
  private tip: HTMLDivElement;
  private details: HTMLDivElement;
  private painter: Painter;
  private t0 = 0;
  private t1: number;
  private selected = -1;
  private highlight: Highlight | null = null;
  private scopes: HTMLElement | null;
  private frame = 0;
  private ctx: CanvasRenderingContext2D | null = null;
  private size: [number, number] = [0, 0];
  private drag: { x: number; t0: number; moved: boolean } | null = null;

  constructor(root: HTMLElement, private m: TimelineModel, choose: HTMLSelectElement | null, private readonly signal: AbortSignal) {
    const ref = m.ref;
    this.t1 = m.span;
    this.painter = new Painter(m);
    this.canvas = h("canvas", { class: "tl-canvas", "data-events": m.n, "data-lanes": m.lanes.length, tabindex: 0 });
    this.cappedNote = h("span", { class: "tl-hint", "data-note": "capped" });
    this.tip = h("div", { class: "tip", hidden: true });
    this.gutter = h("div", { class: "tl-gutter", style: `width: ${LABEL_W - 1}px` });
    this.box = h("div", { class: "tl-box card" }, this.canvas, this.gutter, this.tip);
    this.details = h("div", { class: "card tl-details", hidden: true });
    this.scopes = scopePanel(m, (pick) => {
      this.highlight = pick;
      if (pick) this.canvas.dataset.highlight = `${pick.kernel} · ${m.ref.names[pick.nameId] ?? "?"}`;
      else delete this.canvas.dataset.highlight;
      this.schedule();
    });
    const button = (label: string, name: string, title: string, act: () => void): HTMLButtonElement =>
      h("button", { type: "button", name, title, onclick: act }, label);
    root.append(
      h(
        "div",
        { class: "toolbar" },
        choose && h("label", {}, "trace ", choose),
        button("+", "zoom-in", "zoom in", () => this.zoomBy(0.5)),
        button("−", "zoom-out", "zoom out", () => this.zoomBy(2)),
        button("reset", "reset", "show the whole trace", () => this.setWindow(0, m.span)),
        h("span", { class: "tl-summary" }, traceSummary(ref)),
        this.cappedNote,
        h("span", { class: "tl-hint" }, "wheel: zoom · drag: pan · click: details"),
      ),
      this.box,
      this.details,
      ...(this.scopes ? [this.scopes] : []),
    );
    this.fillGutter();
    this.listen();
    new ResizeObserver(() => this.schedule()).observe(this.box);
    this.draw(); // the first frame now: opening time includes it
  }

  private listen(): void {
    const c = this.canvas;
    c.addEventListener("wheel", (e) => this.wheel(e), { passive: false });
    c.addEventListener("mousedown", (e) => {
      this.drag = { x: e.clientX, t0: this.t0, moved: false };
      e.preventDefault();
    });
    window.addEventListener("mousemove", (e) => this.move(e), { signal: this.signal });
    window.addEventListener(
      "mouseup",
      (e) => {
        const d = this.drag;
        this.drag = null;
        c.classList.remove("dragging");
        if (d && !d.moved && e.target === c) this.click(e);
      },
      { signal: this.signal },
    );
    c.addEventListener("mouseleave", () => (this.tip.hidden = true));
    c.addEventListener("keydown", (e) => {
      if (e.key === "+" || e.key === "=") this.zoomBy(0.5);
      else if (e.key === "-") this.zoomBy(2);
      else if (e.key === "ArrowLeft") this.panBy(-0.1);
      else if (e.key === "ArrowRight") this.panBy(0.1);
      else if (e.key === "0") this.setWindow(0, this.m.span);
    });
  }

  /** The lane names and kernel headers over the canvas' left gutter, where the layout put them. */
  private fillGutter(): void {
    const m = this.m;
    const items: HTMLElement[] = [];
    m.groups.forEach((g, k) => {
      const toggle = h(
        "button",
        { type: "button", class: "tl-group", style: `top: ${g.y}px`, "data-kernel": g.kernel, "aria-expanded": String(g.expanded), title: g.label, onclick: () => this.toggle(k) },
        `${g.expanded ? "▾" : "▸"} ${g.label}`,
      );
      items.push(toggle);
    });
    m.lanes.forEach((lane, k) => {
      if (lane.hidden) return;
      const sub = lane.height >= ROW_H * 2 && lane.kind !== "intra" ? h("span", { class: "tl-kind" }, lane.kind === "stream" ? "GPU stream" : "thread") : null;
      items.push(h("div", { class: `tl-label tl-${lane.kind}`, style: `top: ${lane.y}px`, title: lane.name, "data-lane": k }, h("span", {}, lane.label), sub));
    });
    this.gutter.style.height = `${m.height}px`;
    // Unfolding a kernel can leave fewer levels per lane (model.ts levelCap): say so each time.
    this.canvas.dataset.capped = String(m.capped);
    this.cappedNote.hidden = !m.capped;
    this.cappedNote.textContent = m.capped ? `deep nesting: ${m.capped} level${m.capped === 1 ? "" : "s"} per lane shown, deeper events drawn in the last` : "";
    this.gutter.replaceChildren(...items);
    this.canvas.dataset.groups = String(m.groups.length);
    this.canvas.dataset.shownLanes = String(m.lanes.filter((l) => !l.hidden).length);
  }

  /** Fold or unfold a kernel's lanes: a new layout, gutter and frame. */
  private toggle(group: number): void {
    const g = this.m.groups[group];
    if (!g) return;
    setExpanded(this.m, group, !g.expanded);
    this.fillGutter();
    this.schedule();
  }

  private plotWidth(): number {
    return Math.max(50, this.box.clientWidth - 2 - LABEL_W);
  }

  private timeAt(clientX: number): number {
    const x = clientX - this.canvas.getBoundingClientRect().left - LABEL_W;
    return this.t0 + (x / this.plotWidth()) * (this.t1 - this.t0);
  }

  /** Set the visible window, clamped to the trace (with a little slack) and to the deepest zoom. */
  setWindow(t0: number, t1: number): void {
    [this.t0, this.t1] = clampWindow(t0, t1, this.m.span);
    this.schedule();
  }

  /** Zoom by `factor` around time `at` (the view's centre when omitted). */
  private zoomBy(factor: number, at = (this.t0 + this.t1) / 2): void {
    this.setWindow(at - (at - this.t0) * factor, at + (this.t1 - at) * factor);
  }

  private panBy(fraction: number): void {
    const d = (this.t1 - this.t0) * fraction;
    this.setWindow(this.t0 + d, this.t1 + d);
  }

  private wheel(e: WheelEvent): void {
    e.preventDefault();
    const unit = e.deltaMode === 1 ? 33 : e.deltaMode === 2 ? 500 : 1; // lines/pages to pixels
    if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) return this.panBy((e.deltaX * unit) / this.plotWidth());
    this.zoomBy(Math.exp(e.deltaY * unit * 0.0025), this.timeAt(e.clientX));
  }

  private move(e: MouseEvent): void {
    const d = this.drag;
    if (d) {
      const dx = e.clientX - d.x;
      if (Math.abs(dx) > 3) d.moved = true;
      if (d.moved) {
        this.canvas.classList.add("dragging");
        const span = this.t1 - this.t0;
        this.setWindow(d.t0 - (dx / this.plotWidth()) * span, d.t0 - (dx / this.plotWidth()) * span + span);
      }
      this.tip.hidden = true;
      return;
    }
    if (e.target !== this.canvas) return;
    this.hover(e);
  }

  /** The event under the pointer (within 2 px), or -1. */
  private hit(e: MouseEvent): number {
    const r = this.canvas.getBoundingClientRect();
    const x = e.clientX - r.left;
    const y = e.clientY - r.top;
    if (x < LABEL_W) return -1;
    const row = this.m.rows.find((rw) => y >= rw.y && y < rw.y + ROW_H);
    if (!row) return -1;
    const perPx = (this.t1 - this.t0) / this.plotWidth();
    return eventAt(this.m, row, this.timeAt(e.clientX), perPx * 2);
  }

  private hover(e: MouseEvent): void {
    const i = this.hit(e);
    if (i < 0) {
      this.tip.hidden = true;
      delete this.canvas.dataset.hover;
      return;
    }
    this.canvas.dataset.hover = this.m.ref.names[this.m.name[i]] ?? "?";
    this.tip.textContent = describeEvent(this.m, i).join("\n");
    placeTip(this.tip, e);
  }

  private click(e: MouseEvent): void {
    const header = groupAt(this.m, e.clientY - this.canvas.getBoundingClientRect().top);
    if (header >= 0) return this.toggle(header);
    const i = this.hit(e);
    this.selected = i;
    if (i < 0) {
      this.details.hidden = true;
      delete this.details.dataset.event;
    } else {
      const [name, ...rest] = describeEvent(this.m, i);
      this.details.dataset.event = name;
      this.details.replaceChildren(h("b", {}, name), ...rest.map((t) => h("span", {}, t)));
      this.details.hidden = false;
    }
    this.schedule();
  }

  private schedule(): void {
    if (!this.frame) this.frame = requestAnimationFrame(() => ((this.frame = 0), this.draw()));
  }

  private draw(): void {
    const began = performance.now();
    const width = Math.max(LABEL_W + 50, this.box.clientWidth - 2);
    // Resizing a canvas reallocates it: only when the box changed, else just reuse it.
    if (!this.ctx || width !== this.size[0] || this.m.height !== this.size[1]) {
      this.ctx = fitCanvas(this.canvas, width, this.m.height);
      this.size = [width, this.m.height];
    }
    const ctx = this.ctx;
    const w: Window = { t0: this.t0, t1: this.t1, width };
    const stats = this.painter.frame(ctx, w, this.selected, this.highlight);
    const ds = this.canvas.dataset;
    ds.drawn = String(stats.drawn);
    ds.flowsDrawn = String(stats.flows);
    ds.startNs = String(Math.round(this.t0));
    ds.endNs = String(Math.round(this.t1));
    ds.frameMs = (performance.now() - began).toFixed(1);
  }
}
