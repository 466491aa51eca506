// The filter box's rules, the same as `deuteron view -i` (deuteron/view/processors.py: include,
// pattern_matcher, adds_up), so the page and the terminal keep the same frames and show the same
// numbers; filter.fixture.json holds the terminal's answers on a real profile and filter.test.ts
// checks this module gives them (tests/view/test_filter_parity.py keeps the fixture up to date).
//
// - A name matches when it holds the pattern as text, or when the pattern, read as a regular
//   expression, is found anywhere in it; case is ignored either way. A C++ kernel matches by its
//   short, full or recorded (mangled) name. A pattern that is no regular expression throws.
// - Kept: each matching frame with everything below it, and the frames above (ROOT always).
// - Numbers: a matching frame and what is below it keep their own. A frame kept only on the way to
//   a match keeps none of its own: a column that adds up (a time, a share, a count) is the sum of
//   its kept children's, so ROOT holds all that is kept; a column that does not (an average, a
//   rate, util, a frame's own calls) has no value there. The run's total is said beside.
// No DOM: filter.test.ts runs it under Node.
import { fmt } from "../../format";
import type { ProfileModel } from "./model";

/** The test of one name; throws (SyntaxError) on a pattern that is no regular expression. */
export function patternMatcher(pattern: string): (name: string) => boolean {
  const re = new RegExp(pattern, "i");
  const text = pattern.toLowerCase();
  return (name) => name.toLowerCase().includes(text) || re.test(name);
}

/** Nodes whose name (shown, full or recorded) matches, tested once per distinct name. */
export function matchingNodes(m: ProfileModel, pattern: string): Uint8Array {
  const found = patternMatcher(pattern);
  const d = m.data;
  const byName = new Uint8Array(d.names.length);
  d.names.forEach((name, k) => {
    const full = d.full_names?.[k];
    const raw = d.raw_names?.[k];
    byName[k] = found(name) || (!!full && full !== name && found(full)) || (!!raw && raw !== name && found(raw)) ? 1 : 0;
  });
  const out = new Uint8Array(m.n);
  const ids = d.name_id;
  for (let i = 0; i < m.n; i++) out[i] = byName[ids[i]];
  return out;
}

/** Whether a column of a frame is its children's sum when the frame keeps nothing of its own, by
 * the column's label as deuteron view derives it (processors.adds_up): times, shares and summed
 * counts do; averages, rates, util, roofline times and a frame's own calls do not. */
export function addsUp(label: string): boolean {
  if (/^avg_/.test(label) || /\/s$/.test(label) || label === "util" || /^roofline_time\//.test(label)) return false;
  if (label === "calls" || label === "calls/%") return false; // a frame's own entries (exclusive)
  return true;
}

export interface Filtered {
  /** Nodes whose name matches. */
  match: Uint8Array;
  /** Matches and everything below them: drawn in colour, their numbers their own. */
  below: Uint8Array;
  /** What the filtered tree shows: `below` and the frames on the way to it (ROOT always). */
  keep: Uint8Array;
  /** vals[column][node] of the filtered tree (NaN where not kept or not shown). */
  vals: Float64Array[];
  /** How many nodes match. */
  count: number;
}

/** The tree under a pattern, as `deuteron view -i PATTERN` shows it. */
export function filterModel(m: ProfileModel, pattern: string): Filtered {
  const match = matchingNodes(m, pattern);
  const below = new Uint8Array(m.n);
  let count = 0;
  // Parents come before their children: one forward pass marks each match's subtree.
  for (let i = 0; i < m.n; i++) {
    if (match[i]) count++;
    below[i] = match[i] || (i > 0 && below[m.parent[i]]) ? 1 : 0;
  }
  const keep = below.slice();
  keep[0] = 1;
  for (let i = m.n - 1; i > 0; i--) if (keep[i]) keep[m.parent[i]] = 1;
  const vals = m.data.columns.map((label, c) => {
    const src = m.vals[c];
    const out = new Float64Array(m.n).fill(NaN);
    const sums = addsUp(label);
    const acc = new Float64Array(m.n); // kept children's sum, for frames on the way
    const any = new Uint8Array(m.n);
    for (let i = m.n - 1; i >= 0; i--) {
      if (!keep[i]) continue;
      if (below[i]) out[i] = src[i];
      else if (sums && any[i]) out[i] = acc[i];
      if (i > 0 && !Number.isNaN(out[i])) {
        acc[m.parent[i]] += out[i];
        any[m.parent[i]] = 1;
      }
    }
    return out;
  });
  return { match, below, keep, vals, count };
}

/** What ROOT keeps of the run's total in `column`, as deuteron view says it beside a filtered
 * tree ("ROOT keeps 36.5 of the run's 311 time/ms (11.7%)"); null when nothing matches or the
 * column has no number at ROOT. */
export function keptText(m: ProfileModel, f: Filtered, column: number): string | null {
  if (f.count === 0) return null;
  const kept = f.vals[column]?.[0];
  const total = m.vals[column]?.[0];
  if (kept === undefined || total === undefined || Number.isNaN(kept) || Number.isNaN(total)) return null;
  const share = total ? ` (${((kept / total) * 100).toFixed(1)}%)` : "";
  return `ROOT keeps ${fmt(kept)} of the run's ${fmt(total)} ${m.data.columns[column]}${share}`;
}
