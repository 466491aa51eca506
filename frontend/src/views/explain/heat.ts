// The Explain view's sampled-kernel model (no DOM; heat.test.ts runs it): the heat column's cell
// for a line (count and colour, scaled to the largest line of the same pane), the stall breakdown
// a hovered line shows, the "hottest lines" list, and how each stage got its samples. Its input is
// `heat` and `hot_lines` of a kernel of `deuteron explain --profile --json`.
import { fmt, fmtCount, fmtShare } from "../../format";
import { heatCss } from "../../heat";
import { baseName } from "../../links";
import type { ExplainKernel, KernelHeat, LineSamples } from "../../types";

/** A kernel's heat, when it has samples worth drawing. */
export function heatOf(k: ExplainKernel): KernelHeat | null {
  return k.heat && k.heat.samples > 0 ? k.heat : null;
}

/** Samples per source line (lines without samples absent). */
export function sourceCounts(heat: KernelHeat): Map<number, number> {
  const out = new Map<number, number>();
  for (const [line, s] of Object.entries(heat.lines)) if (s.samples > 0) out.set(Number(line), s.samples);
  return out;
}

/** One line's samples and why, or null when it has none. */
export function lineSamples(heat: KernelHeat, line: number | null): LineSamples | null {
  if (line === null) return null;
  const s = heat.lines[String(line)];
  return s && s.samples > 0 ? s : null;
}

/** The largest count of a pane: its cells are scaled to it. */
export function maxCount(counts: Iterable<number>): number {
  let max = 0;
  for (const c of counts) if (c > max) max = c;
  return max;
}

export interface HeatCell {
  /** The count for people ("1.2k"). */
  text: string;
  /** The cell's background: the heat ramp at the count's share of the pane's largest. */
  colour: string;
  /** Light text on the ramp's dark end. */
  dark: boolean;
  /** The exact count and its share of the kernel's samples. */
  title: string;
}

/** A line's heat cell, or null for a line without samples (drawn blank). */
export function heatCell(count: number, max: number, kernelSamples: number): HeatCell | null {
  if (!(count > 0) || !(max > 0)) return null;
  const t = Math.min(1, count / max);
  return {
    text: fmtCount(count),
    colour: heatCss(t),
    dark: t > 0.6,
    title: `${fmt(count)} samples, ${fmtShare(count / kernelSamples)} of the kernel's`,
  };
}

/** A CUPTI stall reason as people read it: "stalled_mio_throttle" → "mio_throttle". */
export function stallName(reason: string): string {
  return reason.replace(/^stalled_/, "");
}

export interface StallRow {
  reason: string;
  count: number;
  /** Of the line's samples. */
  share: number;
}

/** What a hovered line shows: its samples, its share of the kernel's, the share whose warp issued
 * nothing, and its stall reasons, largest first (at most `top`, the rest summed in `rest`). */
export interface Breakdown {
  line: number;
  samples: number;
  share: number;
  notIssued: number;
  notIssuedShare: number;
  stalls: StallRow[];
  rest: { reasons: number; count: number; share: number } | null;
}

export function breakdown(heat: KernelHeat, line: number, top = 6): Breakdown | null {
  const s = lineSamples(heat, line);
  if (!s) return null;
  const rows = Object.entries(s.stalls)
    .filter(([, n]) => n > 0)
    .map(([reason, count]) => ({ reason: stallName(reason), count, share: count / s.samples }))
    .sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason));
  const hidden = rows.slice(top);
  const restCount = hidden.reduce((sum, r) => sum + r.count, 0);
  return {
    line,
    samples: s.samples,
    share: heat.samples > 0 ? s.samples / heat.samples : 0,
    notIssued: s.not_issued,
    notIssuedShare: s.not_issued / s.samples,
    stalls: rows.slice(0, top),
    rest: hidden.length ? { reasons: hidden.length, count: restCount, share: restCount / s.samples } : null,
  };
}

/** The breakdown's heading: "line 30: 325,003 samples (98% of rms_scale's)". */
export function breakdownTitle(b: Breakdown, kernel: string): string {
  return `line ${b.line}: ${fmt(b.samples)} samples (${fmtShare(b.share)} of ${kernel}'s)`;
}

/** What an IR line adds above its source line's breakdown: its own samples when the stage has
 * them per PC, else that it shows its source line's. */
export function irLineNote(stage: string, irLine: number, count: number, by: string | undefined, kernelSamples: number): string {
  if (by === "PC") return `${stage} line ${irLine}: ${fmt(count)} samples (${fmtShare(count / kernelSamples)}) at its own PCs`;
  return `${stage} line ${irLine} shows the samples of its source line`;
}

/** How a stage's lines got their samples, for its tab and its heading. */
export function byText(by: string | undefined): string {
  if (by === "PC") return "samples by PC";
  if (by === "source line") return "samples by source line";
  return by ? `samples by ${by}` : "";
}

/** A row of the "hottest lines" list. */
export interface HotRow {
  line: number;
  samples: number;
  share: number;
  /** The stall named as the line's cause ("mio_throttle"), null when none dominates. */
  stall: string | null;
  stallShare: number;
  meaning: string;
  change: string;
  lints: string[];
  /** False for a line of another file (an inlined helper): not in this source pane. */
  here: boolean;
}

/** The share of a line's samples its largest stall must hold to be named its cause, as
 * deuteron/view/hot_lines.py DOMINANT_STALL_SHARE (used only where the report lists no hot lines). */
export const DOMINANT_STALL_SHARE = 0.3;

/** The "hottest lines" list: the report's hot lines with their advice when it has them, else the
 * `top` lines with most samples (their dominant stall, no advice); lints are explain's findings on
 * the line, when the report gave none. */
export function hottestRows(k: ExplainKernel, top = 5): HotRow[] {
  const heat = heatOf(k);
  const lintsAt = (line: number): string[] => k.findings.filter((f) => f.line === line).map((f) => f.message);
  if (k.hot_lines?.length) {
    return k.hot_lines.map((h) => ({
      line: h.line,
      samples: h.samples,
      share: h.share,
      stall: h.stall ? stallName(h.stall) : null,
      stallShare: h.stall_share,
      meaning: h.meaning,
      change: h.change,
      lints: h.lints.length ? h.lints : lintsAt(h.line),
      here: !h.file || !k.file || baseName(h.file) === baseName(k.file),
    }));
  }
  if (!heat) return [];
  return [...sourceCounts(heat)]
    .sort((a, b) => b[1] - a[1] || a[0] - b[0])
    .slice(0, top)
    .map(([line, samples]) => {
      const first = breakdown(heat, line, 1)!;
      const lead = first.stalls[0];
      const named = lead && lead.share >= DOMINANT_STALL_SHARE ? lead : null;
      return {
        line,
        samples,
        share: samples / heat.samples,
        stall: named ? named.reason : null,
        stallShare: named ? named.share : 0,
        meaning: "",
        change: "",
        lints: lintsAt(line),
        here: true,
      };
    });
}

/** A hot row's one-line summary: "325,003 samples · 98% of the kernel's · mio_throttle 65%". */
export function hotSummary(row: HotRow): string {
  const parts = [`${fmt(row.samples)} samples`, `${fmtShare(row.share)} of the kernel's`];
  parts.push(row.stall ? `${row.stall} ${fmtShare(row.stallShare)}` : "no dominant stall");
  return parts.join(" · ");
}

/** Source line `line` of a file's text, trimmed (the hot list quotes it); "" when out of range. */
export function sourceLineText(text: string | null, line: number): string {
  if (text === null || line < 1) return "";
  const lines = text.split("\n");
  return (lines[line - 1] ?? "").trim();
}
