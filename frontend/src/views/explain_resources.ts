// The Explain view's summary cards: a kernel's resources (registers, spills, shared memory,
// launch configuration, occupancy, profile numbers), its SASS instruction mix as bars, and its
// findings (clicking one selects its source line).
import { fmt, fmtNs, h } from "../dom";
import type { ExplainKernel } from "../types";

function bytes(n: number | null): string {
  if (n === null) return "–";
  if (n >= 1024 * 1024) return `${(n / 1024 / 1024).toPrecision(3)} MiB`;
  if (n >= 1024) return `${(n / 1024).toPrecision(3)} KiB`;
  return `${n} B`;
}

/** A value of a free-form record (occupancy, profile) in a line: numbers formatted, fractions of
 * "fraction"/"util" as percentages, nested records as `key value, ...`. */
function valueText(key: string, value: unknown): string {
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

function metaList(rows: [string, string][]): HTMLElement {
  const dl = h("dl", { class: "meta" });
  for (const [k, v] of rows) dl.append(h("dt", {}, k), h("dd", {}, v));
  return dl;
}

/** Resources, occupancy and (when present) profile numbers: separate small cards, side by side,
 * so the summary stays short and the code panes stay near the top. */
export function resourceCards(k: ExplainKernel): HTMLElement[] {
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
  const out = [h("div", { class: "card exp-res", "data-card": "resources" }, h("h4", {}, "Resources"), metaList(rows))];
  out.push(
    h(
      "div",
      { class: "card exp-occ", "data-card": "occupancy" },
      h("h4", {}, "Occupancy"),
      k.occupancy
        ? metaList(Object.entries(k.occupancy).map(([key, v]) => [key, valueText(key, v)]))
        : h("p", { class: "exp-dim" }, "not computed"),
    ),
  );
  if (k.profile) {
    out.push(
      h(
        "div",
        { class: "card exp-prof", "data-card": "profile" },
        h("h4", {}, "Profile"),
        metaList(Object.entries(k.profile).map(([key, v]) => [key, valueText(key, v)])),
      ),
    );
  }
  return out;
}

/** The SASS mix flattened to (name, count): nested groups (tensor_core_ops, global_loads, ...) as
 * "group width". The JSON has both plain counts and such groups, whatever types.ts says. */
function mixEntries(mix: Record<string, unknown>): [string, number][] {
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

export function sassCard(k: ExplainKernel): HTMLElement {
  const card = h("div", { class: "card exp-sass", "data-card": "sass" }, h("h4", {}, "SASS mix"));
  const mix = k.sass as Record<string, unknown> | null;
  if (!mix) {
    card.append(h("p", { class: "exp-dim" }, "no SASS for this target"));
    return card;
  }
  const total = typeof mix.total === "number" ? mix.total : null;
  if (total !== null) card.append(h("p", { class: "exp-dim" }, `${fmt(total)} instructions`));
  const entries = mixEntries(mix).slice(0, 12);
  const top = entries.length ? entries[0][1] : 1;
  const list = h("ul", { class: "exp-bars" });
  for (const [name, n] of entries) {
    const bar = h("span", { class: "exp-bar" });
    bar.style.width = `${Math.max(1, (n / top) * 100)}%`;
    list.append(h("li", { "data-class": name }, h("span", { class: "exp-barname" }, name), h("span", { class: "exp-bartrack" }, bar), h("span", { class: "exp-barn" }, fmt(n))));
  }
  card.append(entries.length ? list : h("p", { class: "exp-dim" }, "no instructions counted"));
  return card;
}

export function findingsCard(k: ExplainKernel, onLine: (line: number) => void): HTMLElement {
  const card = h("div", { class: "card exp-findings", "data-card": "findings" }, h("h4", {}, `Findings (${k.findings.length})`));
  if (!k.findings.length) {
    card.append(h("p", { class: "exp-dim" }, "no findings"));
    return card;
  }
  const list = h("ul", { class: "exp-flist" });
  for (const f of k.findings) {
    const line = f.line;
    list.append(
      h(
        "li",
        {
          "data-kind": f.kind,
          "data-line": line ?? "",
          class: line !== null ? "link" : "",
          onclick: () => line !== null && onLine(line),
        },
        h("span", { class: `sev-${f.severity}` }, f.severity),
        " ",
        h("b", {}, f.kind),
        line !== null ? ` line ${line}` : " (kernel)",
        h("div", { class: "exp-fmsg" }, f.message),
      ),
    );
  }
  card.append(list);
  return card;
}
