// The profile tree in typed arrays, built once per profile: the flame graph and the tree table both
// walk it, and with 100 000 nodes per-node objects and repeated `values[c][i] ?? NaN` lookups would
// dominate the first paint. Also the pure parts of the view: the flame graph's layout and diff
// colours, the table's row order and flattening, and the texts (tooltip, metadata, pruning note).
// No DOM, no canvas: model.test.ts runs all of it under Node.
import { fmt, fmtNs } from "../../format";
import type { ProfileData } from "../../types";
import { matchingNodes } from "./filter";
import { buildStalls, stallSummary, type StallModel } from "./stalls";

export interface ProfileModel {
  data: ProfileData;
  n: number;
  parent: Int32Array;
  depth: Int32Array;
  maxDepth: number;
  /** Children in CSR form (index order): children of i are kids[kidStart[i] .. kidStart[i + 1]). */
  kidStart: Int32Array;
  kids: Int32Array;
  /** Nodes in i's subtree, i included: how much a culled rectangle hides. */
  subtree: Int32Array;
  /** vals[column][node], NaN where the file has null. */
  vals: Float64Array[];
  /** The base profile's values in a diff, else null. */
  base: Float64Array[] | null;
  /** new / base of the primary column (NaN where either side is missing) — diffs only. */
  ratio: Float64Array | null;
  /** 1 for nodes only in the base (all values null, some base value present). */
  removed: Uint8Array;
  /** A sampled profile's samples by stall reason (stalls.ts), else null. */
  stalls: StallModel | null;
}

function toFloat(column: (number | null)[], n: number): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const v = column[i];
    out[i] = v === null || v === undefined ? NaN : v;
  }
  return out;
}

export function buildModel(data: ProfileData): ProfileModel {
  const n = data.parent.length;
  const parent = Int32Array.from(data.parent);
  const depth = new Int32Array(n);
  const count = new Int32Array(n + 1);
  let maxDepth = 0;
  // Parents come before their children, so one forward pass gives depths and child counts.
  for (let i = 1; i < n; i++) {
    const p = parent[i];
    depth[i] = depth[p] + 1;
    if (depth[i] > maxDepth) maxDepth = depth[i];
    count[p + 1]++;
  }
  const kidStart = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) kidStart[i + 1] = kidStart[i] + count[i + 1];
  const fill = kidStart.slice(0, n);
  const kids = new Int32Array(Math.max(0, n - 1));
  for (let i = 1; i < n; i++) kids[fill[parent[i]]++] = i;
  const subtree = new Int32Array(n).fill(1);
  for (let i = n - 1; i > 0; i--) subtree[parent[i]] += subtree[i];

  const vals = data.values.map((c) => toFloat(c, n));
  const base = data.base ? data.base.values.map((c) => toFloat(c, n)) : null;
  const removed = new Uint8Array(n);
  let ratio: Float64Array | null = null;
  if (base) {
    for (let i = 0; i < n; i++) {
      let anyNew = false;
      let anyBase = false;
      for (const c of vals) if (!Number.isNaN(c[i])) anyNew = true;
      for (const c of base) if (!Number.isNaN(c[i])) anyBase = true;
      removed[i] = !anyNew && anyBase ? 1 : 0;
    }
    ratio = new Float64Array(n);
    const a = vals[data.primary];
    const b = base[data.primary];
    for (let i = 0; i < n; i++) ratio[i] = b[i] > 0 ? a[i] / b[i] : NaN;
  }
  return { data, n, parent, depth, maxDepth, kidStart, kids, subtree, vals, base, ratio, removed, stalls: buildStalls(data, n) };
}

export function nameOf(m: ProfileModel, i: number): string {
  return m.data.names[m.data.name_id[i]] ?? "?";
}

/** The name demangled in full and as recorded, where they differ from the shown one (a C++
 * kernel's short name); empty for names shown as they are. */
export function longNamesOf(m: ProfileModel, i: number): { full: string | null; raw: string | null } {
  const k = m.data.name_id[i];
  const shown = m.data.names[k];
  const full = m.data.full_names?.[k] ?? null;
  const raw = m.data.raw_names?.[k] ?? null;
  return { full: full && full !== shown ? full : null, raw: raw && raw !== shown && raw !== full ? raw : null };
}

/** A name's hover text: the shown name, or the full demangled one and the recorded one. */
export function nameTitle(m: ProfileModel, i: number): string {
  const { full, raw } = longNamesOf(m, i);
  return [full ?? nameOf(m, i), raw].filter(Boolean).join("\n") + ` (${typeOf(m, i)})`;
}

export function typeOf(m: ProfileModel, i: number): string {
  return m.data.types[m.data.type_id[i]] ?? "?";
}

/** By key, descending (the order both the flame graph and the table start from) or ascending;
 * NaN last either way (a sort toggled to ascending should not bring blanks up), ties by index. */
export function byKey(key: Float64Array, descending = true): (a: number, b: number) => number {
  const sign = descending ? -1 : 1;
  return (a, b) => {
    const x = key[a];
    const y = key[b];
    if (Number.isNaN(x)) return Number.isNaN(y) ? a - b : 1;
    if (Number.isNaN(y)) return -1;
    return sign * (x - y) || a - b;
  };
}

/** A copy of the CSR children with each sibling group sorted. */
export function sortedKids(m: ProfileModel, compare: (a: number, b: number) => number): Int32Array {
  const out = m.kids.slice();
  for (let i = 0; i < m.n; i++) {
    const s = m.kidStart[i];
    const e = m.kidStart[i + 1];
    if (e - s > 1) out.subarray(s, e).sort(compare);
  }
  return out;
}

/** Nodes whose name matches, by the filter's rules (filter.ts). Throws on a bad regex. */
export function matchNodes(m: ProfileModel, pattern: string): Uint8Array {
  return matchingNodes(m, pattern);
}

/** Matching nodes plus their ancestors (what a filtered tree shows). */
export function withAncestors(m: ProfileModel, match: Uint8Array): Uint8Array {
  const keep = match.slice();
  for (let i = m.n - 1; i > 0; i--) if (keep[i]) keep[m.parent[i]] = 1;
  return keep;
}

/** Is `node` inside `top`'s subtree? (walks up; depth bounds the walk). */
export function isUnder(m: ProfileModel, node: number, top: number): boolean {
  while (node >= 0 && m.depth[node] >= m.depth[top]) {
    if (node === top) return true;
    node = m.parent[node];
  }
  return false;
}

/** The flame graph's geometry for one column, in value units: each node's width (its value, NaN
 * and negatives as 0; a node without a value, as ROOT often is, as wide as its children together)
 * and left edge (children packed left to right from the parent's left, largest first), and how many
 * frames have children wider than themselves (0 for every file Deuteron's views derive). */
export function flameLayout(m: ProfileModel, column: number): { width: Float64Array; x0: Float64Array; overflowing: number } {
  const src = m.vals[column];
  const w = new Float64Array(m.n);
  const sum = new Float64Array(m.n);
  let overflowing = 0;
  for (let i = m.n - 1; i >= 0; i--) {
    w[i] = Number.isNaN(src[i]) ? sum[i] : Math.max(0, src[i]);
    // Children wider than their frame (beyond the six digits values travel with) would be drawn
    // past its right edge: a file that breaks the rule that a frame covers its children.
    if (sum[i] > w[i] * (1 + 1e-5) + 1e-12) overflowing++;
    if (i > 0) sum[m.parent[i]] += w[i];
  }
  const kids = sortedKids(m, byKey(w));
  const x0 = new Float64Array(m.n);
  for (let i = 0; i < m.n; i++) {
    let x = x0[i];
    for (let k = m.kidStart[i]; k < m.kidStart[i + 1]; k++) {
      const c = kids[k];
      x0[c] = x;
      x += w[c];
    }
  }
  return { width: w, x0, overflowing };
}

/** Red for slower (ratio > 1), green for faster; intensity from |log ratio| (×4 saturates). */
export function diffColour(now: number, base: number): string {
  if (!(base > 0)) return now > 0 ? "hsl(350 80% 58%)" : "hsl(0 0% 86%)"; // added: red
  const ratio = now / base;
  if (!(ratio > 0)) return "hsl(130 55% 55%)"; // gone to zero: fully faster
  const t = Math.min(1, Math.abs(Math.log(ratio)) / Math.log(4));
  if (t < 0.02) return "hsl(0 0% 86%)";
  const hue = ratio > 1 ? 350 : 130;
  const sat = Math.round(25 + 55 * t);
  const light = Math.round(88 - 30 * t);
  return `hsl(${hue} ${sat}% ${light}%)`;
}

function nanToNull(v: number): number | null {
  return Number.isNaN(v) ? null : v;
}

/** A flame rectangle's tooltip: name, type, then every column (with the base and ratio in a diff). */
export function describeNode(m: ProfileModel, i: number): string {
  const { full } = longNamesOf(m, i);
  const lines = [nameOf(m, i), ...(full ? [full] : []), `type: ${typeOf(m, i)}`];
  m.data.columns.forEach((label, c) => {
    let line = `${label}: ${fmt(nanToNull(m.vals[c][i]))}`;
    if (m.base) {
      const b = m.base[c][i];
      const a = m.vals[c][i];
      line += `   base ${fmt(nanToNull(b))}`;
      if (Number.isNaN(b) && !Number.isNaN(a)) line += "  (added)";
      else if (b > 0 && !Number.isNaN(a)) line += `  ×${fmt(a / b)}`;
    }
    lines.push(line);
  });
  // A sampled frame: why its warps were where they were (a frame without samples says it has none).
  const sampled = m.data.columns.indexOf("num_samples");
  if (m.stalls && (m.stalls.total[i] > 0 || (sampled >= 0 && m.vals[sampled][i] > 0))) lines.push(stallSummary(m.stalls, i));
  return lines.join("\n");
}

/** The table's ratio cell. */
export function ratioText(v: number): string {
  if (Number.isNaN(v)) return "–";
  return `×${fmt(v)}`;
}

/** Node i's children in the table's order: by a column's key (see byKey), or by name when `key`
 * is null (ties by index; `descending` reverses the names too). */
export function childrenInOrder(m: ProfileModel, i: number, key: Float64Array | null, descending: boolean): Int32Array {
  let out = m.kids.slice(m.kidStart[i], m.kidStart[i + 1]);
  if (key) out.sort(byKey(key, descending));
  else {
    const names = out.length > 1 ? Array.from(out, (k) => nameOf(m, k)) : [];
    const order = Array.from(out.keys()).sort((a, b) => (names[a] < names[b] ? -1 : names[a] > names[b] ? 1 : a - b) * (descending ? -1 : 1));
    out = Int32Array.from(order, (k) => out[k]);
  }
  return out;
}

/** The table's rows: the tree flattened depth first from ROOT, into open nodes only (`expanded`)
 * down to `depthLimit`, skipping nodes a filter does not keep (`keep`, null: all). */
export function visibleRows(
  m: ProfileModel,
  expanded: Uint8Array,
  keep: Uint8Array | null,
  depthLimit: number,
  kidsOf: (i: number) => Int32Array,
): Int32Array {
  const out = new Int32Array(m.n);
  let count = 0;
  const stack = [0];
  while (stack.length) {
    const i = stack.pop()!;
    if (keep && !keep[i]) continue;
    out[count++] = i;
    if (!expanded[i] || m.depth[i] >= depthLimit) continue;
    const kids = kidsOf(i);
    for (let k = kids.length - 1; k >= 0; k--) stack.push(kids[k]);
  }
  return out.subarray(0, count);
}

/** The depth box's text as a limit: empty means none (Infinity); negatives count as 0. */
export function parseDepthLimit(text: string): number {
  const v = text === "" ? Infinity : Math.max(0, Math.floor(Number(text)));
  return Number.isFinite(v) ? v : Infinity;
}

/** Epoch seconds as a local date and time, "2026-11-23 14:05:09" (a raw 1795641574.838 means
 * nothing to a reader). */
export function localDateTime(epochSeconds: number): string {
  const d = new Date(epochSeconds * 1000);
  const two = (n: number): string => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/** A duration in seconds for people: µs/ms/s to 3 digits, minutes and hours past a minute. */
export function humanDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return fmt(seconds);
  const abs = Math.abs(seconds);
  if (abs < 60) return fmtNs(seconds * 1e9);
  const sign = seconds < 0 ? "-" : "";
  const total = Math.round(abs);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  return h ? `${sign}${h} h ${m} min` : `${sign}${m} min ${s} s`;
}

// Metadata keys whose numbers are instants (epoch seconds) or durations, by their names' shape.
const INSTANT_KEY = /(^|_)(time|timestamp|started|ended|date)$|_at$/i;
const DURATION_UNIT: [RegExp, number][] = [
  [/(^|_)ns$/i, 1e-9],
  [/(^|_)us$/i, 1e-6],
  [/(^|_)ms$/i, 1e-3],
  [/(^|_)(s|sec|seconds|duration|elapsed)$/i, 1],
];
const EPOCH_MIN = 1e8; // 1973: a smaller "time" is a duration or a count, not an instant
const EPOCH_MAX = 1e11; // year 5138: a larger one is not seconds

/** One metadata value as the card shows it: instants as local date-times, durations with a unit,
 * objects as JSON, the rest as written. */
export function metaValue(key: string, value: unknown): string {
  if (typeof value === "number" && Number.isFinite(value)) {
    if (INSTANT_KEY.test(key) && value >= EPOCH_MIN && value < EPOCH_MAX) return localDateTime(value);
    for (const [re, toSeconds] of DURATION_UNIT) if (re.test(key)) return humanDuration(value * toSeconds);
    return String(value);
  }
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

/** The metadata card's rows: source, base, the file's metadata (objects as JSON, instants as
 * local date-times, durations with units, empty values left out; the run's duration after its
 * end time) and the node count. */
export function metaRows(data: ProfileData): [string, string][] {
  const rows: [string, string][] = [];
  const add = (key: string, value: unknown): void => {
    if (value === null || value === undefined || value === "") return;
    rows.push([key, metaValue(key, value)]);
  };
  add("source", data.source);
  if (data.base) add("base", data.base.source);
  const meta = data.metadata;
  for (const [key, value] of Object.entries(meta)) {
    add(key, value);
    const start = meta.start_time;
    if (key === "end_time" && typeof value === "number" && typeof start === "number" && value >= start) {
      rows.push(["duration", humanDuration(value - start)]);
    }
  }
  const nodes = data.parent.length;
  add("nodes", fmt(nodes));
  return rows;
}

/** What pruning left out, or null when nothing was. */
export function prunedText(data: ProfileData): string | null {
  if (!(data.pruned_nodes > 0)) return null;
  return `${fmt(data.total_nodes - data.pruned_nodes)} of ${fmt(data.total_nodes)} nodes shown (below ${fmt(data.threshold * 100)}% left out)`;
}

/** Why the flame graph is empty for a column, or null when some frame has a value above 0: with
 * no value anywhere the graph would be a blank box, which reads as a broken page. */
export function columnNote(m: ProfileModel, column: number): string | null {
  const label = m.data.columns[column] ?? "?";
  const values = m.vals[column];
  let any = false;
  for (let i = 0; i < m.n; i++) {
    if (values[i] > 0) return null;
    if (!Number.isNaN(values[i])) any = true;
  }
  if (any) return `every frame has ${label} 0: nothing to draw; pick another width column`;
  let why = "";
  if (label === "util") {
    const devices = Object.keys(m.data.metadata).some((k) => k.startsWith("device "));
    why = devices
      ? ": util needs a kernel's flops or bytes, its time and its device, and no kernel has all three"
      : ": the profile has no device table (util needs each kernel's GPU; record on a GPU)";
  } else if (label === "tflop/s" || label === "gbyte/s") {
    why = `: no kernel reported its ${label === "tflop/s" ? "flops" : "bytes"}`;
  }
  return `no frame has ${label}${why}; pick another width column`;
}

/** The filter's status line: how many frames match, or that none does. */
export function matchText(pattern: string, matches: number): string {
  if (matches === 0) return `no frame matches '${pattern}'`;
  return `${fmt(matches)} frame${matches === 1 ? "" : "s"} match${matches === 1 ? "es" : ""} '${pattern}'`;
}

/** The ratio cell's colour (new / base): red slower, green faster, like the flame graph's diff
 * colours; null where there is no ratio. */
export function ratioColour(ratio: number): string | null {
  if (Number.isNaN(ratio)) return null;
  return diffColour(ratio, 1);
}

/** The profile view's state as the address spells it (`#profile?flat=1&frame=gemm`,
 * `#profile?zoom=12&sel=14`): which profile of several, the flat toggle and the name picked
 * there, the flame graph's zoomed frame (0: ROOT) and the picked frame (-1: none), as node ids of
 * that profile's tree, so a copied link opens the same place of the same files. */
export interface ProfileState {
  profile: number;
  flat: boolean;
  frame: string | null;
  zoom: number;
  sel: number;
}

/** Read the state from the hash's parameters; anything malformed is left at its default. */
export function parseProfileState(p: Record<string, string>): ProfileState {
  const id = (key: string, none: number): number => {
    const v = p[key] === undefined || p[key] === "" ? NaN : Number(p[key]);
    return Number.isInteger(v) && v >= 0 ? v : none;
  };
  return { profile: id("profile", 0), flat: p.flat === "1", frame: p.frame || null, zoom: id("zoom", 0), sel: id("sel", -1) };
}

/** The state as hash parameters, defaults left out; the picked name only while the flat view
 * shows it. */
export function profileParams(s: ProfileState): Record<string, string | number | null> {
  return {
    profile: s.profile > 0 ? s.profile : null,
    flat: s.flat ? 1 : null,
    frame: s.flat ? s.frame : null,
    zoom: s.zoom > 0 ? s.zoom : null,
    sel: s.sel > 0 ? s.sel : null,
  };
}
