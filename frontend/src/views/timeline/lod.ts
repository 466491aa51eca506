// Level of detail, the pure part (lod.test.ts runs it under Node). A trace of millions of events
// is not sent whole: the page gets an overview (the whole trace at 4096 buckets, events narrower
// than a bucket merged into blocks) and, as the view settles, windows of it at the screen's
// resolution (loader.ts fetches them). Here: when the windows held serve the view and which window
// to ask for when none does, which model to draw, the sequencing that drops a stale answer, folds
// kept alike in every model, search stepping across the overview and a window, and the texts.
import { fmt, fmtNs } from "../../format";
import { MIN_SPAN, clampWindow, layoutTimeline, sameEvent, type TimelineModel } from "./model";
import { stepMatch } from "./search";

export const OVERVIEW_PX = 4096; // the overview's buckets (the server builds it so)
export const MAX_PX = 20000; // the most buckets a window may ask for
export const SETTLE_MS = 120; // the view is still this long before a window is asked for

/** A window of the trace: [t0, t1] (ns relative to the trace's start) in px buckets. */
export interface Span {
  t0: number;
  t1: number;
  px: number;
}

/** A window held or asked for; `exact` when none of its events is merged: it serves any zoom. */
export interface Held extends Span {
  exact?: boolean;
}

/** The ns one bucket of a window covers. */
export function bucketNs(w: Span): number {
  return (w.t1 - w.t0) / Math.max(1, w.px);
}

/** The window [t0, t1] covers the part of the view [v0, v1] that lies over the trace [0, span]. */
export function covers(w: Span, v0: number, v1: number, span: number): boolean {
  return w.t0 <= Math.max(v0, 0) && w.t1 >= Math.min(v1, span);
}

/** The window can draw the view: it covers it, and at buckets no wider than a pixel of the plot
 * (`plotW` css px wide) unless nothing in it is merged. */
export function serves(w: Held, v0: number, v1: number, span: number, plotW: number): boolean {
  return covers(w, v0, v1, span) && (!!w.exact || bucketNs(w) <= (v1 - v0) / Math.max(1, plotW));
}

/** The window to fetch for the view [v0, v1], or null when one held (the overview, the loaded
 * window, the one on its way) serves it: the view widened by half its width each side, clamped to
 * the trace, whole ns; 2 buckets per css px of the canvas (`canvasW` wide) over the view, at most
 * MAX_PX. Null too when the window it would ask for is one held (more buckets are not to be had). */
export function windowAsk(v0: number, v1: number, span: number, canvasW: number, plotW: number, held: Held[]): Span | null {
  if (!(v1 > v0) || !(span > 0)) return null;
  if (held.some((w) => serves(w, v0, v1, span, plotW))) return null;
  const visible = v1 - v0;
  const t0 = Math.max(0, Math.floor(v0 - visible / 2));
  let t1 = Math.min(Math.ceil(span), Math.ceil(v1 + visible / 2));
  if (t1 <= t0) t1 = t0 + 1;
  const px = Math.min(MAX_PX, Math.max(1, Math.round((2 * canvasW * (t1 - t0)) / visible)));
  const ask = { t0, t1, px };
  return held.some((w) => w.t0 === ask.t0 && w.t1 === ask.t1 && w.px === ask.px) ? null : ask;
}

/** The address of a window: `path?t0=&t1=&px=` (`&` when the path already has a query). */
export function windowQuery(path: string, w: Span): string {
  return `${path}${path.includes("?") ? "&" : "?"}t0=${w.t0}&t1=${w.t1}&px=${w.px}`;
}

/** Which model draws the view: the loaded window's when the view lies inside it (over the trace),
 * else the overview's (at once: never a blank frame while a window loads). */
export function modelFor<M>(overview: M, detail: (Span & { model: M }) | null, v0: number, v1: number, span: number): M {
  return detail && covers(detail, v0, v1, span) ? detail.model : overview;
}

/** Requests in flight, one at a time: each new one makes the earlier ones stale, so their answers
 * (arriving later, or earlier, or aborted) are dropped rather than drawn or reported. */
export class Requests {
  private seq = 0;
  private open = 0; // the ticket awaited, 0: none
  pending: Span | null = null;

  /** A request is made: its ticket. */
  begin(ask: Span): number {
    this.pending = ask;
    this.open = ++this.seq;
    return this.open;
  }

  /** An answer (or a failure) came for `ticket`: true when it is the one awaited (take it, once),
   * false when a newer request was made since or all were cancelled (drop it, say nothing). */
  settle(ticket: number): boolean {
    if (ticket !== this.open || ticket === 0) return false;
    this.open = 0;
    this.pending = null;
    return true;
  }

  /** Await nothing more (the view goes away). */
  cancel(): void {
    this.open = 0;
    this.pending = null;
  }
}

/** Give model `to` the folds of model `from` (the same trace's; the server's lane depths make
 * their layouts alike) and lay it out again. */
export function syncFolds(from: TimelineModel, to: TimelineModel): void {
  if (from === to || from.groups.length !== to.groups.length) return;
  let changed = false;
  from.groups.forEach((g, k) => {
    if (to.groups[k].expanded !== g.expanded) (to.groups[k].expanded = g.expanded), (changed = true);
  });
  if (changed) layoutTimeline(to);
}

/** The window that shows a merged block's events: its extent with 5% each side, centred on it
 * (clamped: at least the deepest zoom). */
export function mergedWindow(start: number, dur: number, span: number): [number, number] {
  const d = Math.max(0, dur);
  const width = Math.max(d * 1.1, MIN_SPAN);
  const centre = start + d / 2;
  return clampWindow(centre - width / 2, centre + width / 2, span);
}

/** A merged block's label on the canvas: how many events it holds. */
export function mergedLabel(count: number): string {
  return `${fmt(count)} events`;
}

/** An event picked in one of the models (the overview's or a window's). */
export interface Pick {
  m: TimelineModel;
  i: number;
}

/** The matches to show next (dir 1) or before (dir -1) in level of detail: in the loaded window
 * after (before) the selected event when it is there; else in the overview (every event there or
 * in a block), the neighbour of the selected event, or the first past its start, wrapping around.
 * `matches` gives a model's matching event ids (in start order). */
export function stepAcross(overview: TimelineModel, detail: TimelineModel | null, matches: (m: TimelineModel) => Uint32Array, sel: Pick | null, dir: 1 | -1): Pick | null {
  if (detail && sel) {
    const j = sameEvent(detail, sel.m, sel.i);
    const found = matches(detail);
    if (j >= 0) {
      const k = dir > 0 ? firstAbove(found, j) : firstAbove(found, j - 1) - 1; // ids: strictly after or before
      if (k >= 0 && k < found.length) return { m: detail, i: found[k] };
    }
  }
  const all = matches(overview);
  if (!all.length) return null;
  const j = sel ? sameEvent(overview, sel.m, sel.i) : -1;
  if (!sel || j >= 0) return { m: overview, i: all[stepMatch(all, j, dir)] };
  // Selected in a window only: the first overview match starting after it (before it), wrapping.
  const t = sel.m.start[sel.i];
  let lo = 0;
  let hi = all.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (dir > 0 ? overview.start[all[mid]] <= t : overview.start[all[mid]] < t) lo = mid + 1;
    else hi = mid;
  }
  const k = dir > 0 ? lo % all.length : (lo - 1 + all.length) % all.length;
  return { m: overview, i: all[k] };
}

/** First index of a sorted id array whose id is > j. */
function firstAbove(ids: Uint32Array, j: number): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ids[mid] <= j) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The events drawn in a frame: `blocks` rectangles for `events` events in view, of `total`. */
export interface Drawn {
  blocks: number;
  events: number;
}

/** The toolbar's level-of-detail line: what is drawn (the overview or a window, at how many ns a
 * bucket) and how many events that is of the trace's. */
export function lodStatus(shown: Span, overview: boolean, drawn: Drawn, total: number): string {
  const what = overview ? "overview" : `window +${fmtNs(shown.t0)} – +${fmtNs(shown.t1)}`;
  return `${what}, ${fmt(shown.px)} buckets of ${fmtNs(bucketNs(shown))} · ${fmt(drawn.events)} of ${fmt(total)} events in view, as ${fmt(drawn.blocks)} blocks`;
}
