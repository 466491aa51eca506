// The timeline's search and an event's context, pure (search.test.ts runs them under Node): which
// events a text finds, the status line, stepping through the matches in time order, the window
// that brings a match into view, an event's call stack and args, and the view's state in the
// address (zoom window, selected event, search text, arrows toggle).
import { fmt } from "../../format";
import type { TraceRef } from "../../types";
import { MIN_SPAN, clampWindow } from "./model";

/** Per name id, 1 where the name contains `query` (case-insensitive), as recorded, as `deuteron
 * view` shows it or demangled: a search for "gemm" finds a mangled cutlass kernel. Null for an
 * empty query (no search). Tested once per distinct name, not per event. */
export function matchingNames(ref: TraceRef, query: string): Uint8Array | null {
  const q = query.trim().toLowerCase();
  if (!q) return null;
  const out = new Uint8Array(ref.names.length);
  ref.names.forEach((name, k) => {
    const seen = [name, ref.display_names?.[k], ref.full_names?.[k]];
    out[k] = seen.some((t) => t !== undefined && t.toLowerCase().includes(q)) ? 1 : 0;
  });
  return out;
}

/** The ids of the events whose name matches, in time order (ids are in start order). */
export function searchEvents(name: Uint32Array, byName: Uint8Array): Uint32Array {
  let k = 0;
  for (let i = 0; i < name.length; i++) if (byName[name[i]]) k++;
  const out = new Uint32Array(k);
  k = 0;
  for (let i = 0; i < name.length; i++) if (byName[name[i]]) out[k++] = i;
  return out;
}

/** The search's status line: "12 of 4,310 events match" (with "· 3rd" when one is shown), or
 * that none does. `noun`: what is counted ("loaded event" in level of detail, where the events
 * searched are those of the model drawn). */
export function searchText(query: string, found: number, total: number, at = -1, noun = "event"): string {
  if (found === 0) return `no ${noun} matches '${query.trim()}'`;
  const which = at >= 0 ? ` · ${fmt(at + 1)} of ${fmt(found)} shown` : "";
  return `${fmt(found)} of ${fmt(total)} ${noun}${total === 1 ? "" : "s"} match${found === 1 ? "es" : ""}${which}`;
}

/** The match to show next (dir 1) or before (dir -1), as an index into `matches`: the neighbour
 * of the selected event when it is a match, else the first match after it (or the last before
 * it), wrapping around at either end; -1 when nothing matches. */
export function stepMatch(matches: Uint32Array, selected: number, dir: 1 | -1): number {
  const n = matches.length;
  if (!n) return -1;
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (matches[mid] < selected) lo = mid + 1;
    else hi = mid;
  }
  if (lo < n && matches[lo] === selected) return (lo + dir + n) % n;
  return dir > 0 ? lo % n : (lo - 1 + n) % n;
}

/** The window that shows event [start, start + dur): the current span centred on it when it fits
 * in 80% of it, else zoomed out to fit it with a margin (clamped as every window is). */
export function focusWindow(t0: number, t1: number, start: number, dur: number, span: number): [number, number] {
  const d = Math.max(0, dur);
  let width = t1 - t0;
  if (d > width * 0.8) width = Math.max(d * 1.25, MIN_SPAN);
  const centre = start + d / 2;
  return clampWindow(centre - width / 2, centre + width / 2, span);
}

/** A call stack's frame: as shown (a mangled C++ name's short form, else as recorded) and, where
 * it demangles, in full (null otherwise). */
export interface StackFrame {
  name: string;
  full: string | null;
}

/** What the details panel adds about an event: its call stack (ROOT to the event, frames named as
 * the timeline names events) and its other args as key / value rows; empty where the trace
 * recorded none (or the page predates them). */
export function eventContext(ref: TraceRef, stack: Uint32Array | null, args: Uint32Array | null, i: number): { stack: StackFrame[]; args: [string, string][] } {
  const frames = (stack && ref.stacks?.[stack[i]]) || [];
  return {
    stack: frames.map((frame) => {
      const known = ref.frame_names?.[frame];
      return known ? { name: known[0], full: known[1] } : { name: frame, full: null };
    }),
    args: (args && ref.arg_sets?.[args[i]]) || [],
  };
}

/** The timeline's state as the address spells it. */
export interface TimelineState {
  trace: number; // which trace of several
  t0: number | null; // the window, relative ns; null: the whole trace
  t1: number | null;
  selected: number; // event id, -1 none
  query: string;
  arrows: boolean;
}

/** Read the state back from the hash's parameters (anything malformed is left at its default). */
export function parseState(p: Record<string, string>): TimelineState {
  const num = (key: string): number | null => {
    if (p[key] === undefined || p[key] === "") return null;
    const v = Number(p[key]);
    return Number.isFinite(v) ? v : null;
  };
  let t0 = num("t0");
  let t1 = num("t1");
  if (t0 === null || t1 === null || !(t1 > t0)) t0 = t1 = null;
  const sel = num("sel");
  const trace = num("trace");
  return {
    trace: trace !== null && trace >= 0 && Number.isInteger(trace) ? trace : 0,
    t0,
    t1,
    selected: sel !== null && sel >= 0 && Number.isInteger(sel) ? sel : -1,
    query: p.q ?? "",
    arrows: p.arrows !== "0",
  };
}

/** The state as hash parameters: defaults left out, times rounded to the ns. */
export function stateParams(s: TimelineState): Record<string, string | number | null> {
  return {
    trace: s.trace ? s.trace : null,
    t0: s.t0 === null ? null : Math.round(s.t0),
    t1: s.t1 === null ? null : Math.round(s.t1),
    sel: s.selected >= 0 ? s.selected : null,
    q: s.query || null,
    arrows: s.arrows ? null : 0,
  };
}
