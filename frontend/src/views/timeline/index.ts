// The Timeline view: lanes (threads, GPU streams, and the CTAs' warps inside kernels under a
// folding header per kernel) of nested events on one canvas, zoomed with the wheel around the
// cursor or the buttons, panned by dragging. Frames are drawn on demand (one per animation frame
// at most), from the per-row indexes built in model.ts. Lane names and kernel headers are elements
// over the canvas' gutter; below, a table of the scopes inside kernels when the trace has any.
// A search box finds events by name and steps through them in time order; the launch arrows can be
// turned off; a clicked event's details show its call stack and args. The window, the selected
// event, the search and the arrows toggle live in the address (hashstate.ts), so a link reopens them,
// also when it is set on the open page (pasted into its address bar, Back, Forward).
import "./timeline.css";
import { getPacked } from "../../data";
import { fitCanvas, h, picker, placeTip } from "../../dom";
import { fmt, fmtNs } from "../../format";
import { readState, writeState } from "../../hashstate";
import { viewOfHash } from "../../route";
import type { Index } from "../../types";
import { LABEL_W, ROW_H, buildTimeline, clampWindow, describeEvent, eventAt, groupAt, setExpanded, traceSummary, type TimelineModel } from "./model";
import { Painter, type Highlight, type Window } from "./painter";
import { scopePanel } from "./scopes";
import { eventContext, focusWindow, matchingNames, parseState, searchEvents, searchText, stateParams, stepMatch, type TimelineState } from "./search";

export async function mountTimeline(root: HTMLElement, index: Index): Promise<void> {
  const slot = h("div", { class: "timeline-slot" });
  const traces = index.traces;
  // The shown view's window listeners; aborted when another trace replaces it, so the old view
  // (and its arrays of a million events) can be freed.
  let listening: AbortController | null = null;
  // The state the address opened with applies to the trace it names, once.
  const opened = parseState(readState("timeline"));
  if (opened.trace >= traces.length) opened.trace = 0;
  let current = -1;
  let view: TimelineView | null = null; // the trace shown, once loaded
  const show = async (k: number): Promise<void> => {
    const state: TimelineState = k === opened.trace ? { ...opened } : { trace: k, t0: null, t1: null, selected: -1, query: "", arrows: true };
    opened.trace = -1;
    current = k;
    view = null;
    listening?.abort();
    listening = new AbortController();
    const signal = listening.signal;
    const choose = traces.length > 1 ? picker(traces.map((t) => t.name), k, (j) => void show(j), { name: "trace", title: "trace" }) : null;
    writeState("timeline", stateParams(state));
    if (traces[k].count === 0) {
      slot.replaceChildren(...(choose ? [choose] : []), h("p", { class: "empty", "data-empty": "trace" }, `${traces[k].name} holds no complete events ("ph": "X") to draw.`));
      return;
    }
    slot.replaceChildren(h("p", { class: "empty" }, `Loading ${traces[k].name} (${fmt(traces[k].count)} events)…`));
    try {
      const model = buildTimeline(traces[k], await getPacked(traces[k].events));
      if (signal.aborted) return; // another trace was asked for meanwhile
      slot.replaceChildren();
      view = new TimelineView(slot, model, choose, signal, state);
    } catch (error) {
      slot.replaceChildren(h("div", { class: "error", role: "alert" }, error instanceof Error ? error.message : String(error)));
    }
  };
  root.append(slot);
  // The address changed under the open page (a link pasted into this tab's address bar,
  // `location.hash = …`, Back, Forward): show the trace, window, selection and search it names.
  const follow = (): void => {
    if (viewOfHash(location.hash) !== "timeline") return;
    const want = parseState(readState("timeline"));
    if (want.trace >= traces.length) want.trace = 0;
    if (want.trace === current) return view?.apply(want);
    Object.assign(opened, want);
    void show(want.trace);
  };
  window.addEventListener("hashchange", follow);
  window.addEventListener("popstate", follow);
  await show(Math.max(0, opened.trace));
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
  private search: HTMLInputElement;
  private found: HTMLSpanElement;
  private match: Uint8Array | null = null; // per name id, while a search is active
  private matches: Uint32Array = new Uint32Array(0); // the matching events, in time order
  private arrows: HTMLInputElement;
  private saveTimer = 0;
  private searchTimer = 0;

  constructor(root: HTMLElement, private m: TimelineModel, choose: HTMLSelectElement | null, private readonly signal: AbortSignal, private state: TimelineState) {
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
        button("reset", "reset", "show the whole trace", () => this.setWindow(0, m.span)),
        h("span", { class: "tl-summary" }, traceSummary(ref)),
        this.cappedNote,
      ),
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
    new ResizeObserver(() => this.schedule()).observe(this.box);
    if (state.t0 !== null && state.t1 !== null) [this.t0, this.t1] = clampWindow(state.t0, state.t1, m.span);
    if (state.query.trim()) this.runSearch();
    if (state.selected >= 0 && state.selected < m.n) this.select(state.selected);
    this.draw(); // the first frame now: opening time includes it
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
    const [t0, t1] = want.t0 !== null && want.t1 !== null ? clampWindow(want.t0, want.t1, this.m.span) : [0, this.m.span];
    if (t0 !== this.t0 || t1 !== this.t1) this.setWindow(t0, t1);
    const selected = want.selected < this.m.n ? want.selected : -1;
    if (selected !== this.selected) this.select(selected);
    this.save();
    this.schedule();
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

  /** Find the events whose name holds the search text: count them, light them, dim the rest. */
  private runSearch(): void {
    clearTimeout(this.searchTimer);
    this.searchTimer = 0;
    const query = this.search.value;
    this.state.query = query.trim() ? query : "";
    this.match = matchingNames(this.m.ref, query);
    this.matches = this.match ? searchEvents(this.m.name, this.match) : new Uint32Array(0);
    const ds = this.canvas.dataset;
    if (this.match) ds.matches = String(this.matches.length);
    else delete ds.matches;
    this.showFound();
    this.save();
    this.schedule();
  }

  private showFound(): void {
    if (!this.match) {
      this.found.hidden = true;
      return;
    }
    const at = this.selected >= 0 && this.match[this.m.name[this.selected]] ? stepMatch(this.matches, this.selected, 1) : -1;
    const index = at < 0 ? -1 : (at - 1 + this.matches.length) % this.matches.length;
    this.found.textContent = searchText(this.state.query, this.matches.length, this.m.n, index);
    this.found.classList.toggle("none", this.matches.length === 0);
    this.found.hidden = false;
  }

  /** Show and select the next (1) or previous (-1) match in time order. */
  private step(dir: 1 | -1): void {
    if (this.searchTimer || this.search.value !== this.state.query) this.runSearch(); // Enter before the pause
    const k = stepMatch(this.matches, this.selected, dir);
    if (k >= 0) this.goTo(this.matches[k]);
  }

  /** Bring an event into view (unfolding its kernel, scrolling to its lane) and select it. */
  private goTo(i: number): void {
    const m = this.m;
    const lane = m.lanes[m.lane[i]];
    if (lane?.hidden && lane.group >= 0) {
      setExpanded(m, lane.group, true);
      this.fillGutter();
    }
    const [t0, t1] = focusWindow(this.t0, this.t1, m.start[i], m.dur[i], m.span);
    this.setWindow(t0, t1);
    this.select(i);
    if (lane) {
      const top = this.canvas.getBoundingClientRect().top + lane.y;
      if (top < 0 || top + ROW_H > window.innerHeight) window.scrollBy(0, top - window.innerHeight / 3);
    }
  }

  /** Put the view's state in the address, a moment after it settles (a drag is many windows). */
  private save(): void {
    clearTimeout(this.saveTimer);
    this.saveTimer = window.setTimeout(() => {
      if (this.signal.aborted) return;
      const whole = this.t0 <= 0 && this.t1 >= this.m.span;
      Object.assign(this.state, { t0: whole ? null : this.t0, t1: whole ? null : this.t1, selected: this.selected });
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
        // A rank's header holds its summary row when folded: its name alone, the rest on hover.
        `${g.expanded ? "▾" : "▸"} ${g.rank !== undefined ? `rank ${g.rank}` : g.label}`,
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
    this.save();
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
    this.select(this.hit(e));
  }

  /** Select an event (-1: none) and show its details: name, category, lane, times, then its call
   * stack from ROOT and its other args, one row each. */
  private select(i: number): void {
    this.selected = i;
    const d = this.details;
    if (i < 0) {
      d.hidden = true;
      delete d.dataset.event;
      delete this.canvas.dataset.selected;
    } else {
      const [name, ...rest] = describeEvent(this.m, i);
      const context = eventContext(this.m.ref, this.m.stack, this.m.args, i);
      d.dataset.event = name;
      this.canvas.dataset.selected = String(i);
      const line = h("div", { class: "tl-line" }, h("b", {}, name), ...rest.map((t) => h("span", {}, t)));
      const stack = context.stack.length
        ? h("div", { class: "tl-stack", "data-depth": context.stack.length }, h("span", { class: "k" }, "call stack"), ...context.stack.map((frame, k) => h("span", { class: k === context.stack.length - 1 ? "frame last" : "frame" }, frame)))
        : null;
      const args = context.args.length
        ? h("table", { class: "tl-args" }, h("tbody", {}, ...context.args.map(([key, value]) => h("tr", { "data-arg": key }, h("th", {}, key), h("td", {}, value)))))
        : null;
      d.replaceChildren(line, ...(stack ? [stack] : []), ...(args ? [args] : []));
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
    const width = Math.max(LABEL_W + 50, this.box.clientWidth - 2);
    // Resizing a canvas reallocates it: only when the box changed, else just reuse it.
    if (!this.ctx || width !== this.size[0] || this.m.height !== this.size[1]) {
      this.ctx = fitCanvas(this.canvas, width, this.m.height);
      this.size = [width, this.m.height];
    }
    const ctx = this.ctx;
    const w: Window = { t0: this.t0, t1: this.t1, width };
    const stats = this.painter.frame(ctx, w, this.selected, this.highlight, this.match, this.arrows.checked);
    const ds = this.canvas.dataset;
    ds.drawn = String(stats.drawn);
    ds.flowsDrawn = String(stats.flows);
    ds.arrows = String(this.arrows.checked);
    ds.startNs = String(Math.round(this.t0));
    ds.endNs = String(Math.round(this.t1));
    ds.frameMs = (performance.now() - began).toFixed(1);
  }
}
