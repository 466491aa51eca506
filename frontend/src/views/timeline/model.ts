// The trace regrouped for drawing: one "row" per lane and nesting depth, each holding its events'
// ids, starts and a running maximum of ends — so the first event visible at a time is a binary
// search away, and a frame touches only what is in the window. Also the pure parts of the view:
// the visible window's clamping, the time axis' ticks, and the texts (summary, event details).
// No DOM, no canvas: model.test.ts runs all of it under Node.
import type { Packed } from "../../data";
import { fmt, fmtNs } from "../../format";
import type { TraceRef } from "../../types";

export const ROW_H = 16; // px per depth row
const MAX_ROWS = Math.floor(8000 / ROW_H);
export const LANE_GAP = 8; // px between lanes
export const AXIS_H = 24; // px of time axis on top
export const LABEL_W = 180; // px of lane names on the left

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
  name: string;
  kind: string;
  y: number;
  height: number;
  rows: Row[];
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
  span: number; // relative end of the trace
  lanes: Lane[];
  rows: Row[];
  height: number; // canvas css height
  capped: number; // levels kept per lane when the trace is too deep to draw whole; 0: all kept
  flows: Flows;
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

  // Counting sort by (lane, depth); a stable pass keeps each row in start order.
  const nLanes = Math.max(ref.lanes.length, 1);
  // Browsers draw nothing on a canvas taller than about 16k CSS px: past MAX_ROWS rows in all,
  // each lane keeps its first `cap` levels and the deeper events share the last one.
  const deepestOf = new Uint8Array(nLanes);
  for (let i = 0; i < n; i++) {
    const l = Math.min(lane[i], nLanes - 1);
    if (depth[i] > deepestOf[l]) deepestOf[l] = depth[i];
  }
  let rowsWanted = 0;
  for (let l = 0; l < nLanes; l++) rowsWanted += deepestOf[l] + 1;
  const cap = rowsWanted > MAX_ROWS ? Math.max(1, Math.floor(MAX_ROWS / nLanes)) : 256;
  const level = (i: number): number => Math.min(depth[i], cap - 1);
  const counts = new Uint32Array(nLanes * 256);
  for (let i = 0; i < n; i++) counts[Math.min(lane[i], nLanes - 1) * 256 + level(i)]++;
  const offsets = new Uint32Array(counts.length + 1);
  for (let k = 0; k < counts.length; k++) offsets[k + 1] = offsets[k] + counts[k];
  const order = new Uint32Array(n);
  const fill = offsets.slice(0, counts.length);
  for (let i = 0; i < n; i++) order[fill[Math.min(lane[i], nLanes - 1) * 256 + level(i)]++] = i;

  const lanes: Lane[] = [];
  const rows: Row[] = [];
  let y = AXIS_H + 4;
  for (let l = 0; l < nLanes; l++) {
    let deepest = 0;
    for (let d = 0; d < 256; d++) if (counts[l * 256 + d]) deepest = d;
    const info = ref.lanes[l] ?? { name: `lane ${l}`, kind: "thread" };
    const lane: Lane = { name: info.name, kind: info.kind, y, height: (deepest + 1) * ROW_H, rows: [] };
    for (let d = 0; d <= deepest; d++) {
      const idx = order.subarray(offsets[l * 256 + d], offsets[l * 256 + d + 1]);
      const row = makeRow(l, d, y + d * ROW_H, idx, start, dur);
      lane.rows.push(row);
      rows.push(row);
    }
    lanes.push(lane);
    y += lane.height + LANE_GAP;
  }
  let span = 0;
  for (const row of rows) if (row.maxEnd.length) span = Math.max(span, row.maxEnd[row.maxEnd.length - 1]);
  span = Math.max(span, ref.end_ns - ref.start_ns, 1);
  const capped = cap < 256 ? cap : 0;
  return { ref, n, start, dur, name, lane, cat, depth, span, lanes, rows, height: y, capped, flows: buildFlows(ref, packed) };
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
  return `${fmt(ref.count)} events · ${lanes} lane${lanes === 1 ? "" : "s"} · ${fmt(ref.flows)} flows · ${fmtNs(ref.end_ns - ref.start_ns)}`;
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
