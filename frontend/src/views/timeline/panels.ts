// The timeline's elements around the canvas, built from the model: the gutter's kernel (or rank)
// headers and lane names, where the layout put them, and the clicked event's details (its line,
// call stack and args), and level of detail's bar. Apart from view.ts, which wires them up.
import { h } from "../../dom";
import type { Loaded } from "./loader";
import { OVERVIEW_PX, lodStatus, type Span } from "./lod";
import { ROW_H, countOf, describeEvent, fullName, type TimelineModel } from "./model";
import type { FrameStats } from "./painter";
import { eventContext } from "./search";

/** The gutter's items: a folding header per group, a label per shown lane. */
export function gutterItems(m: TimelineModel, toggle: (group: number) => void): HTMLElement[] {
  const items: HTMLElement[] = [];
  for (const mark of m.marks)
    items.push(h("div", { class: "tl-mark", style: `top: ${mark.y}px`, title: mark.title, "data-mark": mark.kind, "data-count": mark.spans.length }, h("span", {}, mark.label)));
  m.groups.forEach((g, k) => {
    const button = h(
      "button",
      { type: "button", class: "tl-group", style: `top: ${g.y}px`, "data-kernel": g.kernel, "aria-expanded": String(g.expanded), title: g.label, onclick: () => toggle(k) },
      // A rank's header holds its summary row when folded: its name alone, the rest on hover.
      `${g.expanded ? "▾" : "▸"} ${g.rank !== undefined ? `rank ${g.rank}` : g.label}`,
    );
    items.push(button);
  });
  m.lanes.forEach((lane, k) => {
    if (lane.hidden) return;
    const sub = lane.height >= ROW_H * 2 && lane.kind !== "intra" ? h("span", { class: "tl-kind" }, lane.kind === "stream" ? "GPU stream" : "thread") : null;
    items.push(h("div", { class: `tl-label tl-${lane.kind}`, style: `top: ${lane.y}px`, title: lane.name, "data-lane": k, "data-role": m.ref.lanes[k]?.role }, h("span", {}, lane.label), sub));
  });
  return items;
}

/** The line about the capped levels (model.ts levelCap), "" when every level is shown. */
export function cappedText(m: TimelineModel): string {
  return m.capped ? `deep nesting: ${m.capped} level${m.capped === 1 ? "" : "s"} per lane shown, deeper events drawn in the last` : "";
}

/** Event i's details: name (as the timeline shows it), category, lane, times (a merged block: how
 * many events, their span), the name demangled in full and as recorded on demand (a C++ kernel),
 * then its call stack from ROOT (a frame's full name on hover) and its other args, one row each.
 * Returns [name, children]. */
export function detailsOf(m: TimelineModel, i: number): [string, HTMLElement[]] {
  const [name, ...rest] = describeEvent(m, i);
  const context = eventContext(m.ref, m.stack, m.args, i);
  const line = h("div", { class: "tl-line" }, h("b", {}, name), ...rest.map((t) => h("span", {}, t)));
  const full = countOf(m, i) > 1 ? null : fullName(m.ref, m.name[i]);
  const names = full
    ? h(
        "details",
        { class: "tl-full" },
        h("summary", {}, "full name"),
        h("code", { class: "tl-full-name" }, full),
        h("div", { class: "tl-raw" }, h("span", { class: "k" }, "as recorded "), h("code", {}, m.ref.names[m.name[i]] ?? "?")),
      )
    : null;
  const stack = context.stack.length
    ? h(
        "div",
        { class: "tl-stack", "data-depth": context.stack.length },
        h("span", { class: "k" }, "call stack"),
        ...context.stack.map((frame, k) => h("span", { class: k === context.stack.length - 1 ? "frame last" : "frame", title: frame.full }, frame.name)),
      )
    : null;
  const args = context.args.length
    ? h("table", { class: "tl-args" }, h("tbody", {}, ...context.args.map(([key, value]) => h("tr", { "data-arg": key }, h("th", {}, key), h("td", {}, value)))))
    : null;
  return [name, [line, ...(names ? [names] : []), ...(stack ? [stack] : []), ...(args ? [args] : [])]];
}

/** Level of detail's bar over the canvas: what is drawn (lod.ts lodStatus), "loading…" while a
 * window is on its way; and, below it, one line when a window could not be loaded. The canvas'
 * data attributes say the same (data-lod, data-window, data-drawn-events, data-loading). */
export class LodBar {
  readonly bar: HTMLElement;
  readonly error: HTMLElement;
  private line = h("span", { class: "tl-lod" });
  private loading = h("span", { class: "tl-loading", role: "status", hidden: true }, "loading…");

  constructor() {
    this.bar = h("div", { class: "toolbar tl-lod-bar" }, this.line, this.loading);
    this.error = h("div", { class: "tl-lod-error", role: "alert", hidden: true });
  }

  /** The loader's state: a window on its way, the last one's failure (null: none). */
  loader(ds: DOMStringMap, loading: boolean, error: string | null): void {
    this.loading.hidden = !loading;
    this.error.hidden = !error;
    this.error.textContent = error ? `could not load this part of the trace in detail: ${error}` : "";
    if (loading) ds.loading = "";
    else delete ds.loading;
  }

  /** What a frame drew: from the overview (`detail` null) or a loaded window. */
  drawn(ds: DOMStringMap, overview: TimelineModel, detail: Loaded | null, stats: FrameStats): void {
    const shown: Span = detail ?? { t0: 0, t1: overview.span, px: OVERVIEW_PX };
    const text = lodStatus(shown, !detail, { blocks: stats.drawn, events: stats.events }, overview.ref.lod?.events ?? overview.events);
    if (this.line.textContent !== text) this.line.textContent = text;
    ds.lod = detail ? "window" : "overview";
    ds.drawnEvents = String(stats.events);
    if (detail) ds.window = `${detail.t0}:${detail.t1}:${detail.px}`;
    else delete ds.window;
  }
}
