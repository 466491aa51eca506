// The lanes over the trace's own: "steps" (one span per training step, numbered, with its length)
// and "backward" (each backward pass's host span), from the server's ref (view/trace_marks.py), and
// the window the page opens on (the steady steps). Pure: marks.test.ts runs it under Node; the
// layout (model.ts) places the lanes on top, the painter draws them, a click zooms to a span.
import { fmtNs } from "../../format";
import type { TraceRef } from "../../types";
import { clampWindow } from "./axis";

export interface MarkSpan {
  t0: number; // relative ns
  t1: number;
  label: string; // drawn in the span: "step 3 · 41.2 ms"
  title: string; // its tooltip lines
  number: number; // the step's number (from 1); a backward pass: its step's, 0 outside the steps
  warm: boolean; // a step left out of the opening window (the warm-up)
}

export interface MarkLane {
  kind: "steps" | "backward";
  label: string; // the gutter's
  title: string; // the gutter's hover: how they were found
  spans: MarkSpan[];
  y: number; // placed by the layout
}

/** The step numbered at time t: the step whose span holds it (0: none). */
function stepAt(steps: [number, number][], t: number): number {
  const k = steps.findIndex(([a, b]) => t >= a && t < b);
  return k + 1;
}

/** The mark lanes of a trace: steps, then backward passes; [] when the server found neither. */
export function buildMarks(ref: TraceRef): MarkLane[] {
  const out: MarkLane[] = [];
  const steps = ref.steps ?? [];
  const steadyFrom = ref.steady_from ?? 1;
  if (steps.length) {
    out.push({
      kind: "steps",
      label: "steps",
      title: `${steps.length} step${steps.length === 1 ? "" : "s"}: ${ref.steps_how ?? ""}${steadyFrom > 1 ? `; the view opens on steps ${steadyFrom}–${steps.length} (step 1: warm-up)` : ""}`,
      spans: steps.map(([t0, t1], k) => {
        const warm = k + 1 < steadyFrom;
        const label = `step ${k + 1} · ${fmtNs(t1 - t0)}`;
        return { t0, t1, label, title: `${label}${warm ? " (warm-up)" : ""}\nfrom +${fmtNs(t0, true)} to +${fmtNs(t1, true)}\nclick: zoom to it`, number: k + 1, warm };
      }),
      y: 0,
    });
  }
  const backward = ref.backward ?? [];
  if (backward.length) {
    out.push({
      kind: "backward",
      label: "backward",
      title: "each backward pass: the host spans of the autograd threads and under backward frames",
      spans: backward.map(([t0, t1]) => {
        const number = stepAt(steps, (t0 + t1) / 2);
        const label = `backward${number ? ` · step ${number}` : ""} · ${fmtNs(t1 - t0)}`;
        return { t0, t1, label, title: `${label}\nfrom +${fmtNs(t0, true)} to +${fmtNs(t1, true)}\nclick: zoom to it`, number, warm: false };
      }),
      y: 0,
    });
  }
  return out;
}

/** The span of a mark lane under time t (±tol ns), or null. */
export function markAt(lane: MarkLane, t: number, tol: number): MarkSpan | null {
  let best: MarkSpan | null = null;
  let bestDist = Infinity;
  for (const s of lane.spans) {
    const dist = t < s.t0 ? s.t0 - t : t > s.t1 ? t - s.t1 : 0;
    if (dist < bestDist) (best = s), (bestDist = dist);
  }
  return bestDist <= tol ? best : null;
}

/** The window that shows a span whole, with 3% of it either side (clamped as every window is). */
export function spanWindow(s: { t0: number; t1: number }, span: number): [number, number] {
  const pad = Math.max((s.t1 - s.t0) * 0.03, 1);
  return clampWindow(s.t0 - pad, s.t1 + pad, span);
}

/** The window the page opens on: the server's steady steps, else the whole trace. */
export function openingWindow(ref: TraceRef, span: number): [number, number] {
  const w = ref.step_window;
  if (w && w[1] > w[0]) return clampWindow(w[0], w[1], span);
  return [0, span];
}
