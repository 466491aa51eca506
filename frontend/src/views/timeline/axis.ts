// The time axis and the visible window, pure (model.test.ts runs them under Node; model.ts
// re-exports them): tick steps and labels, and the clamping of the window to the trace. Apart from
// model.ts so that the row model stays under a screenful of reading.

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
