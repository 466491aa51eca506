// The profile view's advice panel: what `deuteron view --advise` prints for the profile (computed
// by the same Python, deuteron/render/web/advice.py), a finding per block, a row of evidence per
// line. A row that names a frame, a sampled line or a kernel in this page's tree is a button that
// selects it (flame graph, table, details and the address follow, as a click on the frame does).
// The pure parts (what a row leads to, the summary line) are tested under Node (advice.test.ts).
import { h } from "../../dom";
import type { AdviceFinding } from "../../types";

type Row = AdviceFinding["evidence"][number];

/** The node a row selects in a tree of `n` nodes, -1 where it names none there. */
export function rowTarget(row: Row, n: number): number {
  return row.node !== null && Number.isInteger(row.node) && row.node > 0 && row.node < n ? row.node : -1;
}

/** A row's tooltip: what a click does, or why it does nothing. */
export function rowTitle(row: Row, n: number): string {
  if (rowTarget(row, n) >= 0) return row.names === "line" ? "select this source line's frame" : row.names === "kernel" ? "select this kernel" : "select this frame";
  if (row.names === "rank") return "a rank: see the timeline for its lanes";
  return "names no frame of this tree (a total, a collective's size, or a frame cut by the threshold)";
}

/** The panel's summary line: "advice: 3 findings (idle, backward, copies)", or that there is none. */
export function adviceSummary(findings: AdviceFinding[]): string {
  if (!findings.length) return "advice: nothing to flag";
  const kinds = [...new Set(findings.map((f) => f.kind))].join(", ");
  return `advice: ${findings.length} finding${findings.length === 1 ? "" : "s"} (${kinds})`;
}

/** The panel (closed at first: the flame graph stays near the top), "loading…" until `fill` gives
 * it the findings (asked for after the first paint: they take seconds on a large tree). `pick`
 * selects a node. */
export class AdvicePanel {
  readonly el: HTMLDetailsElement;
  private summary = h("summary", {}, "advice: loading…");
  private buttons: HTMLButtonElement[] = [];
  private selected = -1;

  constructor(
    private readonly n: number,
    private readonly pick: (node: number) => void,
  ) {
    this.el = h("details", { class: "card profile-advice", "data-state": "loading" }, this.summary);
  }

  /** Show the findings. */
  fill(findings: AdviceFinding[]): void {
    const { n, pick } = this;
    this.buttons = [];
    const blocks = findings.map((f, k) =>
      h(
        "div",
        { class: "advice-finding", "data-kind": f.kind, "data-finding": k },
        h("p", { class: "advice-title" }, h("b", {}, `[${f.kind}]`), ` ${f.title}`),
        h(
          "ul",
          { class: "advice-rows" },
          ...f.evidence.map((row) => {
            const node = rowTarget(row, n);
            const line = h("code", {}, row.line);
            if (node < 0) return h("li", { class: "advice-row inert", title: rowTitle(row, n) }, line);
            const button = h("button", { type: "button", class: "advice-row", "data-node": node, "data-names": row.names ?? "", title: rowTitle(row, n), onclick: () => pick(node) }, line);
            this.buttons.push(button);
            return h("li", {}, button);
          }),
        ),
      ),
    );
    const empty = findings.length ? null : h("p", { class: "advice-none" }, "nothing above the thresholds each analysis states (deuteron view --advise says the same)");
    this.summary.textContent = adviceSummary(findings);
    this.el.replaceChildren(this.summary, ...blocks, ...(empty ? [empty] : []));
    this.el.dataset.state = "ready";
    this.el.dataset.findings = String(findings.length);
    this.mark(this.selected);
  }

  /** The findings could not be had: say so in one line. */
  failed(why: string): void {
    this.summary.textContent = `advice: could not be computed (${why})`;
    this.el.dataset.state = "failed";
  }

  /** Mark the rows that name the selected node (-1: none). */
  mark(node: number): void {
    this.selected = node;
    for (const b of this.buttons) b.classList.toggle("sel", Number(b.dataset.node) === node);
  }
}
