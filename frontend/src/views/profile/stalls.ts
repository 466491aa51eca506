// A sampled profile in the profile view: each frame's PC samples by stall reason (the table's stall
// columns, the flame graph's tooltip and the picked frame's breakdown), what the file says about
// the sampling (the run card's rows), and the command that makes an explain report when the page
// has none. The Python that sends them is deuteron/render/web/sampling.py.
//
// Shares are of a frame's stall samples (the stall columns' sum, which counts each sample once;
// Proton's num_samples counts each twice), in tenths of a percent, rounded so that the shares of
// one frame add up to exactly 100.0% (largest remainders). A frame with no stall sample has no
// share: it is said so ("–", "cannot be computed"), never shown as 0%.
// Pure (no DOM): stalls.test.ts runs it under Node.
import { fmt, fmtCount } from "../../format";
import { lineFrame } from "../../links";
import type { ProfileData, SamplingData } from "../../types";

export interface StallModel {
  /** Reasons as recorded ("stalled_long_scoreboard"), the run's most first. */
  reasons: string[];
  /** As shown: the prefix left out ("long_scoreboard"). */
  words: string[];
  /** counts[k][node]: samples stalled on reason k, NaN for a frame with no stall sample. */
  counts: Float64Array[];
  /** Each frame's stall samples in all (the shares' denominator), NaN where it has none. */
  total: Float64Array;
  /** num_samples and the samples not issued, NaN where the file does not record them. */
  samples: Float64Array;
  notIssued: Float64Array;
  /** The reason holding most of a frame's samples (-1: none) and its share (NaN: none). */
  dominant: Int32Array;
  dominantShare: Float64Array;
  meanings: Record<string, { meaning: string; change: string }>;
}

/** A sample count in full, "1,483,796" (a count is exact; a share beside it says its size). */
export function countText(n: number): string {
  return Number.isInteger(n) ? n.toLocaleString("en-US") : fmt(n);
}

/** "long_scoreboard" for "stalled_long_scoreboard". */
export function stallWord(reason: string): string {
  return reason.replace(/^stalled_/, "");
}

/** The stall arrays over the tree's `n` nodes, or null for a profile without stalls. */
export function buildStalls(data: ProfileData, n: number): StallModel | null {
  const s = data.stalls;
  if (!s || !s.reasons.length || !s.nodes.length) return null;
  const counts = s.reasons.map(() => new Float64Array(n).fill(NaN));
  const total = new Float64Array(n).fill(NaN);
  const samples = new Float64Array(n).fill(NaN);
  const notIssued = new Float64Array(n).fill(NaN);
  const dominant = new Int32Array(n).fill(-1);
  const dominantShare = new Float64Array(n).fill(NaN);
  s.nodes.forEach((node, j) => {
    if (!(node >= 0 && node < n)) return;
    const row = s.counts[j] ?? [];
    let sum = 0;
    let best = -1;
    for (let k = 0; k < s.reasons.length; k++) {
      const v = Number.isFinite(row[k]) && row[k] > 0 ? row[k] : 0;
      counts[k][node] = v;
      sum += v;
      if (v > 0 && (best < 0 || v > row[best])) best = k;
    }
    if (!(sum > 0)) {
      for (const c of counts) c[node] = NaN;
      return;
    }
    total[node] = sum;
    dominant[node] = best;
    dominantShare[node] = row[best] / sum;
    const sm = s.samples[j];
    const ni = s.not_issued[j];
    samples[node] = typeof sm === "number" ? sm : NaN;
    notIssued[node] = typeof ni === "number" ? ni : NaN;
  });
  return { reasons: s.reasons, words: s.reasons.map(stallWord), counts, total, samples, notIssued, dominant, dominantShare, meanings: s.meanings ?? {} };
}

/** Counts as shares in tenths of a percent that add up to exactly 1000 (largest remainders; ties
 * to the larger count, then the earlier). An empty or zero total gives null: no share exists. */
export function shareTenths(counts: number[]): number[] | null {
  const total = counts.reduce((a, b) => a + b, 0);
  if (!(total > 0)) return null;
  const exact = counts.map((c) => (c * 1000) / total);
  const out = exact.map(Math.floor);
  let left = 1000 - out.reduce((a, b) => a + b, 0);
  const order = exact.map((_, k) => k).sort((a, b) => exact[b] - out[b] - (exact[a] - out[a]) || counts[b] - counts[a] || a - b);
  for (const k of order) {
    if (left <= 0) break;
    out[k]++;
    left--;
  }
  return out;
}

/** A share in tenths of a percent for people: "49.9%"; a count there that rounds to nothing is
 * "<0.1%", not 0. */
export function tenthsText(tenths: number, count: number): string {
  if (tenths === 0 && count > 0) return "<0.1%";
  return `${(tenths / 10).toFixed(1)}%`;
}

/** One line of a breakdown: a reason (or the rest of them) with its samples and share. */
export interface StallPart {
  reason: string; // as recorded; "" for the rest
  word: string; // as shown: "long_scoreboard", "3 other reasons"
  count: number;
  tenths: number;
  share: string;
}

/** A frame's stall breakdown: its most frequent reasons, then the rest as one line, so the shares
 * shown add up to 100.0%; with the numbers around them and a note where num_samples and the stall
 * columns disagree. */
export interface StallBreakdown {
  total: number;
  parts: StallPart[];
  samples: number | null;
  notIssued: number | null;
  notIssuedShare: string | null;
  note: string | null;
}

/** Node `i`'s shares of every reason (in `reasons` order) in tenths of a percent, or null. */
export function nodeTenths(s: StallModel, i: number): number[] | null {
  if (!(s.total[i] > 0)) return null;
  return shareTenths(s.counts.map((c) => c[i]));
}

/** The breakdown of node `i` (its `top` most frequent reasons and the rest), null for a frame
 * without stall samples. */
export function stallBreakdown(s: StallModel, i: number, top = 5): StallBreakdown | null {
  const tenths = nodeTenths(s, i);
  if (!tenths) return null;
  const total = s.total[i];
  const order = s.reasons.map((_, k) => k).filter((k) => s.counts[k][i] > 0).sort((a, b) => s.counts[b][i] - s.counts[a][i] || a - b);
  const shown = order.length > top + 1 ? order.slice(0, top) : order; // "1 other reason" would be a reason hidden for nothing
  const parts: StallPart[] = shown.map((k) => ({ reason: s.reasons[k], word: s.words[k], count: s.counts[k][i], tenths: tenths[k], share: tenthsText(tenths[k], s.counts[k][i]) }));
  const rest = order.slice(shown.length);
  if (rest.length) {
    const count = rest.reduce((a, k) => a + s.counts[k][i], 0);
    const t = rest.reduce((a, k) => a + tenths[k], 0);
    parts.push({ reason: "", word: `${rest.length} other reasons`, count, tenths: t, share: tenthsText(t, count) });
  }
  const samples = Number.isNaN(s.samples[i]) ? null : s.samples[i];
  const notIssued = Number.isNaN(s.notIssued[i]) ? null : s.notIssued[i];
  let note: string | null = null;
  if (samples !== null && samples !== total) {
    note =
      samples === 2 * total
        ? `num_samples says ${countText(samples)}: this file counts each sample twice (Proton's do); the shares are of the stall columns' ${countText(total)}`
        : `num_samples says ${countText(samples)}, the stall columns hold ${countText(total)}: the shares are of the stall columns'`;
  }
  const niTenths = notIssued !== null ? shareTenths([notIssued, Math.max(0, total - notIssued)]) : null;
  return { total, parts, samples, notIssued, notIssuedShare: niTenths && notIssued !== null ? tenthsText(niTenths[0], notIssued) : null, note };
}

/** A frame's stalls in one line (tooltips): "stalls of 1,483,796 samples: not_selected 49.9%,
 * selected 14.4%, wait 11.8%, 8 other reasons 23.9%"; or why there is no share. */
export function stallSummary(s: StallModel, i: number, top = 3): string {
  const b = stallBreakdown(s, i, top);
  if (!b) return "stalls: none sampled here (no share can be computed)";
  return `stalls of ${countText(b.total)} samples: ${b.parts.map((p) => `${p.word} ${p.share}`).join(", ")}`;
}

/** A stall column of the table: its header, its sort key per node, and its cells' text and title. */
export interface StallColumn {
  label: string;
  title: string;
  key: Float64Array;
  text: (i: number) => string;
  cellTitle: (i: number) => string;
}

/** The table's stall columns: the frame's top stall (its share; sorted by that share), then the
 * run's `count` most frequent reasons (the frame's samples and share; sorted by the samples). */
export function stallColumns(s: StallModel, count = 3): StallColumn[] {
  const none = "no stall sample under this frame: no share can be computed";
  const cache = new Map<number, number[] | null>();
  const tenthsOf = (i: number): number[] | null => {
    if (!cache.has(i)) {
      if (cache.size > 4096) cache.clear();
      cache.set(i, nodeTenths(s, i));
    }
    return cache.get(i)!;
  };
  const out: StallColumn[] = [
    {
      label: "top stall",
      title: "the stall reason behind most of the frame's PC samples, and its share of them",
      key: s.dominantShare,
      text: (i) => {
        const k = s.dominant[i];
        const t = tenthsOf(i);
        return k < 0 || !t ? "–" : `${s.words[k]} ${tenthsText(t[k], s.counts[k][i])}`;
      },
      cellTitle: (i) => (s.dominant[i] < 0 ? none : stallSummary(s, i, 5)),
    },
  ];
  s.reasons.slice(0, count).forEach((reason, k) => {
    out.push({
      label: s.words[k],
      title: `samples stalled on ${s.words[k]} (${reason}), and their share of the frame's`,
      key: s.counts[k],
      text: (i) => {
        const t = tenthsOf(i);
        if (!t) return "–";
        return s.counts[k][i] > 0 ? `${fmtCount(s.counts[k][i])} ${tenthsText(t[k], s.counts[k][i])}` : "0"; // none of them: no share to say
      },
      cellTitle: (i) => {
        const t = tenthsOf(i);
        return t ? `${s.words[k]}: ${countText(s.counts[k][i])} of ${countText(s.total[i])} samples (${tenthsText(t[k], s.counts[k][i])})` : none;
      },
    });
  });
  return out;
}

const NOT_RECORDED = "not recorded";

/** A count with its share of a whole: "1,104 (0.1% of 1,775,328)"; the share is said only where it
 * can be computed. */
function countOf(n: number | null, whole: number | null): string {
  if (n === null) return NOT_RECORDED;
  const share = shareOf(n, whole);
  return share === null || whole === null ? countText(n) : `${countText(n)} (${share} of ${countText(whole)})`;
}

/** The run card's sampling rows; a value the file does not hold is "not recorded". */
export function samplingRows(s: SamplingData): [string, string][] {
  const interval = s.interval_cycles === null ? NOT_RECORDED : `${countText(s.interval_cycles)} cycles` + (s.asked_interval !== null && s.asked_interval !== s.interval_cycles ? ` (asked for ${countText(s.asked_interval)})` : "");
  const rows: [string, string][] = [
    ["sampling interval", interval],
    ["samples", s.samples === null ? NOT_RECORDED : countText(s.samples)],
    ["dropped samples", s.dropped_samples === null ? NOT_RECORDED : countOf(s.dropped_samples, s.samples === null ? null : s.samples + s.dropped_samples) + (s.hardware_buffer_full ? `, the hardware buffer filled ${countText(s.hardware_buffer_full)} time(s)` : "")],
    ["unplaced samples", s.unplaced_samples === null ? NOT_RECORDED : `${countOf(s.unplaced_samples, s.placed_kernel_samples)} on <no source line>, in kernels with a line table`],
  ];
  if (s.kernels_without_lines !== null && s.kernels_without_lines > 0) {
    rows.push(["without line table", `${countText(s.kernels_without_lines)} kernel${s.kernels_without_lines === 1 ? "" : "s"}, ${countOf(s.samples_without_lines, s.samples)} samples`]);
  }
  if (s.mode !== null) rows.push(["sampling mode", s.mode]);
  if (s.error !== null) rows.push(["sampling error", s.error]);
  return rows;
}

/** A part's share of a whole for people ("0.1%"), or null where it cannot be computed. */
function shareOf(n: number, whole: number | null): string | null {
  const t = whole !== null && whole > 0 ? shareTenths([n, Math.max(0, whole - n)]) : null;
  return t ? tenthsText(t[0], n) : null;
}

/** The run card's one line on the sampling, seen while the card is closed: "sampled every 1,024
 * cycles · 0 dropped · 0.0% unplaced". */
export function samplingLine(s: SamplingData): string {
  if (!s.recorded) return "sampled: interval, dropped and unplaced samples not recorded";
  const interval = s.interval_cycles === null ? "interval not recorded" : `every ${countText(s.interval_cycles)} cycles`;
  const dropped = s.dropped_samples === null ? "dropped samples not recorded" : `${countText(s.dropped_samples)} dropped`;
  const unplaced = s.unplaced_samples === null ? "unplaced share not recorded" : `${shareOf(s.unplaced_samples, s.placed_kernel_samples) ?? `${countText(s.unplaced_samples)} samples`} unplaced`;
  return `sampled ${interval} · ${dropped} · ${unplaced}`;
}

/** A word for a shell: quoted only where it needs to be. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'"'"'`)}'`;
}

/** The kernel (and source line) a frame is about: a line frame names both (`file:line@kernel`);
 * its inlined callees and the kernel's own frame are found through their ancestors; null for a
 * frame that is not in a sampled kernel. */
export function sampledPlace(names: (i: number) => string, parent: Int32Array, i: number, isKernel: (i: number) => boolean): { kernel: string; line: number | null; file: string | null } | null {
  for (let a = i; a > 0; a = parent[a]) {
    const frame = lineFrame(names(a));
    if (frame) return { kernel: frame.kernel, line: frame.line, file: frame.file };
    if (isKernel(a)) return { kernel: names(a), line: null, file: null };
  }
  return null;
}

/** What to run for an explain report of a kernel of this profile, and to serve it with: the
 * profile's program when its metadata names one, else a placeholder to fill in. */
export function explainCommand(source: string, kernel: string, program: string | null): string {
  const run = program ?? "YOUR_SCRIPT.py";
  return `deuteron explain --profile ${shellWord(source)} --kernel ${shellWord(kernel)} --json ex.json ${run} && deuteron serve ${shellWord(source)} ex.json`;
}
