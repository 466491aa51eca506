// The picked frame's details under the flame graph: its name and type, its values in the chosen
// column, and, for a kernel an explain report covers, the link to its explain view (a canvas
// tooltip cannot hold a link, so the one-click way there from the flame graph is here). In a
// sampled profile, the frame's stall breakdown (its top reasons with their samples and shares,
// adding up to 100%) and, for a hot line of a kernel no explain report on the page covers, the
// command that makes one.
import { h } from "../../dom";
import { fmt } from "../../format";
import type { ExplainLink } from "../../links";
import { longNamesOf, nameOf, typeOf, type ProfileModel } from "./model";
import { countText, explainCommand, sampledPlace, stallBreakdown } from "./stalls";
import { explainAnchor } from "./table";

export class PickDetails {
  readonly el = h("div", { class: "flame-details", hidden: true, role: "status" });
  private node = -1;

  /** `explained`: whether the page holds any explain report (the note says which is missing). */
  constructor(
    private readonly m: ProfileModel,
    private column: number,
    private readonly linkOf: (node: number) => ExplainLink | null,
    private readonly explained = false,
  ) {}

  /** The width column changed: the value shown follows it. */
  setColumn(column: number): void {
    this.column = column;
    this.show(this.node);
  }

  /** Say what node was picked (ROOT, or -1, clears the strip). */
  show(node: number): void {
    this.node = node;
    if (node <= 0) {
      this.el.hidden = true;
      this.el.replaceChildren();
      delete this.el.dataset.node;
      return;
    }
    const value = this.m.vals[this.column]?.[node];
    const link = this.linkOf(node);
    this.el.dataset.node = String(node);
    this.el.replaceChildren(
      h("b", { class: "flame-details-name" }, nameOf(this.m, node)),
      h("span", { class: "flame-details-meta" }, ` ${typeOf(this.m, node)} · ${this.m.data.columns[this.column]} ${fmt(value === undefined || Number.isNaN(value) ? null : value)}`),
    );
    if (link) this.el.append(explainAnchor(link));
    const { full, raw } = longNamesOf(this.m, node);  // a C++ kernel: its whole name, and as recorded
    if (full) this.el.append(h("div", { class: "flame-details-full" }, full));
    if (raw) this.el.append(h("div", { class: "flame-details-raw", title: "as recorded" }, raw));
    if (this.m.stalls) this.el.append(this.stalls(node));
    if (!link) {
      const note = this.explainNote(node);
      if (note) this.el.append(note);
    }
    this.el.hidden = false;
  }

  /** The frame's stall breakdown: a row per top reason, the rest in one row, the total. */
  private stalls(node: number): HTMLElement {
    const s = this.m.stalls!;
    const b = stallBreakdown(s, node);
    if (!b) return h("div", { class: "stall-breakdown", "data-state": "none" }, "stalls: no PC sample stalled under this frame, so no stall share can be computed");
    const rows = b.parts.map((p) =>
      h(
        "tr",
        { "data-reason": p.reason || "other", title: s.meanings[p.reason] ? `${p.word}: ${s.meanings[p.reason].meaning}; try: ${s.meanings[p.reason].change}` : null },
        h("td", { class: "reason" }, p.word),
        h("td", { class: "num" }, countText(p.count)),
        h("td", { class: "num share" }, p.share),
        h("td", { class: "bar" }, barOf(p.tenths)),
      ),
    );
    const top = b.parts[0];
    const meaning = top.reason && s.meanings[top.reason] ? h("p", { class: "stall-meaning" }, h("b", {}, top.word), `: it ${s.meanings[top.reason].meaning}; try: ${s.meanings[top.reason].change}`) : null;
    const issued = b.notIssued === null ? "samples not issued: not recorded" : `${countText(b.notIssued)} of them not issued (${b.notIssuedShare ?? "share cannot be computed"}): the warp issued nothing`;
    return h(
      "div",
      { class: "stall-breakdown", "data-state": "ready", "data-total": b.total },
      h(
        "table",
        { class: "grid stall-table" },
        h("thead", {}, h("tr", {}, h("th", {}, "stall reason"), h("th", { class: "num" }, "samples"), h("th", { class: "num" }, "share"), h("th", {}, ""))),
        h("tbody", {}, ...rows),
        h("tfoot", {}, h("tr", {}, h("td", {}, "all stalls"), h("td", { class: "num" }, countText(b.total)), h("td", { class: "num share" }, "100.0%"), h("td", {}, ""))),
      ),
      h("p", { class: "stall-issued" }, issued),
      b.note ? h("p", { class: "stall-note" }, b.note) : null,
      meaning,
    );
  }

  /** For a frame of a sampled kernel with source lines that no explain report on the page covers:
   * how to make one, so that the next page opens this line in the Explain view in one click. */
  private explainNote(node: number): HTMLElement | null {
    const m = this.m;
    const place = sampledPlace((i) => m.data.raw_names?.[m.data.name_id[i]] ?? nameOf(m, i), m.parent, node, (i) => typeOf(m, i) === "kernel" && hasLineChild(m, i));
    if (!place) return null;
    const command = explainCommand(m.data.source, place.kernel, m.data.sampling?.program ?? null);
    const what = place.line !== null ? `line ${place.line} of ${place.kernel}` : place.kernel;
    const why = this.explained ? `The explain report on this page does not cover ${place.kernel}` : "This page holds no explain report";
    return h(
      "div",
      { class: "explain-note", "data-kernel": place.kernel, "data-line": place.line },
      `${why}: to open ${what} in the Explain view (its source, IR and SASS with these samples on each line), run `,
      h("code", { class: "explain-command" }, command),
      m.data.sampling?.program ? null : " (the profile does not record its script: put yours in place of YOUR_SCRIPT.py)",
    );
  }
}

/** A kernel frame with a `file:line@kernel` child: a kernel whose samples have source lines. */
function hasLineChild(m: ProfileModel, i: number): boolean {
  for (let k = m.kidStart[i]; k < m.kidStart[i + 1]; k++) if (/:\d+@[^@]+$/.test(nameOf(m, m.kids[k]))) return true;
  return false;
}

/** A share as a bar (tenths of a percent). */
function barOf(tenths: number): HTMLElement {
  const bar = h("span", { class: "stall-bar" });
  bar.style.width = `${tenths / 10}%`;
  return bar;
}
