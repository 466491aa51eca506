// Two launches side by side in the Accesses view (a learner's kernel beside the reference's,
// `deuteron learn check --record`): which launch a launch pairs with, which tensors pair up, the
// cells the two touched differently, one heat scale for both, and the view's address state. Pure:
// compare.test.ts runs it under Node; index.ts and card.ts put it on the page.
import type { AccessCells, RecordRef, TensorView } from "../../types";
import type { Aggregate, Filter, LaunchRef } from "./model";

// ---- Which launch to compare with.

/** The n-th launch of its kernel in its record (0 for the first): what pairs launches across
 * records, since each check numbers its launches on its own. */
export function kernelOrdinal(refs: LaunchRef[], i: number): number {
  const me = refs[i];
  let n = 0;
  for (let j = 0; j < i; j++) if (refs[j].record === me.record && refs[j].launch.kernel === me.launch.kernel) n++;
  return n;
}

/** The launch of another record that launch i pairs with, or -1: the launch of the same kernel
 * at the same place among that kernel's launches in the first other record that has one; failing
 * that, when exactly two records are given, the other record's launch at the same position. */
export function partnerOf(refs: LaunchRef[], i: number): number {
  const me = refs[i];
  if (!me) return -1;
  const ordinal = kernelOrdinal(refs, i);
  const seen = new Map<RecordRef, number>(); // record -> launches of the kernel so far
  for (let j = 0; j < refs.length; j++) {
    const r = refs[j];
    if (r.record === me.record || r.launch.kernel !== me.launch.kernel) continue;
    const n = seen.get(r.record) ?? 0;
    if (n === ordinal) return j;
    seen.set(r.record, n + 1);
  }
  const records = [...new Set(refs.map((r) => r.record))];
  if (records.length !== 2) return -1;
  const other = records[0] === me.record ? records[1] : records[0];
  const position = refs.filter((r, j) => j < i && r.record === me.record).length;
  const theirs = refs.map((r, j) => [r, j] as const).filter(([r]) => r.record === other);
  return theirs[position]?.[1] ?? -1;
}

/** A record written as the reference (`NN_name.reference.npz`). */
export function isReference(record: RecordRef): boolean {
  return /\.reference\.npz$/i.test(record.name);
}

/** The launch shown first: launch 0, except that with two records of which one is the reference
 * solution's, the other's first launch (so the learner's kernel is on the left, the reference's
 * beside it). */
export function firstLaunch(refs: LaunchRef[]): number {
  const records = [...new Set(refs.map((r) => r.record))];
  if (records.length === 2 && isReference(records[0]) !== isReference(records[1])) {
    const mine = records.find((r) => !isReference(r));
    const at = refs.findIndex((r) => r.record === mine);
    if (at >= 0) return at;
  }
  return 0;
}

// ---- The address: `#accesses?launch=2&vs=5&mode=heat`.

export interface AccessesState {
  launch: number; // index into the view's launch list
  vs: number; // the launch compared with, -1 for none
  mode: "program" | "heat";
}

/** The state the address names, launches clamped to the list; a missing or unreadable launch is
 * the first launch, a missing `vs` that launch's partner (`vs=none`: no comparison). */
export function parseAccessesState(params: Record<string, string>, refs: LaunchRef[]): AccessesState {
  const index = (text: string | undefined): number | null => {
    if (text === undefined || !/^\d+$/.test(text.trim())) return null;
    const n = Number(text);
    return n < refs.length ? n : null;
  };
  const launch = index(params.launch) ?? firstLaunch(refs);
  let vs = partnerOf(refs, launch);
  if (params.vs === "none") vs = -1;
  else {
    const picked = index(params.vs);
    if (picked !== null && picked !== launch) vs = picked;
  }
  return { launch, vs, mode: params.mode === "heat" ? "heat" : "program" };
}

/** The address's params for a state: `vs` is spelt out whenever a comparison is shown (so a
 * link names it), and as `none` when the launch has a partner but none is shown. */
export function accessesParams(state: AccessesState, refs: LaunchRef[]): Record<string, string | number | null> {
  const vs = state.vs >= 0 ? state.vs : partnerOf(refs, state.launch) >= 0 ? "none" : null;
  return { launch: state.launch, vs, mode: state.mode === "heat" ? "heat" : null };
}

// ---- Which tensors pair up, and where a program is in the other launch.

/** For each tensor of `a`, the tensor of `b` it is compared with: the one of the same name, else
 * the one at the same position when neither list has it by name; -1 when none. */
export function pairTensors(a: TensorView[], b: TensorView[]): number[] {
  const named = new Set(a.map((t) => t.name));
  return a.map((t, i) => {
    const same = b.findIndex((u) => u.name === t.name);
    if (same >= 0) return same;
    return i < b.length && !named.has(b[i].name) ? i : -1;
  });
}

/** Whether two tensors' grids are cell for cell the same: same shape, so the same bins. */
export function sameGrid(a: TensorView, b: TensorView): boolean {
  return (
    a.shape.join() === b.shape.join() &&
    a.bin_rows === b.bin_rows &&
    a.bin_cols === b.bin_cols &&
    a.row_step === b.row_step &&
    a.col_step === b.col_step &&
    a.merged.join() === b.merged.join()
  );
}

/** Program p of one launch as a program of another: the one with the same (x, y, z); null for
 * all stays null, and a program the other launch does not have is -1 (nothing selected there). */
export function programIn(from: [number, number, number][], to: [number, number, number][], p: number | null): number | null {
  if (p === null) return null;
  const xyz = from[p];
  if (!xyz) return -1;
  return to.findIndex((q) => q[0] === xyz[0] && q[1] === xyz[1] && q[2] === xyz[2]);
}

// ---- What each side touched, and where the two differ.

/** Kind bits of a bin's accesses: load 1, store 2, atomic 4. */
export const KIND_BIT = [1, 2, 4] as const;

/** Per bin: the kinds of access (bits) and the lanes, over every program, of the kinds the filter
 * shows. Masked-off lanes (kinds 3-5) are not accesses and do not count. */
export interface Footprint {
  kinds: Uint8Array;
  lanes: Float64Array;
}

export function footprint(cells: AccessCells, bins: number, filter: Pick<Filter, "kinds">): Footprint {
  const kinds = new Uint8Array(bins);
  const lanes = new Float64Array(bins);
  for (let i = 0, n = cells.bin.length; i < n; i++) {
    const k = cells.kind[i];
    const b = cells.bin[i];
    if (k >= 3 || b >= bins || !filter.kinds[k]) continue;
    kinds[b] |= KIND_BIT[k];
    lanes[b] += cells.lanes[i];
  }
  return { kinds, lanes };
}

/** How a bin differs between the left (a) and right (b) launch. */
export const SAME = 0;
export const ONLY_A = 1; // touched on the left only
export const ONLY_B = 2; // touched on the right only
export const KINDS_DIFFER = 3; // touched by both, by other kinds (read on one side, written on the other)
export const LANES_DIFFER = 4; // the same kinds on both sides, a different number of element accesses

export interface Diff {
  cls: Uint8Array; // per bin, one of SAME .. LANES_DIFFER
  onlyA: number;
  onlyB: number;
  kinds: number;
  lanes: number;
  /** Bins touched differently: onlyA + onlyB + kinds (the ones marked on the grids). */
  differ: number;
}

export function diffFootprints(a: Footprint, b: Footprint): Diff {
  const bins = Math.min(a.kinds.length, b.kinds.length);
  const cls = new Uint8Array(bins);
  const count = [0, 0, 0, 0, 0];
  for (let i = 0; i < bins; i++) {
    const ka = a.kinds[i];
    const kb = b.kinds[i];
    let c = SAME;
    if (ka !== kb) c = !kb ? ONLY_A : !ka ? ONLY_B : KINDS_DIFFER;
    else if (ka && a.lanes[i] !== b.lanes[i]) c = LANES_DIFFER;
    cls[i] = c;
    count[c]++;
  }
  return { cls, onlyA: count[ONLY_A], onlyB: count[ONLY_B], kinds: count[KINDS_DIFFER], lanes: count[LANES_DIFFER], differ: count[ONLY_A] + count[ONLY_B] + count[KINDS_DIFFER] };
}

/** The marks' colours: a frame around each bin touched differently, by which side touched it. */
export const DIFF_COLOUR: Record<number, string> = {
  [ONLY_A]: "#e8590c",
  [ONLY_B]: "#7048e8",
  [KINDS_DIFFER]: "#212529",
};

/** One lanes-per-cell range for both sides of a pair, so a heat colour means the same count on
 * both: the smaller minimum and the larger maximum of the sides that touched anything. */
export function sharedRange(a: Aggregate, b: Aggregate): { minLanes: number; maxLanes: number } {
  const sides = [a, b].filter((x) => x.touched > 0);
  if (!sides.length) return { minLanes: 0, maxLanes: 0 };
  return { minLanes: Math.min(...sides.map((x) => x.minLanes)), maxLanes: Math.max(...sides.map((x) => x.maxLanes)) };
}

/** The line under a pair's cards: how many cells differ, and how. */
export function diffText(d: Diff, left: string, right: string): string {
  if (!d.differ && !d.lanes) return `touched alike in ${left} and ${right}`;
  const parts: string[] = [];
  if (d.onlyA) parts.push(`${d.onlyA} only in ${left}`);
  if (d.onlyB) parts.push(`${d.onlyB} only in ${right}`);
  if (d.kinds) parts.push(`${d.kinds} by other kinds`);
  let text = `${d.differ} cell${d.differ === 1 ? "" : "s"} touched differently${parts.length ? ` (${parts.join(", ")})` : ""}`;
  if (d.lanes) text += `; ${d.lanes} touched alike but a different number of times`;
  return text;
}

/** The launch to compare with once launch `to` is picked instead of `from`: the new launch's
 * partner when the comparison was the old one's (the default), else the one compared with, kept
 * (none when that is the launch now shown). */
export function followVs(refs: LaunchRef[], from: number, vs: number, to: number): number {
  if (vs >= 0 && vs === partnerOf(refs, from)) return partnerOf(refs, to);
  if (vs < 0 && partnerOf(refs, from) < 0) return partnerOf(refs, to); // nothing to pair before: pair now if it can
  return vs === to ? -1 : vs;
}
