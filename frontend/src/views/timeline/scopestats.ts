// The per-scope statistics of the spans inside kernels (scopes.ts draws them as a table), pure
// (model.test.ts runs them under Node; model.ts re-exports them). Apart from model.ts, which builds
// the rows they are read from. Merged blocks of a level-of-detail overview (count > 1) stand for
// spans they do not name one by one: they are left out.
import { shownName, type TimelineModel } from "./model";

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
    if (m.cat[i] !== intraCat || (m.count !== null && m.count[i] > 1)) continue;
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
      scope: shownName(m.ref, a.nameId),
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
