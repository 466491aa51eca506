// The profile tree in typed arrays, built once per profile: the flame graph and the tree table both
// walk it, and with 100 000 nodes per-node objects and repeated `values[c][i] ?? NaN` lookups would
// dominate the first paint.
import type { ProfileData } from "../types";

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
  return { data, n, parent, depth, maxDepth, kidStart, kids, subtree, vals, base, ratio, removed };
}

export function nameOf(m: ProfileModel, i: number): string {
  return m.data.names[m.data.name_id[i]] ?? "?";
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

/** Nodes whose name matches: tested once per distinct name, not per node. Throws on a bad regex. */
export function matchNodes(m: ProfileModel, pattern: string): Uint8Array {
  const re = new RegExp(pattern, "i");
  const byName = new Uint8Array(m.data.names.length);
  m.data.names.forEach((name, k) => (byName[k] = re.test(name) ? 1 : 0));
  const out = new Uint8Array(m.n);
  const ids = m.data.name_id;
  for (let i = 0; i < m.n; i++) out[i] = byName[ids[i]];
  return out;
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
