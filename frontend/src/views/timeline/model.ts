// The trace regrouped for drawing: one "row" per lane and nesting depth, each holding its events'
// ids, starts and a running maximum of ends — so the first event visible at a time is a binary
// search away, and a frame touches only what is in the window. Lanes inside kernels (one per CTA
// and warp) sit under a header per kernel that folds them away; the layout (which lanes show, at
// what height) is redone when one folds. Also the pure parts of the view: the visible window's
// clamping, the time axis' ticks, the texts (summary, event details, group and lane labels), and
// the per-scope table of the spans inside kernels.
// A big trace comes in level of detail (lod.ts): the model is then built from an overview or from
// one window of the trace, some of its events merged blocks (`count` > 1), and its lanes take the
// depths the server says (`lane_depths`), so every window's model has the same layout.
// No DOM, no canvas: model.test.ts runs all of it under Node.
import type { Packed } from "../../data";
import { colourOf, fmt, fmtNs } from "../../format";
import type { TraceRef } from "../../types";
import { groupLanes, groupRanks, laneLabel, plural } from "./groups";
import { buildMarks, type MarkLane } from "./marks";

export { MIN_SPAN, clampWindow, niceStep, tickLabel } from "./axis";
export { median, scopeTable, type ScopeStat } from "./scopestats";
export { UNFOLDED_LANES, UNFOLDED_RANKS, groupLabel, laneLabel } from "./groups";

export const ROW_H = 16; // px per depth row
const MAX_ROWS = Math.floor(8000 / ROW_H);
export const LANE_GAP = 8; // px between lanes
export const INTRA_GAP = 2; // px between the lanes of one kernel: hundreds of them must fit
export const GROUP_H = 20; // px of a kernel's header row
export const AXIS_H = 24; // px of time axis on top
export const LABEL_W = 180; // px of lane names on the left
/** Browsers draw nothing on a canvas taller than about 16k CSS px: expanding a kernel past this
 * folds the others. */
export const MAX_HEIGHT = 15000;
const LEVELS = 256; // depths are u8

export interface Row {
  lane: number;
  depth: number;
  y: number; // top, px from the canvas top
  idx: Uint32Array; // event ids, by start
  start: Float64Array; // their starts (relative ns)
  end: Float64Array; // their ends
  maxEnd: Float64Array; // running maximum of `end`: monotone, so binary-searchable
}

export interface Lane {
  name: string; // as the trace names it (tooltips)
  label: string; // as the gutter shows it: "CTA 0 · SM 124 · warp 1" inside a kernel
  kind: string;
  group: number; // index into TimelineModel.groups; -1 outside kernels
  cta: number | null; // inside a kernel: its CTA (shades the warps of one CTA alike)
  deepest: number; // deepest level holding events
  hidden: boolean; // folded under its kernel's header
  y: number;
  height: number;
  gap: number; // px below it
  rows: Row[];
}

/** A kernel's lanes (consecutive in display order) under one header that folds them; in a job's
 * trace, a rank's lanes instead (`rank` set). */
export interface Group {
  kernel: string;
  rank?: string;
  /** A folded rank's header draws its GPU streams' outermost events here, merged into one row
   * (null: the rank ran no kernel, and the header shows its extent). */
  summary?: Row | null;
  label: string; // "three — 64 CTAs × 4 warps"
  first: number; // its first lane
  count: number; // its lanes
  expanded: boolean;
  y: number; // its header row's top
  t0: number; // its spans' extent (relative ns), drawn in the header row when folded
  t1: number;
}

export interface TimelineModel {
  ref: TraceRef;
  n: number;
  start: Float64Array; // relative to ref.start_ns (f64 keeps ns exact only for small numbers)
  dur: Float64Array;
  name: Uint32Array;
  lane: Uint16Array;
  cat: Uint8Array;
  depth: Uint8Array;
  stack: Uint32Array | null; // each event's call stack and args (ids into ref.stacks, ref.arg_sets)
  args: Uint32Array | null;
  /** Level of detail: the events each stands for (> 1: a merged block); null: all real events. */
  count: Uint32Array | null;
  merged: number; // merged blocks among the events
  events: number; // the events they stand for (n when none is merged)
  span: number; // relative end of the trace
  lanes: Lane[];
  groups: Group[];
  marks: MarkLane[]; // the steps and backward lanes on top (marks.ts); [] when the trace has none
  rows: Row[]; // rows of the shown lanes
  height: number; // canvas css height
  capped: number; // levels kept per lane when the trace is too deep to draw whole; 0: all kept
  flows: Flows;
  /** Event ids by (lane, level): level d of lane l is byLevel[levelAt[l * 256 + d] ...
   * levelAt[l * 256 + d + 1]), in start order. Rows are cut from it at each layout. */
  byLevel: Uint32Array;
  levelAt: Uint32Array;
}

/** Launch→kernel arrows, sorted by their start so the window's arrows are a binary search away. */
export interface Flows {
  n: number;
  fromLane: Uint16Array;
  toLane: Uint16Array;
  from: Float64Array;
  to: Float64Array;
  maxGap: number; // longest arrow, ns: how far before the window an arrow can start and still show
}

function array<T>(packed: Packed, key: string, Kind: { new (n: number): T }, n: number): T {
  const got = packed[key];
  return (got as unknown as T) ?? new Kind(n);
}

/** The model of a packed answer: the whole trace, or in level of detail an overview or a window of
 * it. `like`: a model of the same trace whose folds this one takes (a window's model takes the
 * overview's, so switching between them unfolds nothing). */
export function buildTimeline(ref: TraceRef, packed: Packed, like?: TimelineModel): TimelineModel {
  const rawStart = packed.start as Float64Array;
  const n = rawStart.length;
  const start = new Float64Array(n);
  for (let i = 0; i < n; i++) start[i] = rawStart[i] - ref.start_ns;
  const dur = array(packed, "dur", Float64Array, n);
  const name = array(packed, "name", Uint32Array, n);
  const lane = array(packed, "lane", Uint16Array, n);
  const cat = array(packed, "cat", Uint8Array, n);
  const depth = array(packed, "depth", Uint8Array, n);

  // Counting sort by (lane, depth); a stable pass keeps each level in start order (ids are).
  const nLanes = Math.max(ref.lanes.length, 1);
  const counts = new Uint32Array(nLanes * LEVELS);
  for (let i = 0; i < n; i++) counts[Math.min(lane[i], nLanes - 1) * LEVELS + depth[i]]++;
  const levelAt = new Uint32Array(counts.length + 1);
  for (let k = 0; k < counts.length; k++) levelAt[k + 1] = levelAt[k] + counts[k];
  const byLevel = new Uint32Array(n);
  const fill = levelAt.slice(0, counts.length);
  for (let i = 0; i < n; i++) byLevel[fill[Math.min(lane[i], nLanes - 1) * LEVELS + depth[i]]++] = i;

  const lanes: Lane[] = [];
  for (let l = 0; l < nLanes; l++) {
    let deepest = 0;
    for (let d = 0; d < LEVELS; d++) if (counts[l * LEVELS + d]) deepest = d;
    // In level of detail the server says each lane's depth: the same layout whatever was loaded.
    const said = ref.lane_depths?.[l];
    if (said !== undefined && said >= 0) deepest = Math.min(said, LEVELS - 1);
    const info = ref.lanes[l] ?? { name: `lane ${l}`, kind: "thread" };
    const intra = info.kind === "intra";
    const role = "role" in info ? info.role : undefined; // a thread's role: its label, its id on hover
    lanes.push({
      name: role ? `${role} — ${info.name}` : info.name,
      label: intra ? laneLabel(info.name, info.intra) : (role ?? info.name),
      kind: info.kind,
      group: -1,
      cta: info.intra?.cta ?? null,
      deepest,
      hidden: false,
      y: 0,
      height: 0,
      gap: intra ? INTRA_GAP : LANE_GAP,
      rows: [],
    });
  }
  const ranked = ref.lanes.some((l) => l.rank !== undefined);
  const groups = ranked ? groupRanks(ref, lanes, start, dur, lane, n) : groupLanes(ref, lanes, start, dur, lane, n);
  let span = 0;
  for (let i = 0; i < n; i++) span = Math.max(span, start[i] + Math.max(0, dur[i]));
  span = Math.max(span, ref.end_ns - ref.start_ns, 1);
  const count = (packed.count as Uint32Array | undefined) ?? null;
  let merged = 0;
  let events = n;
  if (count) for (let i = 0; i < n; i++) if (count[i] > 1) (merged++, (events += count[i] - 1));
  const m: TimelineModel = {
    ref, n, start, dur, name, lane, cat, depth, span, lanes, groups, count, merged, events, marks: buildMarks(ref),
    stack: (packed.stack as Uint32Array | undefined) ?? null, args: (packed.args as Uint32Array | undefined) ?? null,
    rows: [], height: 0, capped: 0, flows: buildFlows(ref, packed), byLevel, levelAt,
  }; // prettier-ignore
  if (like && like.groups.length === groups.length) groups.forEach((g, k) => (g.expanded = like.groups[k].expanded));
  summarise(m);
  layoutTimeline(m);
  return m;
}

/** Each rank's summary row: the outermost events of its GPU streams (its threads' where it ran no
 * kernel), merged in start order. Made once, after the levels are sorted; placed at each layout. */
function summarise(m: TimelineModel): void {
  for (const g of m.groups) {
    if (g.rank === undefined) continue;
    const own = Array.from({ length: g.count }, (_, k) => g.first + k);
    const streams = own.filter((l) => m.lanes[l].kind === "stream");
    const chosen = streams.length ? streams : own.filter((l) => m.lanes[l].kind === "thread");
    const parts = chosen.map((l) => m.byLevel.subarray(m.levelAt[l * LEVELS], m.levelAt[l * LEVELS + 1]));
    const total = parts.reduce((a, p) => a + p.length, 0);
    if (!total) continue;
    const ids = new Uint32Array(total);
    let at = 0;
    for (const p of parts) {
      ids.set(p, at);
      at += p.length;
    }
    ids.sort(); // ids are in start order
    g.summary = makeRow(chosen[0], 0, 0, ids, m.start, m.dur);
  }
}

/** Levels kept per lane so that the shown lanes' rows stay within MAX_ROWS: the most levels `c`
 * with sum(min(levels, c)) <= MAX_ROWS, so shallow lanes keep all theirs and the deep ones share
 * the rest (at least one level each); LEVELS when everything fits. */
export function levelCap(levels: number[]): number {
  let wanted = 0;
  for (const k of levels) wanted += k;
  if (wanted <= MAX_ROWS) return LEVELS;
  let lo = 1;
  let hi = LEVELS - 1;
  while (lo < hi) {
    const c = (lo + hi + 1) >>> 1;
    let rows = 0;
    for (const k of levels) rows += Math.min(k, c);
    if (rows <= MAX_ROWS) lo = c;
    else hi = c - 1;
  }
  return lo;
}

/** Place the shown lanes (and the kernels' header rows) top to bottom and cut their rows: each
 * lane keeps its first `cap` levels (levelCap), the deeper events sharing the last. Lanes folded
 * under a header get no rows and no height. */
export function layoutTimeline(m: TimelineModel): void {
  const shown = (ln: Lane): boolean => ln.group < 0 || m.groups[ln.group].expanded;
  const cap = levelCap(m.lanes.filter(shown).map((ln) => ln.deepest + 1));
  m.capped = cap < LEVELS ? cap : 0;
  m.rows = [];
  let y = AXIS_H + 4;
  for (const mark of m.marks) {
    mark.y = y;
    y += ROW_H + LANE_GAP;
  }
  m.lanes.forEach((ln, l) => {
    const group = ln.group >= 0 ? m.groups[ln.group] : null;
    if (group && group.first === l) {
      group.y = y;
      if (group.summary) group.summary.y = y + 2;
      y += GROUP_H + INTRA_GAP;
    }
    ln.hidden = !shown(ln);
    ln.rows = [];
    if (ln.hidden) {
      ln.y = group?.y ?? y;
      ln.height = 0;
    } else {
      const levels = Math.min(ln.deepest + 1, cap);
      ln.y = y;
      ln.height = levels * ROW_H;
      for (let d = 0; d < levels; d++) {
        // The last row also takes any event deeper than the lane's depth (say the server's depth
        // and its events disagree): drawn, not lost.
        const idx = levelIds(m, l, d, d === levels - 1 ? LEVELS - 1 : d);
        ln.rows.push(makeRow(l, d, y + d * ROW_H, idx, m.start, m.dur));
      }
      m.rows.push(...ln.rows);
      y += ln.height + ln.gap;
    }
    // A kernel (folded or not) leaves a lane's gap before whatever follows.
    if (group && l === group.first + group.count - 1) y += LANE_GAP - INTRA_GAP;
  });
  m.height = y;
}

/** Event ids of lane l's levels from..to, in start order (ids are in start order). */
function levelIds(m: TimelineModel, l: number, from: number, to: number): Uint32Array {
  const a = m.levelAt[l * LEVELS + from];
  const b = m.levelAt[l * LEVELS + to + 1];
  const ids = m.byLevel.subarray(a, b);
  return m.levelAt[l * LEVELS + from + 1] < b ? ids.slice().sort() : ids; // several levels: merge
}

/** The events event i of model `from` stands for: 1 for a real event, more for a merged block. */
export function countOf(m: TimelineModel, i: number): number {
  return m.count ? m.count[i] : 1;
}

/** The same event (lane, depth, start, duration, name and count alike) in model m, or -1: a
 * selection made in one level of detail's model found again in another's. */
export function sameEvent(m: TimelineModel, from: TimelineModel, i: number): number {
  if (m === from) return i;
  if (i < 0 || i >= from.n) return -1;
  const l = from.lane[i];
  const key = Math.min(l, m.lanes.length - 1) * LEVELS + from.depth[i];
  const ids = m.byLevel.subarray(m.levelAt[key], m.levelAt[key + 1]); // start order
  const t = from.start[i];
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (m.start[ids[mid]] < t) lo = mid + 1;
    else hi = mid;
  }
  for (let k = lo; k < ids.length && m.start[ids[k]] === t; k++) {
    const j = ids[k];
    if (m.lane[j] === l && m.dur[j] === from.dur[i] && m.name[j] === from.name[i] && countOf(m, j) === countOf(from, i)) return j;
  }
  return -1;
}

/** Fold or unfold a kernel's lanes. Unfolding past MAX_HEIGHT folds other kernels, the farthest
 * first, until the canvas fits again; returns the kernels folded so. */
export function setExpanded(m: TimelineModel, group: number, expanded: boolean): number[] {
  const folded: number[] = [];
  const g = m.groups[group];
  if (!g || g.expanded === expanded) return folded;
  g.expanded = expanded;
  layoutTimeline(m);
  if (!expanded) return folded;
  const others = m.groups.map((_, k) => k).filter((k) => k !== group && m.groups[k].expanded);
  others.sort((a, b) => Math.abs(b - group) - Math.abs(a - group));
  for (const k of others) {
    if (m.height <= MAX_HEIGHT) break;
    m.groups[k].expanded = false;
    folded.push(k);
    layoutTimeline(m);
  }
  return folded;
}

/** The kernel header row at canvas height y, or -1. */
export function groupAt(m: TimelineModel, y: number): number {
  return m.groups.findIndex((g) => y >= g.y && y < g.y + GROUP_H);
}

/** A span's colour: one per name, the same in every lane (kernels, scopes inside kernels, and the
 * profile's flame graph hash names alike). */
export function spanColour(name: string): string {
  return colourOf(name, 58, 64);
}

function makeRow(lane: number, depth: number, y: number, idx: Uint32Array, start: Float64Array, dur: Float64Array): Row {
  const m = idx.length;
  const s = new Float64Array(m);
  const e = new Float64Array(m);
  const maxEnd = new Float64Array(m);
  let running = -Infinity;
  for (let k = 0; k < m; k++) {
    const i = idx[k];
    s[k] = start[i];
    e[k] = start[i] + Math.max(0, dur[i]);
    running = Math.max(running, e[k]);
    maxEnd[k] = running;
  }
  return { lane, depth, y, idx, start: s, end: e, maxEnd };
}

function buildFlows(ref: TraceRef, packed: Packed): Flows {
  const from0 = (packed.flow_from_ns as Float64Array | undefined) ?? new Float64Array(0);
  const n = from0.length;
  const to0 = (packed.flow_to_ns as Float64Array | undefined) ?? new Float64Array(n);
  const fl0 = (packed.flow_from_lane as Uint16Array | undefined) ?? new Uint16Array(n);
  const tl0 = (packed.flow_to_lane as Uint16Array | undefined) ?? new Uint16Array(n);
  const order = new Uint32Array(n);
  for (let k = 0; k < n; k++) order[k] = k;
  order.sort((a, b) => from0[a] - from0[b]);
  const from = new Float64Array(n);
  const to = new Float64Array(n);
  const fromLane = new Uint16Array(n);
  const toLane = new Uint16Array(n);
  let maxGap = 0;
  for (let k = 0; k < n; k++) {
    const j = order[k];
    from[k] = from0[j] - ref.start_ns;
    to[k] = to0[j] - ref.start_ns;
    fromLane[k] = fl0[j];
    toLane[k] = tl0[j];
    maxGap = Math.max(maxGap, Math.abs(to[k] - from[k]));
  }
  return { n, fromLane, toLane, from, to, maxGap };
}

/** First index whose value is >= t, in a sorted (non-decreasing) array. */
export function lowerBound(a: Float64Array, t: number, lo = 0, hi = a.length): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The event under time t (±tol ns) in a row, the narrowest containing one first; -1 if none. */
export function eventAt(m: TimelineModel, row: Row, t: number, tol: number): number {
  let best = -1;
  let bestDist = Infinity;
  let k = lowerBound(row.maxEnd, t - tol);
  for (let steps = 0; k < row.start.length && row.start[k] <= t + tol && steps < 4096; k++, steps++) {
    const s = row.start[k];
    const e = row.end[k];
    const dist = t < s ? s - t : t > e ? t - e : 0;
    if (dist < bestDist || (dist === bestDist && dist === 0 && best >= 0 && e - s < m.dur[best])) {
      best = row.idx[k];
      bestDist = dist;
    }
  }
  return bestDist <= tol ? best : -1;
}

/** The toolbar's line about the trace: events, lanes, flows and how long it runs; in level of
 * detail, that it is drawn so and of how many events. */
export function traceSummary(ref: TraceRef): string {
  const lanes = ref.lanes.length;
  const ranks = ref.job ? `${plural(ref.job.ranks.length, "rank")} · ` : "";
  const lod = ref.lod ? ` · level of detail: ${ref.lod.events.toLocaleString("en-US")} events, drawn by the pixel` : "";
  return `${ranks}${fmt(ref.count)} events · ${lanes} lane${lanes === 1 ? "" : "s"} · ${fmt(ref.flows)} flows · ${fmtNs(ref.end_ns - ref.start_ns)}${lod}`;
}

/** Name id `k` as the timeline shows it: as `deuteron view` does (a C++ kernel's short name),
 * else as recorded; "?" out of range. */
export function shownName(ref: TraceRef, k: number): string {
  return ref.display_names?.[k] ?? ref.names[k] ?? "?";
}

/** Name id `k` demangled in full, null where that is what is shown already. */
export function fullName(ref: TraceRef, k: number): string | null {
  const full = ref.full_names?.[k];
  return full !== undefined && full !== shownName(ref, k) ? full : null;
}

/** An event's tooltip and details lines: name (shownName), category, lane (and depth), start, duration. A
 * merged block (level of detail) says how many events it stands for, what span they cover, and the
 * longest one's name. */
export function describeEvent(m: TimelineModel, i: number): string[] {
  const k = countOf(m, i);
  if (k > 1)
    return [
      `${k.toLocaleString("en-US")} events merged: zoom in to see them`,
      `longest: ${shownName(m.ref, m.name[i])}`,
      `lane: ${m.lanes[m.lane[i]]?.name ?? m.lane[i]} (depth ${m.depth[i]})`,
      `from: +${fmtNs(m.start[i], true)}`,
      `span: ${fmtNs(m.dur[i])}`,
    ];
  return [
    shownName(m.ref, m.name[i]),
    `category: ${m.ref.cats[m.cat[i]] ?? "?"}`,
    `lane: ${m.lanes[m.lane[i]]?.name ?? m.lane[i]} (depth ${m.depth[i]})`,
    `start: +${fmtNs(m.start[i], true)}`,
    `duration: ${fmtNs(m.dur[i])}`,
  ];
}
