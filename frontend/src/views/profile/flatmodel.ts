// The flat view's pure part (flat.ts draws it, flat.test.ts runs this under Node): every frame name
// summed over the tree, on one column, as deuteron/view/flat.py sums it; in a diff, each name's sums
// in both profiles, their ratio and change, so "which kernels got slower overall" has an answer the
// tree table (whose sort orders siblings only) cannot give; a name's calls and average (where the
// profile records calls); and a name's callers and callees, and every call site above it (the
// inverted caller tree).
import type { ProfileModel } from "./model";

/** One frame name of the flat view, summed over the tree (deuteron/view/flat.py's semantics, on
 * one column): `total` counts each outermost place's inclusive value once (a name nested in
 * itself is not counted twice), `self` what its places hold themselves (their value less their
 * children's, at least 0), `places` how many frames have the name. */
export interface FlatRow {
  nameId: number;
  name: string;
  total: number;
  self: number;
  places: number;
  /** Calls of the name over all its places (an op's calls, a kernel's launches), NaN where none
   * of its frames records calls; `average` is total / calls (NaN without calls). */
  calls: number;
  average: number;
}

/** A name of a diff (`--base`): `total`, `self` and `places` are the new profile's (NaN where the
 * name is only in the base), `base` the base profile's total (NaN where the name is only in the new
 * one), `ratio` total / base (NaN unless both have it and the base is above 0, as the table's
 * ratio), `change` total - base (a side without the name as 0), `only` which side alone has it. */
export interface FlatDiffRow extends FlatRow {
  base: number;
  ratio: number;
  change: number;
  only: "new" | "base" | null;
}

/** Rates, averages and utilisations do not add up over places: the flat view sums these
 * columns only. */
export function isAdditive(label: string): boolean {
  return !/\/s$|^avg|util|ratio/.test(label);
}

/** Whether each node is the outermost frame of its name on its path (no ancestor has the name).
 * One walk of the tree, keeping per-name counts of the path; the same for both sides of a diff,
 * whose tree is the union of both. */
function outermostPlaces(m: ProfileModel): Uint8Array {
  const outermost = new Uint8Array(m.n);
  const onPath = new Int32Array(m.data.names.length);
  const ids = m.data.name_id;
  // Depth-first: a node is pushed once to enter and once (negated) to leave.
  const stack: number[] = [0];
  while (stack.length) {
    const x = stack.pop()!;
    if (x < 0) {
      onPath[ids[~x]]--;
      continue;
    }
    outermost[x] = onPath[ids[x]] === 0 ? 1 : 0;
    onPath[ids[x]]++;
    stack.push(~x);
    for (let k = m.kidStart[x]; k < m.kidStart[x + 1]; k++) stack.push(m.kids[k]);
  }
  return outermost;
}

/** A column's values with NaN as 0. */
function zeroed(src: Float64Array): Float64Array {
  return src.map((x) => (Number.isNaN(x) ? 0 : x));
}

/** Which nodes each side of a diff has: the new profile all but the removed ones (only in the
 * base), the base all but the added ones (a value in the new profile, none in the base). */
function presence(m: ProfileModel): { inNew: Uint8Array; inBase: Uint8Array } {
  const inNew = m.removed.map((r) => 1 - r);
  const inBase = new Uint8Array(m.n).fill(1);
  if (m.base) {
    for (let i = 0; i < m.n; i++) {
      const anyBase = m.base.some((c) => !Number.isNaN(c[i]));
      const anyNew = m.vals.some((c) => !Number.isNaN(c[i]));
      if (!anyBase && anyNew) inBase[i] = 0;
    }
  }
  return { inNew, inBase };
}

/** Values travel with six significant digits: a self value within that of its frame's value is
 * the rounding of a frame its children fill, shown as 0, not as float residue (2.78e-17). */
const TRANSPORT_PRECISION = 1e-5;

/** Node `i`'s value less its children's, never negative and never rounding residue. */
export function selfValue(m: ProfileModel, v: Float64Array, i: number): number {
  let own = v[i];
  for (let c = m.kidStart[i]; c < m.kidStart[i + 1]; c++) own -= v[m.kids[c]];
  return own > Math.abs(v[i]) * TRANSPORT_PRECISION ? own : 0;
}

/** Per name id: total (outermost places), self and the number of places, over the nodes `has`
 * marks (null: all). */
function nameSums(m: ProfileModel, v: Float64Array, outermost: Uint8Array, has: Uint8Array | null): { total: Float64Array; self: Float64Array; count: Int32Array } {
  const k = m.data.names.length;
  const total = new Float64Array(k);
  const self = new Float64Array(k);
  const count = new Int32Array(k);
  const ids = m.data.name_id;
  for (let i = 1; i < m.n; i++) {
    if (has && !has[i]) continue;
    const id = ids[i];
    count[id]++;
    if (outermost[i]) total[id] += v[i];
    self[id] += selfValue(m, v, i);
  }
  return { total, self, count };
}

/** Per name id, the calls its frames record (NaN where none does; all NaN without data.calls). */
function nameCalls(m: ProfileModel): Float64Array {
  const out = new Float64Array(m.data.names.length).fill(NaN);
  const calls = m.data.calls;
  if (!calls) return out;
  const ids = m.data.name_id;
  for (let i = 1; i < m.n; i++) {
    const c = calls[i];
    if (c === null || c === undefined) continue;
    const id = ids[i];
    out[id] = (Number.isNaN(out[id]) ? 0 : out[id]) + c;
  }
  return out;
}

/** total / calls, NaN without calls. */
function average(total: number, calls: number): number {
  return calls > 0 ? total / calls : NaN;
}

/** Every frame name but ROOT's over the whole tree, largest total first (ties by name). */
export function flatRows(m: ProfileModel, column: number): FlatRow[] {
  const { total, self, count } = nameSums(m, zeroed(m.vals[column]), outermostPlaces(m), null);
  const calls = nameCalls(m);
  const rows: FlatRow[] = [];
  for (let id = 0; id < count.length; id++)
    if (count[id]) rows.push({ nameId: id, name: m.data.names[id] ?? "?", total: total[id], self: self[id], places: count[id], calls: calls[id], average: average(total[id], calls[id]) });
  return sortFlat(rows, "total", true);
}

/** new / base of two sums, NaN unless both sides have the thing and the base is above 0. */
export function sumRatio(now: number, base: number, hasNew: boolean, hasBase: boolean): number {
  return hasNew && hasBase && base > 0 ? now / base : NaN;
}

/** A diff's names (every name of either profile but ROOT's), summed in both profiles over the
 * union tree: see FlatDiffRow. Largest new total first, names only in the base last. */
export function flatDiffRows(m: ProfileModel, column: number): FlatDiffRow[] {
  if (!m.base) throw new Error("flatDiffRows needs a diff (a profile with a base)");
  const outermost = outermostPlaces(m);
  const { inNew, inBase } = presence(m);
  const now = nameSums(m, zeroed(m.vals[column]), outermost, inNew);
  const was = nameSums(m, zeroed(m.base[column]), outermost, inBase);
  const calls = nameCalls(m); // a diff's page has none: NaN
  const rows: FlatDiffRow[] = [];
  for (let id = 0; id < now.count.length; id++) {
    const hasNew = now.count[id] > 0;
    const hasBase = was.count[id] > 0;
    if (!hasNew && !hasBase) continue;
    rows.push({
      nameId: id,
      name: m.data.names[id] ?? "?",
      total: hasNew ? now.total[id] : NaN,
      self: hasNew ? now.self[id] : NaN,
      places: hasNew ? now.count[id] : NaN,
      calls: calls[id],
      average: hasNew ? average(now.total[id], calls[id]) : NaN,
      base: hasBase ? was.total[id] : NaN,
      ratio: sumRatio(now.total[id], was.total[id], hasNew, hasBase),
      change: now.total[id] - was.total[id],
      only: hasNew && hasBase ? null : hasNew ? "new" : "base",
    });
  }
  return sortFlat(rows, "total", true);
}

export type FlatKey = "name" | "total" | "self" | "places" | "calls" | "average" | "base" | "ratio" | "change";

/** A row's number under a header; NaN where the row has none (a single profile has no ratio). */
function numberOf(r: FlatRow, key: Exclude<FlatKey, "name">): number {
  const v = (r as Partial<FlatDiffRow>)[key];
  return typeof v === "number" ? v : NaN;
}

/** The flat rows sorted by a header (descending: numbers largest first, names Z to A) over all
 * names, not per sibling group; NaN (no ratio, a side without the name) last either way, as the
 * table sorts blanks; ties by name. A new array. */
export function sortFlat<R extends FlatRow>(rows: R[], key: FlatKey, descending: boolean): R[] {
  const sign = descending ? -1 : 1;
  const byName = (a: R, b: R): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  if (key === "name") return rows.slice().sort((a, b) => sign * byName(a, b));
  return rows.slice().sort((a, b) => {
    const x = numberOf(a, key);
    const y = numberOf(b, key);
    if (Number.isNaN(x) || Number.isNaN(y)) return (Number.isNaN(x) ? 1 : 0) - (Number.isNaN(y) ? 1 : 0) || byName(a, b);
    return sign * (x - y) || byName(a, b);
  });
}

/** A caller or callee of a name in the sandwich: the name, its value there and its share of the
 * picked name's total; in a diff also its value in the base (NaN where the base has no such
 * call) and the ratio. */
export interface Neighbour {
  name: string;
  value: number;
  share: number;
  base?: number;
  ratio?: number;
}

/** A name's sandwich: its total (and, in a diff, its base total and ratio), callers and callees. */
export interface Sandwich {
  total: number;
  base?: number;
  ratio?: number;
  callers: Neighbour[];
  callees: Neighbour[];
}

/** One side's sums of a neighbour: value, base value, and which sides have it. */
interface Sums {
  value: number;
  base: number;
  hasNew: boolean;
  hasBase: boolean;
}

/** speedscope's sandwich for one name: its callers (the frames directly above its outermost
 * places, weighted by those places' values) and callees (the frames directly below them, by
 * their own values); shares of the name's total, largest first. In a diff the same sums over the
 * base's values ride along, with their ratios, so a picked kernel says which caller slowed it. */
export function sandwich(m: ProfileModel, column: number, nameId: number): Sandwich {
  const outermost = outermostPlaces(m);
  const v = zeroed(m.vals[column]);
  const b = m.base ? zeroed(m.base[column]) : null;
  const { inNew, inBase } = presence(m);
  const ids = m.data.name_id;
  const callers = new Map<number, Sums>();
  const callees = new Map<number, Sums>();
  const add = (into: Map<number, Sums>, id: number, node: number): void => {
    let s = into.get(id);
    if (!s) into.set(id, (s = { value: 0, base: 0, hasNew: false, hasBase: false }));
    s.value += v[node];
    if (b) s.base += b[node];
    s.hasNew ||= inNew[node] === 1;
    s.hasBase ||= inBase[node] === 1;
  };
  const self: Sums = { value: 0, base: 0, hasNew: false, hasBase: false };
  for (let i = 1; i < m.n; i++) {
    if (ids[i] !== nameId || !outermost[i]) continue;
    self.value += v[i];
    if (b) self.base += b[i];
    self.hasNew ||= inNew[i] === 1;
    self.hasBase ||= inBase[i] === 1;
    add(callers, ids[m.parent[i]], i);
    for (let c = m.kidStart[i]; c < m.kidStart[i + 1]; c++) add(callees, ids[m.kids[c]], m.kids[c]);
  }
  // In a diff, a side that lacks the name (or the call) says so with NaN, not with a 0.
  const seen = (x: number, has: boolean): number => (b && !has ? NaN : x);
  const total = seen(self.value, self.hasNew);
  const high = (x: number | undefined): number => (x === undefined || Number.isNaN(x) ? -Infinity : x);
  const list = (sums: Map<number, Sums>): Neighbour[] =>
    [...sums.entries()]
      .map(([id, s]): Neighbour => {
        const value = seen(s.value, s.hasNew);
        const n: Neighbour = { name: m.data.names[id] ?? "?", value, share: total > 0 && value > 0 ? value / total : 0 };
        if (b) Object.assign(n, { base: seen(s.base, s.hasBase), ratio: sumRatio(s.value, s.base, s.hasNew, s.hasBase) });
        return n;
      })
      .sort((x, y) => high(y.value) - high(x.value) || high(y.base) - high(x.base) || (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
  const out: Sandwich = { total, callers: list(callers), callees: list(callees) };
  if (b) Object.assign(out, { base: seen(self.base, self.hasBase), ratio: sumRatio(self.value, self.base, self.hasNew, self.hasBase) });
  return out;
}

/** A frame of the inverted caller tree: a caller name, on one chain of callers up from the picked
 * name, with the picked name's value that comes through that chain and its share of the total. */
export interface CallerNode {
  name: string;
  value: number;
  share: number;
  callers: CallerNode[];
}

/** The picked name's inverted caller tree (the sandwich's top half in full): its outermost places'
 * ancestors up to ROOT (left out), merged by name level by level, so a kernel's every call site,
 * from its direct caller up to the outermost frame, shows with the share it takes. Each level
 * largest first (ties by name); a frame's value is the sum of the places below it. */
export function callerTree(m: ProfileModel, column: number, nameId: number): { total: number; callers: CallerNode[] } {
  const outermost = outermostPlaces(m);
  const v = zeroed(m.vals[column]);
  const ids = m.data.name_id;
  interface Acc {
    id: number;
    value: number;
    up: Map<number, Acc>;
  }
  const top = new Map<number, Acc>();
  let total = 0;
  for (let i = 1; i < m.n; i++) {
    if (ids[i] !== nameId || !outermost[i]) continue;
    total += v[i];
    let level = top;
    for (let a = m.parent[i]; a > 0; a = m.parent[a]) {
      let acc = level.get(ids[a]);
      if (!acc) level.set(ids[a], (acc = { id: ids[a], value: 0, up: new Map() }));
      acc.value += v[i];
      level = acc.up;
    }
  }
  const build = (level: Map<number, Acc>): CallerNode[] =>
    [...level.values()]
      .map((a): CallerNode => ({ name: m.data.names[a.id] ?? "?", value: a.value, share: total > 0 && a.value > 0 ? a.value / total : 0, callers: build(a.up) }))
      .sort((x, y) => y.value - x.value || (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
  return { total, callers: build(top) };
}
