// The Accesses view's side panels: the clicked cell's details (its element range, which programs
// touched it with which kind/lanes/line, and the kernel source with those lines highlighted), and
// the findings table of the check reports.
import { codeBlock, h } from "../../dom";
import { fmt } from "../../format";
import type { CheckData, LaunchData, TensorView } from "../../types";
import type { TensorCard } from "./card";
import { cellRange, findingRows, KIND_NAMES, linesByFile, programOf, sliceIndex, touchesOf, type EdgeCell, type Filter, type Touch } from "./model";

/** Rows past this are summarised: a broadcast operand can be read by every program. */
const MAX_ROWS = 300;

function rangeMeta(view: TensorView, slice: number, row: number, col: number): HTMLElement {
  const { r0, r1, c0, c1 } = cellRange(view, row, col);
  const dl = h("dl", { class: "meta" });
  const add = (k: string, v: string): void => void dl.append(h("dt", {}, k), h("dd", {}, v));
  add("tensor", `${view.name} ${view.dtype} [${view.shape.join(", ")}]`);
  if (view.lead.length) add("slice", `${slice} = [${sliceIndex(view.lead, slice).join(", ")}]`);
  const span = (a: number, b: number): string => (a === b ? String(a) : `${a}..${b}`);
  if (view.shape.length > 1) add("rows", span(r0, r1));
  add(view.shape.length > 1 ? "cols" : "elements", span(c0, c1));
  add("cell", `${row}, ${col} (bin ${view.row_step}×${view.col_step} elements)`);
  return dl;
}

/** Fill the details panel for a bin of a card. `onProgram` selects a program in the toolbar. */
export function showDetails(
  panel: HTMLElement,
  launch: LaunchData,
  card: TensorCard,
  row: number,
  col: number,
  filter: Filter,
  onProgram: (p: number) => void,
): void {
  const view = card.view;
  const touches = touchesOf(card.cells, row * view.bin_cols + col, filter);
  panel.dataset.cell = `${row},${col}`;
  panel.dataset.tensor = view.name;
  panel.dataset.touches = String(touches.length);
  const programs = new Set(touches.map((t) => t.program));
  const lanes = touches.reduce((s, t) => s + t.lanes, 0);
  const table = h(
    "table",
    { class: "grid acc-touch" },
    h("tr", {}, h("th", { class: "name" }, "program (x,y,z)"), h("th", { class: "name" }, "kind"), h("th", {}, "lanes"), h("th", {}, "line")),
  );
  for (const t of touches.slice(0, MAX_ROWS)) {
    const xyz = launch.programs[t.program] ?? [t.program, 0, 0];
    const site = t.site >= 0 ? launch.sites[t.site] : undefined;
    table.append(
      h(
        "tr",
        {
          "data-program": xyz.join(","),
          "data-line": site ? site.line : "",
          "data-kind": KIND_NAMES[t.kind] ?? String(t.kind),
          class: "link",
          title: "select this program",
          onclick: () => onProgram(t.program),
        },
        h("td", { class: "name" }, `${t.program} · (${xyz.join(", ")})`),
        h("td", { class: "name" }, KIND_NAMES[t.kind] ?? String(t.kind)),
        h("td", {}, fmt(t.lanes)),
        h("td", {}, site ? String(site.line) : "?"),
      ),
    );
  }
  panel.replaceChildren(
    h("h3", {}, `${view.name} · cell ${row}, ${col}`),
    rangeMeta(view, card.slice, row, col),
    h("p", { class: "acc-dim" }, touches.length ? `${programs.size} program(s), ${fmt(lanes)} lanes` : "No recorded access in this cell (for the kinds shown)."),
  );
  if (touches.length) panel.append(h("div", { class: "acc-tablewrap" }, table));
  if (touches.length > MAX_ROWS) panel.append(h("p", { class: "acc-dim" }, `${touches.length - MAX_ROWS} more rows not shown`));
  panel.append(...sourceBlocks(launch, touches));
}

/** Fill the details panel for a cell past the tensor's edge: the out-of-bounds lanes landed
 * there and the findings they belong to (program, line, message; a program row selects it), and
 * the source lines those findings name. */
export function showEdgeDetails(
  panel: HTMLElement,
  launch: LaunchData,
  card: TensorCard,
  row: number,
  col: number,
  edge: EdgeCell | undefined,
  onProgram: (p: number) => void,
): void {
  const view = card.view;
  panel.dataset.cell = `${row},${col}`;
  panel.dataset.tensor = view.name;
  panel.dataset.touches = "0";
  panel.dataset.oob = String(edge?.lanes ?? 0);
  const side = [row < 0 ? "above row 0" : row >= view.bin_rows ? `below row ${view.rows - 1}` : "", col < 0 ? "left of column 0" : col >= view.bin_cols ? `right of column ${view.cols - 1}` : ""];
  panel.replaceChildren(
    h("h3", {}, `${view.name} · past the edge`),
    h("p", { class: "acc-dim" }, `${side.filter(Boolean).join(", ")} of ${view.name} [${view.shape.join(", ")}]`),
  );
  if (!edge) {
    panel.append(h("p", { class: "acc-dim" }, "No out-of-bounds lane of a finding lands here."));
    return;
  }
  panel.append(h("p", {}, `${fmt(edge.lanes)} out-of-bounds lane(s) of ${edge.findings.length} finding(s) land here`));
  const table = h("table", { class: "grid acc-touch" }, h("tr", {}, h("th", { class: "name" }, "program (x,y,z)"), h("th", { class: "name" }, "kind"), h("th", {}, "line"), h("th", { class: "name" }, "message")));
  const lines = new Set<number>();
  for (const f of edge.findings) {
    const p = programOf(launch, f.program);
    if (f.line !== null) lines.add(f.line);
    table.append(
      h(
        "tr",
        { "data-program": f.program ? f.program.join(",") : "", "data-kind": f.kind, class: p >= 0 ? "link" : null, onclick: () => p >= 0 && onProgram(p) },
        h("td", { class: "name" }, f.program ? `${p >= 0 ? `${p} · ` : ""}(${f.program.join(", ")})` : "–"),
        h("td", { class: `name sev-${f.severity}` }, f.kind),
        h("td", {}, f.line !== null ? String(f.line) : "?"),
        h("td", { class: "name acc-msgcol" }, f.message),
      ),
    );
  }
  panel.append(h("div", { class: "acc-tablewrap" }, table));
  const text = launch.sources[launch.file];
  if (text !== undefined && lines.size) {
    const pre = codeBlock(text, 1, { class: "code acc-src", "data-source": launch.file });
    for (const line of lines) pre.querySelector(`[data-line="${line}"]`)?.classList.add("hl");
    panel.append(h("div", { class: "acc-file", title: launch.file }, launch.file), pre);
  }
}

/** The kernel source file(s) the touching sites point to, their lines highlighted; the first
 * highlighted line is scrolled into view once the block is in the page. */
function sourceBlocks(launch: LaunchData, touches: Touch[]): HTMLElement[] {
  const out: HTMLElement[] = [];
  for (const [file, lines] of linesByFile(launch, touches)) {
    const text = launch.sources[file];
    out.push(h("div", { class: "acc-file", title: file }, file));
    if (text === undefined) {
      out.push(h("p", { class: "acc-dim" }, "source not in the record"));
      continue;
    }
    const pre = codeBlock(text, 1, { class: "code acc-src", "data-source": file });
    let firstHl: HTMLElement | null = null;
    for (const line of [...lines].sort((a, b) => a - b)) {
      const el = pre.querySelector<HTMLElement>(`[data-line="${line}"]`);
      if (!el) continue;
      el.classList.add("hl");
      firstHl ??= el;
    }
    if (firstHl) {
      const target = firstHl;
      requestAnimationFrame(() => (pre.scrollTop = Math.max(0, target.offsetTop - pre.offsetTop - 40)));
    }
    out.push(pre);
  }
  return out;
}

/** Index-wide findings: every check report's findings, or, with none, those the launch's tensors
 * carry. Rows carry data-kind; clicking a row of the launch shown selects its cell. */
const MAX_FINDING_ROWS = 500;

export function findingsTable(
  checks: CheckData[],
  launch: LaunchData | null,
  pick: (kernel: string, tensor: string, index: number[] | null, message: string) => void,
): HTMLElement {
  const rows = findingRows(checks, launch);
  const wrap = h("div", { class: "acc-findings" }, h("h3", {}, `Findings (${rows.length})`));
  if (!rows.length) {
    wrap.append(h("p", { class: "empty" }, checks.length ? "The check reports found nothing." : "No check report given."));
    return wrap;
  }
  const cols = ["kind", "severity", "kernel", "tensor", "index", "program", "line", "message"];
  const table = h("table", { class: "grid acc-ftable" }, h("tr", {}, ...cols.map((c) => h("th", { class: "name" }, c))));
  // Findings are grouped by site already; thousands only come from many reports. Cap the DOM.
  const shown = rows.slice(0, MAX_FINDING_ROWS);
  for (const r of shown) {
    table.append(
      h(
        "tr",
        { "data-kind": r.kind, "data-severity": r.severity, class: "link", onclick: () => r.tensor && pick(r.kernel, r.tensor, r.index, r.message) },
        h("td", { class: "name" }, r.kind),
        h("td", { class: `name sev-${r.severity}` }, r.severity),
        h("td", { class: "name" }, r.kernel),
        h("td", { class: "name" }, r.tensor ?? "–"),
        h("td", { class: "name" }, r.index ? `[${r.index.join(", ")}]` : "–"),
        h("td", { class: "name" }, r.program ? `(${r.program.join(", ")})` : "–"),
        h("td", {}, r.line !== null ? String(r.line) : "–"),
        h("td", { class: "name acc-msgcol" }, r.message),
      ),
    );
  }
  wrap.append(h("div", { class: "acc-tablewrap wide" }, table));
  if (rows.length > shown.length) {
    wrap.append(h("p", { class: "empty" }, `${rows.length - shown.length} more findings not listed; deuteron check's report has them all.`));
  }
  return wrap;
}
