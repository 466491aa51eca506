// The Explain view's pure model: a kernel's label, its resources and free-form records (occupancy,
// profile) as text rows, its SASS instruction mix as sorted bars, and the compiler stages' order
// and source-line links. No DOM: model.test.ts runs all of it under Node.
import { fmt, fmtNs } from "../../format";
import type { ExplainKernel } from "../../types";

/** The kernel button's label: name, target, warps and stages ("?" where unknown). */
export function kernelLabel(k: ExplainKernel): string {
  return `${k.name} · ${k.target} · ${k.num_warps ?? "?"}w/${k.num_stages ?? "?"}s`;
}

/** A byte count in B, KiB or MiB (3 significant digits); "–" for none. */
export function bytes(n: number | null): string {
  if (n === null) return "–";
  if (n >= 1024 * 1024) return `${(n / 1024 / 1024).toPrecision(3)} MiB`;
  if (n >= 1024) return `${(n / 1024).toPrecision(3)} KiB`;
  return `${n} B`;
}

/** A value of a free-form record (occupancy, profile) in a line: numbers formatted, fractions of
 * "fraction"/"util" as percentages, nested records as `key value, ...`. */
export function valueText(key: string, value: unknown): string {
  if (value === null || value === undefined) return "–";
  if (typeof value === "number") {
    if ((key === "fraction" || key === "util") && value <= 1) return `${(value * 100).toFixed(1)}%`;
    if (key.endsWith("_ns")) return fmtNs(value);
    return fmt(value);
  }
  if (Array.isArray(value)) return value.map((v) => valueText("", v)).join(", ");
  if (typeof value === "object") {
    return Object.entries(value as Record<string, unknown>)
      .map(([k, v]) => `${k} ${valueText(k, v)}`)
      .join(", ");
  }
  return String(value);
}

/** A free-form record's rows: each key with its value's text (see valueText), in the record's order. */
export function recordRows(record: Record<string, unknown>): [string, string][] {
  return Object.entries(record).map(([key, v]) => [key, valueText(key, v)]);
}

/** The Resources card's rows: registers, spills, shared memory, launch configuration, launches,
 * then the grids (the first 6, and how many in all past that) and the args when there are any. */
export function resourceRows(k: ExplainKernel): [string, string][] {
  const rows: [string, string][] = [
    ["registers", k.registers === null ? "–" : `${k.registers} / thread`],
    ["spills", bytes(k.spills)],
    ["shared memory", bytes(k.shared_bytes)],
    ["warps · stages · ctas", `${k.num_warps ?? "–"} · ${k.num_stages ?? "–"} · ${k.num_ctas ?? "–"}`],
    ["launches", String(k.launches)],
  ];
  if (k.grids.length) {
    const shown = k.grids.slice(0, 6).map((g) => `(${g.join(", ")})`).join(" ");
    rows.push(["grids", k.grids.length > 6 ? `${shown} … ${k.grids.length} in all` : shown]);
  }
  if (k.args.length) rows.push(["args", k.args.join(", ")]);
  return rows;
}

/** The SASS mix flattened to (name, count): nested groups (tensor_core_ops, global_loads, ...) as
 * "group width". The JSON has both plain counts and such groups, whatever types.ts says. Zero
 * counts and the "total" left out; largest first (ties keep the document's order). */
export function mixEntries(mix: Record<string, unknown>): [string, number][] {
  const out: [string, number][] = [];
  for (const [key, value] of Object.entries(mix)) {
    if (key === "total") continue;
    if (typeof value === "number") out.push([key, value]);
    else if (value && typeof value === "object") {
      for (const [sub, n] of Object.entries(value as Record<string, unknown>)) {
        if (typeof n === "number") out.push([`${key} ${sub}`, n]);
      }
    }
  }
  return out.filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]);
}

/** The mix's instruction total, when the document has one. */
export function sassTotal(mix: Record<string, unknown>): number | null {
  return typeof mix.total === "number" ? mix.total : null;
}

/** The SASS card's bars: the 12 largest classes, each as wide (CSS %) as its share of the largest,
 * at least 1%. */
export function sassBars(mix: Record<string, unknown>): { name: string; count: number; width: string }[] {
  const entries = mixEntries(mix).slice(0, 12);
  const top = entries.length ? entries[0][1] : 1;
  return entries.map(([name, n]) => ({ name, count: n, width: `${Math.max(1, (n / top) * 100)}%` }));
}

/** The order stages run through the compiler; other keys follow in the document's order. */
const STAGE_ORDER = ["ttir", "ttgir", "llir", "ptx", "sass", "amdgcn"];

export function orderedStages(stageText: Record<string, unknown>): string[] {
  const keys = Object.keys(stageText);
  const known = STAGE_ORDER.filter((k) => keys.includes(k));
  return [...known, ...keys.filter((k) => !STAGE_ORDER.includes(k))];
}

/** The stage shown first: TTGIR when there is one, else the first. */
export function firstStage(names: string[]): string {
  return names.includes("ttgir") ? "ttgir" : names[0];
}

/** Source lines some stage has IR for (the source pane's gutter marks). */
export function sourceLinesWithIr(stageText: ExplainKernel["stage_text"]): Set<number> {
  const withIr = new Set<number>();
  for (const stage of Object.values(stageText)) for (const s of stage.src) if (s !== null) withIr.add(s);
  return withIr;
}
