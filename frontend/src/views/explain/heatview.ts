// Drawing a sampled kernel's heat in the Explain view: the heat cell at the head of each line (of
// the source and of each stage), the stall breakdown a hovered line shows, and the "hottest lines"
// card. What to draw comes from heat.ts; every text from the report (source, advice, findings) is
// set as text, never parsed as HTML.
import { h, placeTip } from "../../dom";
import { fmt, fmtShare } from "../../format";
import type { ExplainKernel, KernelHeat } from "../../types";
import { breakdown, breakdownTitle, heatCell, type Breakdown, hotSummary, hottestRows, irLineNote, maxCount, sourceCounts, sourceLineText } from "./heat";

/** A line's heat cell: the count on the ramp's colour, blank for a line without samples. Every
 * line gets one, so the panes' columns stay aligned. */
export function heatCellEl(count: number, max: number, kernelSamples: number): HTMLElement {
  const cell = heatCell(count, max, kernelSamples);
  const el = document.createElement("b");
  el.className = cell?.dark ? "heat dark" : "heat";
  if (cell) {
    el.textContent = cell.text;
    el.title = cell.title;
    el.style.background = cell.colour;
    el.dataset.samples = String(count);
  }
  return el;
}

/** Put a heat cell at the head of each line of the source pane (codeBlock's `.ln` spans). */
export function addSourceHeat(pre: HTMLPreElement, heat: KernelHeat): void {
  const counts = sourceCounts(heat);
  const max = maxCount(counts.values());
  pre.classList.add("exp-heat");
  for (const el of pre.querySelectorAll<HTMLElement>(":scope > .ln")) {
    el.prepend(heatCellEl(counts.get(Number(el.dataset.line)) ?? 0, max, heat.samples));
  }
}

/** Where a hovered line is: a source line, or a stage's IR line (with the source line it came
 * from, null when it has none). */
export type Hovered = { src: number } | { src: number | null; stage: string; line: number };

/** The stall breakdown beside the pointer: the hovered line's source line, its samples, the share
 * that issued nothing and its stalls; for an IR line, first what its own count means. */
export class HeatTip {
  readonly el = h("div", { class: "tip exp-tip", hidden: true, role: "tooltip" });
  private key = "";

  constructor(
    private readonly k: ExplainKernel,
    private readonly heat: KernelHeat,
    /** An IR line's count in its stage (0 when none). */
    private readonly irCount: (stage: string, line: number) => number,
  ) {}

  /** Follow the pointer over `pre`; `where` says which line an element of it is. */
  watch(pre: HTMLElement, where: (line: HTMLElement) => Hovered | null): void {
    pre.addEventListener("mousemove", (e) => {
      const ln = (e.target as HTMLElement).closest<HTMLElement>(".ln");
      const at = ln && pre.contains(ln) ? where(ln) : null;
      if (!at || !this.fill(at)) return this.hide();
      placeTip(this.el, e);
    });
    pre.addEventListener("mouseleave", () => this.hide());
  }

  hide(): void {
    this.el.hidden = true;
    this.key = "";
  }

  /** Fill the tip for a line (kept when the pointer stays on it); false when there is nothing to
   * say: no samples on its source line, nor (for a stage by PC) on its own instructions. */
  private fill(at: Hovered): boolean {
    const key = "stage" in at ? `${at.stage}:${at.line}` : `src:${at.src}`;
    if (key === this.key) return true;
    const b = at.src === null ? null : breakdown(this.heat, at.src);
    const stage = "stage" in at ? at : null;
    const own = stage ? this.irCount(stage.stage, stage.line) : 0;
    const byPc = stage !== null && this.heat.by[stage.stage] === "PC";
    if (!b && !(byPc && own > 0)) return false;
    this.key = key;
    this.el.dataset.line = b ? String(b.line) : "";
    this.el.replaceChildren(
      stage ? h("div", { class: "exp-tip-ir" }, irLineNote(stage.stage, stage.line, own, this.heat.by[stage.stage], this.heat.samples)) : "",
      ...(b ? this.breakdownParts(b) : [h("div", {}, "no source line")]),
    );
    return true;
  }

  private breakdownParts(b: Breakdown): HTMLElement[] {
    const rows = b.stalls.map((s) => h("tr", { "data-stall": s.reason }, h("td", {}, s.reason), h("td", {}, fmt(s.count)), h("td", {}, fmtShare(s.share))));
    if (b.rest) rows.push(h("tr", { class: "exp-dim" }, h("td", {}, `${b.rest.reasons} more`), h("td", {}, fmt(b.rest.count)), h("td", {}, fmtShare(b.rest.share))));
    return [
      h("div", { class: "exp-tip-title" }, breakdownTitle(b, this.k.name)),
      h("div", {}, `not issued: ${fmtShare(b.notIssuedShare)} (${fmt(b.notIssued)})`),
      h("table", { class: "exp-tip-stalls" }, h("tbody", {}, ...rows)),
    ];
  }
}

/** The "hottest lines" card: per line its samples, share, dominant stall, the advice and explain's
 * findings there; a click on a line of this file selects it in the source and the stages. */
export function hotLinesCard(k: ExplainKernel, onLine: (line: number) => void): HTMLElement | null {
  const rows = hottestRows(k);
  if (!rows.length) return null;
  const list = h("ol", { class: "exp-hotlist" });
  for (const row of rows) {
    const quote = row.here ? sourceLineText(k.source_text, row.line) : "";
    list.append(
      h(
        "li",
        {
          "data-line": row.line,
          "data-stall": row.stall ?? "",
          class: row.here ? "link" : "",
          title: row.here ? `show line ${row.line} in the source and the stages` : "a line of another file (inlined here)",
          onclick: () => row.here && onLine(row.line),
        },
        h("div", {}, h("b", {}, `line ${row.line}`), " ", h("span", { class: "exp-hotsum" }, hotSummary(row)), quote ? h("code", { class: "exp-hotcode" }, quote) : null),
        row.meaning ? h("div", { class: "exp-advice" }, `it ${row.meaning}; try: ${row.change}`) : null,
        ...row.lints.map((lint) => h("div", { class: "exp-hotlint" }, `explain: ${lint}`)),
      ),
    );
  }
  return h("div", { class: "card exp-hot", "data-card": "hot" }, h("h4", {}, `Hottest lines · ${fmt(k.heat?.samples ?? 0)} samples`), list);
}
