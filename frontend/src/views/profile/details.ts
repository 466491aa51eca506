// The picked frame's details under the flame graph: its name and type, its values in the chosen
// column, and, for a kernel an explain report covers, the link to its explain view (a canvas
// tooltip cannot hold a link, so the one-click way there from the flame graph is here).
import { h } from "../../dom";
import { fmt } from "../../format";
import type { ExplainLink } from "../../links";
import { longNamesOf, nameOf, typeOf, type ProfileModel } from "./model";
import { explainAnchor } from "./table";

export class PickDetails {
  readonly el = h("div", { class: "flame-details", hidden: true, role: "status" });
  private node = -1;

  constructor(
    private readonly m: ProfileModel,
    private column: number,
    private readonly linkOf: (node: number) => ExplainLink | null,
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
    this.el.hidden = false;
  }
}
