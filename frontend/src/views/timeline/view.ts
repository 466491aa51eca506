// One trace's timeline on the page (index.ts mounts it): the canvas, its gutter, the toolbars,
// the details and the scope table, and what the pointer, the keys, the search box and the address
// do to them. Frames are drawn on demand (one per animation frame at most) by painter.ts. In level
// of detail (a big trace, lod.ts) it holds the overview's model and, through loader.ts, a window's:
// each frame draws the window's when the view lies inside it, else the overview's; folds are made
// on the overview and copied to the window's; a selection is an event of either, found again in
// the other when the model drawn changes. It opens on the window the address names, else on the
// steady steps (marks.ts openingWindow), which the address then leaves out; the steps and backward
// lanes' spans zoom to themselves when clicked.
import { getPacked, standalone } from "../../data";
import { fitCanvas, h, placeTip } from "../../dom";
import { fmtNs } from "../../format";
import { writeState } from "../../hashstate";
import { mergedWindow, modelFor, stepAcross, syncFolds, type Pick } from "./lod";
import { WindowLoader } from "./loader";
import { LABEL_W, ROW_H, clampWindow, countOf, describeEvent, eventAt, groupAt, sameEvent, setExpanded, shownName, traceSummary, type TimelineModel } from "./model";
import { Painter, type Highlight, type Window } from "./painter";
import { LodBar, cappedText, detailsOf, gutterItems } from "./panels";
import { markAt, openingWindow, spanWindow, type MarkSpan } from "./marks";
import { scopePanel } from "./scopes";
import { focusWindow, matchingNames, searchEvents, searchText, stateParams, stepMatch, type TimelineState } from "./search";

export class TimelineView {
  private canvas: HTMLCanvasElement;
  private box: HTMLDivElement;
  private gutter: HTMLDivElement;
  private cappedNote: HTMLSpanElement;
  private tip: HTMLDivElement;
  private details: HTMLDivElement;
  private painter: Painter;
  private m: TimelineModel; // the model drawn (the overview's, or in level of detail a window's)
  private loader: WindowLoader | null = null;
  private lodBar: LodBar | null = null;
  private t0 = 0;
  private t1: number;
  private readonly home: [number, number]; // the window it opens on: the steady steps, else the whole trace
  private sel: Pick | null = null;
  private highlight: Highlight | null = null;
  private scopes: HTMLElement | null;
  private frame = 0;
  private ctx: CanvasRenderingContext2D | null = null;
  private size: [number, number] = [0, 0];
  private drag: { x: number; t0: number; moved: boolean } | null = null;
  private search: HTMLInputElement;
  private found: HTMLSpanElement;
  private match: Uint8Array | null = null; // per name id, while a search is active
  private matched = new Map<TimelineModel, Uint32Array>(); // each model's matching events, in time order
  private arrows: HTMLInputElement;
  private saveTimer = 0;
  private searchTimer = 0;

  constructor(root: HTMLElement, private readonly overview: TimelineModel, choose: HTMLSelectElement | null, private readonly signal: AbortSignal, private state: TimelineState) {
    const m = (this.m = overview);
    const ref = m.ref;
    this.t1 = m.span;
    this.home = openingWindow(ref, m.span);
    this.painter = new Painter(m);
    this.canvas = h("canvas", { class: "tl-canvas", "data-events": ref.lod?.events ?? m.n, "data-lanes": m.lanes.length, tabindex: 0 });
    this.cappedNote = h("span", { class: "tl-hint", "data-note": "capped" });
    this.tip = h("div", { class: "tip", hidden: true });
    this.gutter = h("div", { class: "tl-gutter", style: `width: ${LABEL_W - 1}px` });
    this.box = h("div", { class: "tl-box card" }, this.canvas, this.gutter, this.tip);
    this.details = h("div", { class: "card tl-details", hidden: true });
    if (ref.window !== undefined) {
      this.lodBar = new LodBar();
      // A standalone page has no server to ask for windows: its overview is all there is.
      if (!standalone()) this.loader = new WindowLoader(m, (url, abort) => getPacked(url, abort), () => this.lodChanged(), signal);
    }
    const note = m.merged ? `from the overview: ${m.merged.toLocaleString("en-US")} merged blocks left out` : "";
    this.scopes = scopePanel(m, (pick) => {
      this.highlight = pick;
      if (pick) this.canvas.dataset.highlight = `${pick.kernel} · ${shownName(m.ref, pick.nameId)}`;
      else delete this.canvas.dataset.highlight;
      this.schedule();
    }, note);
    const button = (label: string, name: string, title: string, act: () => void): HTMLButtonElement =>
      h("button", { type: "button", name, title, onclick: act }, label);
    this.search = h("input", { type: "search", name: "search", placeholder: "find events", spellcheck: "false", "aria-label": "find events by name" });
    this.search.value = state.query;
    this.found = h("span", { class: "tl-found", role: "status", hidden: true });
    this.arrows = h("input", { type: "checkbox", name: "arrows", checked: state.arrows });
    this.listenSearch();
    root.append(
      h(
        "div",
        { class: "toolbar" },
        choose && h("label", {}, "trace ", choose),
        button("+", "zoom-in", "zoom in", () => this.zoomBy(0.5)),
        button("−", "zoom-out", "zoom out", () => this.zoomBy(2)),
        ...(ref.step_window ? [button("steps", "steps", "show the steady steps (the window it opened on)", () => this.setWindow(...this.home))] : []),
        button("whole run", "reset", "show the whole run (key 0)", () => this.setWindow(0, m.span)),
        h("span", { class: "tl-summary" }, traceSummary(ref)),
        this.cappedNote,
      ),
      ...(this.lodBar ? [this.lodBar.bar, this.lodBar.error] : []),
      ...(ref.job ? [h(
          "div",
          { class: "toolbar tl-clock", title: ref.job.ranks.map((r) => `rank ${r.rank}: ${r.source}${r.host ? ` on ${r.host}` : ""}, moved ${fmtNs(r.shift_ns)}`).join("\n") },
          `one clock — ${ref.job.clock}; orange arrows: each rank's collective to the rank that started it last`,
        )] : []),
      h(
        "div",
        { class: "toolbar tl-search" },
        h("label", {}, "find ", this.search),
        button("↑", "search-prev", "previous match (Shift+Enter)", () => this.step(-1)),
        button("↓", "search-next", "next match (Enter)", () => this.step(1)),
        this.found,
        h("label", { class: "tl-arrows", title: ref.job ? "arrows from each launch to its kernel, and between the ranks' collectives" : "the arrows from each launch to its kernel" }, this.arrows, ref.job ? " arrows" : " launch arrows"),
        h("span", { class: "tl-hint" }, "wheel: zoom · drag: pan · click: details"),
      ),
      this.box,
      this.details,
      ...(this.scopes ? [this.scopes] : []),
    );
    this.fillGutter();
    this.listen();
    new ResizeObserver(() => (this.schedule(), this.viewMoved())).observe(this.box);
    // The window the address says, else the steady steps (marks.ts openingWindow).
    [this.t0, this.t1] = state.t0 !== null && state.t1 !== null ? clampWindow(state.t0, state.t1, m.span) : this.home;
    const ds = this.canvas.dataset;
    for (const mark of m.marks) ds[mark.kind] = String(mark.spans.length);
    if (ref.step_window) ds.stepWindow = `${Math.round(this.home[0])}:${Math.round(this.home[1])}`;
    if (state.query.trim()) this.runSearch();
    if (state.selected >= 0 && state.selected < m.n) this.select({ m, i: state.selected });
    this.draw(); // the first frame now: opening time includes it
    this.viewMoved();
  }

  /** Take the state a link names (the address changed under the open view); what is already so
   * is left alone, so applying it twice changes nothing. */
  apply(want: TimelineState): void {
    if (this.arrows.checked !== want.arrows) {
      this.arrows.checked = want.arrows;
      this.state.arrows = want.arrows;
    }
    if (this.search.value !== want.query) {
      this.search.value = want.query;
      this.runSearch();
    }
    const [t0, t1] = want.t0 !== null && want.t1 !== null ? clampWindow(want.t0, want.t1, this.overview.span) : this.home;
    if (t0 !== this.t0 || t1 !== this.t1) this.setWindow(t0, t1);
    const selected = want.selected < this.overview.n ? want.selected : -1;
    if (selected !== this.selectedIn(this.overview)) this.select(selected < 0 ? null : { m: this.overview, i: selected });
    this.save();
    this.schedule();
  }

  /** The loader's news (a window arrived, one is on its way, one failed): say so and redraw. */
  private lodChanged(): void {
    const l = this.loader;
    if (!l || this.signal.aborted) return;
    this.lodBar?.loader(this.canvas.dataset, !!l.loading, l.error);
    if (l.detail) syncFolds(this.overview, l.detail.model);
    this.schedule();
  }

  /** The view moved or was resized: the loader asks for a window once it settles. */
  private viewMoved(): void {
    this.loader?.viewChanged(this.t0, this.t1, this.canvasWidth(), this.plotWidth());
  }

  /** The search box: typing searches (after a pause), Enter and Shift+Enter step through the
   * matches; the arrows box turns the launch arrows on and off. */
  private listenSearch(): void {
    this.search.addEventListener("input", () => {
      clearTimeout(this.searchTimer);
      this.searchTimer = window.setTimeout(() => this.runSearch(), 150); // not a rescan per key
    });
    this.search.addEventListener("keydown", (e) => {
      if (e.key !== "Enter") return;
      e.preventDefault();
      this.step(e.shiftKey ? -1 : 1);
    });
    this.arrows.addEventListener("change", () => {
      this.state.arrows = this.arrows.checked;
      this.save();
      this.schedule();
    });
  }

  /** A model's events whose name matches the search, in time order (each model's found once). */
  private matchesIn(m: TimelineModel): Uint32Array {
    let found = this.matched.get(m);
    if (found) return found;
    for (const k of this.matched.keys()) if (k !== this.overview && k !== this.loader?.detail?.model) this.matched.delete(k); // windows gone
    this.matched.set(m, (found = this.match ? searchEvents(m.name, this.match) : new Uint32Array(0)));
    return found;
  }

  /** Find the events whose name holds the search text: count them, light them, dim the rest. */
  private runSearch(): void {
    clearTimeout(this.searchTimer);
    this.searchTimer = 0;
    const query = this.search.value;
    this.state.query = query.trim() ? query : "";
    this.match = matchingNames(this.overview.ref, query);
    this.matched.clear();
    const ds = this.canvas.dataset;
    if (this.match) ds.matches = String(this.matchesIn(this.overview).length);
    else delete ds.matches;
    this.showFound();
    this.save();
    this.schedule();
  }

  /** The search's status line, of the model drawn (in level of detail: of the events loaded). */
  private showFound(): void {
    if (!this.match) {
      this.found.hidden = true;
      return;
    }
    const m = this.m;
    const matches = this.matchesIn(m);
    const selected = this.selectedIn(m);
    const at = selected >= 0 && this.match[m.name[selected]] ? stepMatch(matches, selected, 1) : -1;
    const index = at < 0 ? -1 : (at - 1 + matches.length) % matches.length;
    this.found.textContent = searchText(this.state.query, matches.length, m.n, index, this.lodBar ? "loaded event" : "event");
    this.found.classList.toggle("none", matches.length === 0);
    this.found.hidden = false;
  }

  /** Show and select the next (1) or previous (-1) match in time order. */
  private step(dir: 1 | -1): void {
    if (this.searchTimer || this.search.value !== this.state.query) this.runSearch(); // Enter before the pause
    const detail = this.loader?.detail?.model ?? null;
    const pick = stepAcross(this.overview, detail, (m) => this.matchesIn(m), this.sel, dir);
    if (pick) this.goTo(pick);
  }

  /** Bring an event into view (unfolding its kernel, scrolling to its lane) and select it; a
   * merged block (level of detail), zoomed onto so that its events get loaded. */
  private goTo(pick: Pick): void {
    const { m, i } = pick;
    const lane = m.lanes[m.lane[i]];
    if (lane?.hidden && lane.group >= 0) this.setFold(lane.group, true);
    const [t0, t1] = countOf(m, i) > 1 ? mergedWindow(m.start[i], m.dur[i], m.span) : focusWindow(this.t0, this.t1, m.start[i], m.dur[i], m.span);
    this.setWindow(t0, t1);
    this.select(pick);
    if (lane) {
      const top = this.canvas.getBoundingClientRect().top + lane.y;
      if (top < 0 || top + ROW_H > window.innerHeight) window.scrollBy(0, top - window.innerHeight / 3);
    }
  }

  /** The selected event's id in model m (-1: none, or not there); the address keeps its id in the
   * overview (the whole trace's model). */
  private selectedIn(m: TimelineModel): number {
    return this.sel ? sameEvent(m, this.sel.m, this.sel.i) : -1;
  }

  /** Put the view's state in the address, a moment after it settles (a drag is many windows). */
  private save(): void {
    clearTimeout(this.saveTimer);
    this.saveTimer = window.setTimeout(() => {
      if (this.signal.aborted) return;
      // The window it opens on is left out of the address (the whole run too, where that is it).
      const home = this.overview.ref.step_window ? this.t0 === this.home[0] && this.t1 === this.home[1] : this.t0 <= 0 && this.t1 >= this.overview.span;
      Object.assign(this.state, { t0: home ? null : this.t0, t1: home ? null : this.t1, selected: this.selectedIn(this.overview) });
      writeState("timeline", stateParams(this.state));
    }, 200);
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
      else if (e.key === "0") this.setWindow(0, this.overview.span);
    });
  }

  /** The lane names and kernel headers over the canvas' left gutter, where the layout put them. */
  private fillGutter(): void {
    const m = this.overview; // every model has its layout
    this.gutter.style.height = `${m.height}px`;
    // Unfolding a kernel can leave fewer levels per lane (model.ts levelCap): say so each time.
    this.canvas.dataset.capped = String(m.capped);
    this.cappedNote.hidden = !m.capped;
    this.cappedNote.textContent = cappedText(m);
    this.gutter.replaceChildren(...gutterItems(m, (k) => this.toggle(k)));
    this.canvas.dataset.groups = String(m.groups.length);
    this.canvas.dataset.shownLanes = String(m.lanes.filter((l) => !l.hidden).length);
  }

  /** Fold or unfold a group in the overview (which may fold others, model.ts setExpanded) and
   * likewise in the loaded window's model. */
  private setFold(group: number, expanded: boolean): void {
    setExpanded(this.overview, group, expanded);
    if (this.loader?.detail) syncFolds(this.overview, this.loader.detail.model);
    this.fillGutter();
  }

  /** Fold or unfold a kernel's lanes: a new layout, gutter and frame. */
  private toggle(group: number): void {
    const g = this.overview.groups[group];
    if (!g) return;
    this.setFold(group, !g.expanded);
    this.schedule();
  }

  private canvasWidth(): number {
    return Math.max(LABEL_W + 50, this.box.clientWidth - 2);
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
    [this.t0, this.t1] = clampWindow(t0, t1, this.overview.span);
    this.save();
    this.schedule();
    this.viewMoved();
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

  /** The event under the pointer (within 2 px) in the model drawn, or -1. */
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

  /** The span of a steps or backward lane under the pointer (within 2 px), or null. */
  private markHit(e: MouseEvent): MarkSpan | null {
    const r = this.canvas.getBoundingClientRect();
    const y = e.clientY - r.top;
    if (e.clientX - r.left < LABEL_W) return null;
    const lane = this.m.marks.find((mk) => y >= mk.y && y < mk.y + ROW_H);
    if (!lane) return null;
    return markAt(lane, this.timeAt(e.clientX), ((this.t1 - this.t0) / this.plotWidth()) * 2);
  }

  private hover(e: MouseEvent): void {
    const mark = this.markHit(e);
    if (mark) {
      this.canvas.dataset.hover = mark.label;
      this.tip.textContent = mark.title;
      placeTip(this.tip, e);
      return;
    }
    const i = this.hit(e);
    if (i < 0) {
      this.tip.hidden = true;
      delete this.canvas.dataset.hover;
      return;
    }
    this.canvas.dataset.hover = shownName(this.m.ref, this.m.name[i]);
    this.tip.textContent = describeEvent(this.m, i).join("\n");
    placeTip(this.tip, e);
  }

  /** A header folds or unfolds; an event is selected; a merged block is zoomed into. */
  private click(e: MouseEvent): void {
    const header = groupAt(this.m, e.clientY - this.canvas.getBoundingClientRect().top);
    if (header >= 0) return this.toggle(header);
    const mark = this.markHit(e);
    if (mark) return this.setWindow(...spanWindow(mark, this.overview.span));
    const i = this.hit(e);
    if (i >= 0 && countOf(this.m, i) > 1) return this.setWindow(...mergedWindow(this.m.start[i], this.m.dur[i], this.m.span));
    this.select(i < 0 ? null : { m: this.m, i });
  }

  /** Select an event (null: none) and show its details (panels.ts detailsOf). */
  private select(pick: Pick | null): void {
    this.sel = pick;
    const d = this.details;
    if (!pick) {
      d.hidden = true;
      delete d.dataset.event;
      delete this.canvas.dataset.selected;
    } else {
      const [name, children] = detailsOf(pick.m, pick.i);
      d.dataset.event = name;
      this.canvas.dataset.selected = String(pick.i); // in the model it was picked in
      d.replaceChildren(...children);
      d.hidden = false;
    }
    if (this.match) this.showFound();
    this.save();
    this.schedule();
  }

  private schedule(): void {
    if (!this.frame) this.frame = requestAnimationFrame(() => ((this.frame = 0), this.draw()));
  }

  private draw(): void {
    const began = performance.now();
    // Level of detail: the loaded window's model when the view lies inside it, else the overview's.
    const detail = this.loader?.detail ?? null;
    const m = modelFor(this.overview, detail, this.t0, this.t1, this.overview.span);
    if (m !== this.m) {
      this.m = this.painter.m = m;
      if (this.match) this.showFound();
    }
    const width = this.canvasWidth();
    // Resizing a canvas reallocates it: only when the box changed, else just reuse it.
    if (!this.ctx || width !== this.size[0] || m.height !== this.size[1]) {
      this.ctx = fitCanvas(this.canvas, width, m.height);
      this.size = [width, m.height];
    }
    const w: Window = { t0: this.t0, t1: this.t1, width };
    const stats = this.painter.frame(this.ctx, w, this.selectedIn(m), this.highlight, this.match, this.arrows.checked);
    const ds = this.canvas.dataset;
    ds.drawn = String(stats.drawn);
    ds.flowsDrawn = String(stats.flows);
    ds.arrows = String(this.arrows.checked);
    ds.startNs = String(Math.round(this.t0));
    ds.endNs = String(Math.round(this.t1));
    this.lodBar?.drawn(ds, this.overview, m === this.overview ? null : detail, stats);
    ds.frameMs = (performance.now() - began).toFixed(1);
  }
}
