// How lanes gather under headers: the lanes inside one kernel (its CTAs' warps, or its programs)
// under a header that folds them, or in a job's trace each rank's lanes; the headers' and lanes'
// labels. Pure (model.test.ts runs it under Node; model.ts re-exports the labels). Apart from
// model.ts, which builds and lays out the rows.
import { fmt } from "../../format";
import type { IntraLane, TraceRef } from "../../types";
import type { Group, Lane } from "./model";

/** Past this many lanes inside kernels, only the first kernel's lanes start unfolded. */
export const UNFOLDED_LANES = 64;
/** Past this many ranks in a job's trace, ranks start folded, each a summary row. */
export const UNFOLDED_RANKS = 16;

/** An intra-kernel lane's short label: "CTA 0 · SM 124 · warp 1" on a GPU, "program 3" in the
 * interpreter; its whole name when the name said nothing of either. */
export function laneLabel(name: string, intra: IntraLane | undefined): string {
  if (!intra || !intra.unit || intra.index === null) return name;
  const unit = `${intra.unit} ${intra.index}`;
  if (intra.cta === null) return unit;
  return [`CTA ${intra.cta}`, intra.sm === null ? null : `SM ${intra.sm}`, unit].filter((t) => t !== null).join(" · ");
}

export const plural = (k: number, word: string): string => `${fmt(k)} ${word}${k === 1 ? "" : "s"}`;

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
export function groupLanes(ref: TraceRef, lanes: Lane[], start: Float64Array, dur: Float64Array, lane: Uint16Array, n: number): Group[] {
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
export function groupRanks(ref: TraceRef, lanes: Lane[], start: Float64Array, dur: Float64Array, lane: Uint16Array, n: number): Group[] {
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
