// The trace regrouped for drawing: one "row" per lane and nesting depth, each holding its events'
// ids, starts and a running maximum of ends — so the first event visible at a time is a binary
// search away, and a frame touches only what is in the window. Lanes inside kernels (one per CTA
// and warp) sit under a header per kernel that folds them away; the layout (which lanes show, at
// what height) is redone when one folds. Also the pure parts of the view: the visible window's
// clamping, the time axis' ticks, the texts (summary, event details, group and lane labels), and
// the per-scope table of the spans inside kernels.
// No DOM, no canvas: model.test.ts runs all of it under Node.
import type { Packed } from "../../data";
import { colourOf, fmt, fmtNs } from "../../format";
import type { IntraLane, TraceRef } from "../../types";

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
/** Past this many lanes inside kernels, only the first kernel's lanes start unfolded. */
export const UNFOLDED_LANES = 64;
/** Past this many ranks in a job's trace, ranks start folded, each a summary row. */
export const UNFOLDED_RANKS = 16;
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
  span: number; // relative end of the trace
  lanes: Lane[];
  groups: Group[];
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

export function buildTimeline(ref: TraceRef, packed: Packed): TimelineModel {
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
    const info = ref.lanes[l] ?? { name: `lane ${l}`, kind: "thread" };
    const intra = info.kind === "intra";
    lanes.push({
      name: info.name,
      label: intra ? laneLabel(info.name, info.intra) : info.name,
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
  const m: TimelineModel = {
    ref, n, start, dur, name, lane, cat, depth, span, lanes, groups,
    stack: (packed.stack as Uint32Array | undefined) ?? null, args: (packed.args as Uint32Array | undefined) ?? null,
    rows: [], height: 0, capped: 0, flows: buildFlows(ref, packed), byLevel, levelAt,
  }; // prettier-ignore
  summarise(m);
  layoutTimeline(m);
  return m;
}

/** An intra-kernel lane's short label: "CTA 0 · SM 124 · warp 1" on a GPU, "program 3" in the
 * interpreter; its whole name when the name said nothing of either. */
export function laneLabel(name: string, intra: IntraLane | undefined): string {
  if (!intra || !intra.unit || intra.index === null) return name;
  const unit = `${intra.unit} ${intra.index}`;
  if (intra.cta === null) return unit;
  return [`CTA ${intra.cta}`, intra.sm === null ? null : `SM ${intra.sm}`, unit].filter((t) => t !== null).join(" · ");
}

const plural = (k: number, word: string): string => `${fmt(k)} ${word}${k === 1 ? "" : "s"}`;

/** A kernel's header: "three — 64 CTAs × 4 warps" (distinct CTAs and unit numbers among its
 * lanes), "scoped_add — 8 programs" in the interpreter, "k — 3 lanes" when names said neither. */
export function groupLabel(kernel: string, intra: (IntraLane | undefined)[]): string {
  const ctas = new Set<number>();
  const units = new Set<number>();
  let unit = "";
  for (const it of intra) {
    if (it?.cta !== null && it?.cta !== undefined) ctas.add(it.cta);
    if (it?.index !== null && it?.index !== undefined && it.unit) {
      units.add(it.index);
      unit ||= it.unit;
    }
  }
  if (!unit) return `${kernel} — ${plural(intra.length, "lane")}`;
  if (!ctas.size) return `${kernel} — ${plural(units.size, unit)}`;
  return `${kernel} — ${plural(ctas.size, "CTA")} × ${plural(units.size, unit)}`;
}

/** Consecutive intra lanes of one kernel make a group; the first is unfolded, the others too
 * unless there are more than UNFOLDED_LANES such lanes in all. */
function groupLanes(ref: TraceRef, lanes: Lane[], start: Float64Array, dur: Float64Array, lane: Uint16Array, n: number): Group[] {
  const groups: Group[] = [];
  let intraLanes = 0;
  lanes.forEach((ln, l) => {
    if (ln.kind !== "intra") return;
    intraLanes++;
    const kernel = ref.lanes[l]?.intra?.kernel ?? ln.name;
    const last = groups[groups.length - 1];
    if (last && last.kernel === kernel && last.first + last.count === l) last.count++;
    else groups.push({ kernel, label: "", first: l, count: 1, expanded: true, y: 0, t0: Infinity, t1: -Infinity });
    ln.group = groups.length - 1;
  });
  for (const g of groups) g.label = groupLabel(g.kernel, ref.lanes.slice(g.first, g.first + g.count).map((x) => x.intra));
  if (intraLanes > UNFOLDED_LANES) groups.forEach((g, k) => (g.expanded = k === 0));
  for (let i = 0; i < n; i++) {
    const g = lanes[Math.min(lane[i], lanes.length - 1)].group;
    if (g < 0) continue;
    groups[g].t0 = Math.min(groups[g].t0, start[i]);
    groups[g].t1 = Math.max(groups[g].t1, start[i] + Math.max(0, dur[i]));
  }
  return groups;
}

/** A job's trace: each rank's lanes (consecutive) under one header, "rank 3 — 2 GPU streams, 1
 * thread"; all unfolded up to UNFOLDED_RANKS ranks, else folded to one summary row each. */
function groupRanks(ref: TraceRef, lanes: Lane[], start: Float64Array, dur: Float64Array, lane: Uint16Array, n: number): Group[] {
  const groups: Group[] = [];
  lanes.forEach((ln, l) => {
    const rank = ref.lanes[l]?.rank ?? "?";
    const last = groups[groups.length - 1];
    if (last && last.rank === rank) last.count++;
    else groups.push({ kernel: `rank ${rank}`, rank, label: "", first: l, count: 1, expanded: true, y: 0, t0: Infinity, t1: -Infinity, summary: null });
    ln.group = groups.length - 1;
    ln.label = ln.label.startsWith(`rank ${rank} · `) ? ln.label.slice(`rank ${rank} · `.length) : ln.label;
  });
  for (const g of groups) {
    const kinds = ref.lanes.slice(g.first, g.first + g.count).map((x) => x.kind);
    const streams = kinds.filter((k) => k === "stream").length;
    const threads = kinds.filter((k) => k === "thread").length;
    const parts = [streams ? plural(streams, "GPU stream") : "", threads ? plural(threads, "thread") : ""].filter(Boolean);
    g.label = `rank ${g.rank} — ${parts.join(", ") || plural(g.count, "lane")}`;
    if (groups.length > UNFOLDED_RANKS) g.expanded = false;
  }
  for (let i = 0; i < n; i++) {
    const g = groups[lanes[Math.min(lane[i], lanes.length - 1)].group];
    g.t0 = Math.min(g.t0, start[i]);
    g.t1 = Math.max(g.t1, start[i] + Math.max(0, dur[i]));
  }
  return groups;
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
        const idx = levelIds(m, l, d, d === levels - 1 ? ln.deepest : d);
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
  return to > from ? ids.slice().sort() : ids;
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

/** A tick step near `raw`, rounded up to 1, 2 or 5 × 10^k (k may be negative; raw ≤ 1e-9 counts
 * as 1e-9). */
export function niceStep(raw: number): number {
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1e-9))));
  const f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

/** A tick's time with as many decimals as the tick step needs: deep in a long trace the ticks
 * read 127.055, 127.060 ms instead of "127 ms" five times. */
export function tickLabel(t: number, step: number, [size, name]: [number, string]): string {
  const decimals = Math.min(9, Math.max(0, Math.ceil(-Math.log10(step / size) - 1e-9)));
  return `${(t / size).toFixed(decimals)} ${name}`;
}

export const MIN_SPAN = 100; // ns: the deepest zoom

/** The visible window [t0, t1) asked for, clamped: at least MIN_SPAN wide, at most the trace's
 * span plus 5%, and kept over the trace (at most half a window of slack on either side; a window
 * wider than the trace starts at or before 0 and ends at or after its end). */
export function clampWindow(t0: number, t1: number, full: number): [number, number] {
  let span = Math.min(Math.max(t1 - t0, MIN_SPAN), full * 1.05);
  if (!(span > 0)) span = 1;
  let start = t0;
  start = Math.max(Math.min(start, full - span * 0.5), -span * 0.5);
  if (span >= full) start = Math.min(Math.max(start, full - span), 0);
  return [start, start + span];
}

/** The toolbar's line about the trace: events, lanes, flows and how long it runs. */
export function traceSummary(ref: TraceRef): string {
  const lanes = ref.lanes.length;
  const ranks = ref.job ? `${plural(ref.job.ranks.length, "rank")} · ` : "";
  return `${ranks}${fmt(ref.count)} events · ${lanes} lane${lanes === 1 ? "" : "s"} · ${fmt(ref.flows)} flows · ${fmtNs(ref.end_ns - ref.start_ns)}`;
}

/** An event's tooltip and details lines: name, category, lane (and depth), start, duration. */
export function describeEvent(m: TimelineModel, i: number): string[] {
  return [
    m.ref.names[m.name[i]] ?? "?",
    `category: ${m.ref.cats[m.cat[i]] ?? "?"}`,
    `lane: ${m.lanes[m.lane[i]]?.name ?? m.lane[i]} (depth ${m.depth[i]})`,
    `start: +${fmtNs(m.start[i], true)}`,
    `duration: ${fmtNs(m.dur[i])}`,
  ];
}

/** One scope of one kernel over all its spans inside the kernel (every CTA and warp, or program):
 * how long one instance takes (min, median, max; imbalance = max / median, null when the median is
 * 0), and how the time it takes per lane spreads over the lanes that ran it. */
export interface ScopeStat {
  kernel: string;
  scope: string;
  nameId: number;
  instances: number;
  lanes: number; // lanes that ran it
  total: number; // ns, all instances
  min: number;
  median: number;
  max: number;
  imbalance: number | null;
  laneMin: number; // a lane's total time in the scope, ns
  laneMedian: number;
  laneMax: number;
}

/** The median of some numbers (the mean of the middle two for an even count); NaN for none. */
export function median(values: ArrayLike<number>): number {
  const sorted = Float64Array.from(values).sort();
  const k = sorted.length;
  if (!k) return NaN;
  return k % 2 ? sorted[(k - 1) >> 1] : (sorted[k / 2 - 1] + sorted[k / 2]) / 2;
}

/** The per-scope table of the spans inside kernels (category "intra" on intra lanes), one row per
 * (kernel, scope name): kernels in lane order, their scopes by first start (program order, for a
 * kernel run the usual way). Empty when the trace holds no such span. A scope nested in itself
 * counts each instance, so its lane totals count the inner time twice. */
export function scopeTable(m: TimelineModel): ScopeStat[] {
  const intraCat = m.ref.cats.indexOf("intra");
  if (intraCat < 0) return [];
  // Per (group's kernel, name): durations, first start, and a total per lane.
  const kernelOf = new Map<string, number>();
  for (const g of m.groups) if (!kernelOf.has(g.kernel)) kernelOf.set(g.kernel, kernelOf.size);
  const acc = new Map<number, { kernel: string; nameId: number; durs: number[]; first: number; perLane: Map<number, number> }>();
  const nNames = Math.max(m.ref.names.length, 1);
  for (let i = 0; i < m.n; i++) {
    if (m.cat[i] !== intraCat) continue;
    const l = Math.min(m.lane[i], m.lanes.length - 1);
    const g = m.lanes[l]?.group ?? -1;
    if (g < 0) continue;
    const kernel = m.groups[g].kernel;
    const key = (kernelOf.get(kernel) ?? 0) * nNames + m.name[i];
    let a = acc.get(key);
    if (!a) acc.set(key, (a = { kernel, nameId: m.name[i], durs: [], first: m.start[i], perLane: new Map() }));
    const d = Math.max(0, m.dur[i]);
    a.durs.push(d);
    a.perLane.set(l, (a.perLane.get(l) ?? 0) + d);
  }
  const rows = [...acc.entries()].sort(([ka, a], [kb, b]) => Math.floor(ka / nNames) - Math.floor(kb / nNames) || a.first - b.first || a.nameId - b.nameId);
  return rows.map(([, a]) => {
    const durs = Float64Array.from(a.durs).sort();
    const perLane = Float64Array.from(a.perLane.values()).sort();
    const mid = median(durs);
    let total = 0;
    for (const d of durs) total += d;
    return {
      kernel: a.kernel,
      scope: m.ref.names[a.nameId] ?? "?",
      nameId: a.nameId,
      instances: durs.length,
      lanes: perLane.length,
      total,
      min: durs[0],
      median: mid,
      max: durs[durs.length - 1],
      imbalance: mid > 0 ? durs[durs.length - 1] / mid : null,
      laneMin: perLane[0],
      laneMedian: median(perLane),
      laneMax: perLane[perLane.length - 1],
    };
  });
}
