// The table of scopes inside kernels (pl.scope spans per CTA and warp, or per program), below the
// timeline: how long each scope takes per instance and per lane, so a scope that some warps or
// CTAs spend much longer in (imbalance) stands out. Clicking a row highlights its spans; the
// numbers come from model.ts scopeTable.
import { h } from "../../dom";
import { fmt, fmtNs } from "../../format";
import { scopeTable, spanColour, type TimelineModel } from "./model";
import type { Highlight } from "./painter";

/** Imbalance (max / median of one instance) worth a colour. */
const UNEVEN = 1.5;

const HEADS: [string, string][] = [
  ["kernel", "the kernel the scope ran in"],
  ["scope", "pl.scope name"],
  ["instances", "spans of this scope, over all CTAs and warps (programs)"],
  ["lanes", "CTA warps (programs) that ran it"],
  ["min", "shortest instance"],
  ["median", "median instance"],
  ["max", "longest instance"],
  ["max/median", "imbalance: the longest instance over the median one"],
  ["lane min", "per lane, the time spent in the scope: the least"],
  ["lane median", "per lane, the time spent in the scope: the median"],
  ["lane max", "per lane, the time spent in the scope: the most"],
];

/** The panel, or null when the trace has no spans inside kernels. `onPick` hears the row clicked
 * (null when the highlighted row is clicked again); `note` is said beside the title (in level of
 * detail: that merged blocks are left out). */
export function scopePanel(m: TimelineModel, onPick: (pick: Highlight | null) => void, note = ""): HTMLElement | null {
  const stats = scopeTable(m);
  if (!stats.length) return null;
  const body = h("tbody");
  let picked: HTMLTableRowElement | null = null;
  for (const s of stats) {
    const uneven = s.imbalance !== null && s.imbalance >= UNEVEN;
    const row = h(
      "tr",
      { "data-kernel": s.kernel, "data-scope": s.scope, title: "click: highlight this scope's spans" },
      h("td", { class: "name" }, s.kernel),
      h("td", { class: "name" }, h("i", { class: "tl-swatch", style: `background: ${spanColour(s.scope)}` }), s.scope),
      h("td", {}, fmt(s.instances)),
      h("td", {}, fmt(s.lanes)),
      h("td", {}, fmtNs(s.min)),
      h("td", {}, fmtNs(s.median)),
      h("td", {}, fmtNs(s.max)),
      h("td", { class: uneven ? "tl-uneven" : "" }, s.imbalance === null ? "–" : `${s.imbalance.toFixed(2)}×`),
      h("td", {}, fmtNs(s.laneMin)),
      h("td", {}, fmtNs(s.laneMedian)),
      h("td", {}, fmtNs(s.laneMax)),
    );
    row.addEventListener("click", () => {
      picked?.classList.remove("sel");
      if (picked === row) {
        picked = null;
        onPick(null);
        return;
      }
      picked = row;
      row.classList.add("sel");
      onPick({ kernel: s.kernel, nameId: s.nameId });
    });
    body.append(row);
  }
  const head = h("tr", {}, ...HEADS.map(([label, title], k) => h("th", { class: k < 2 ? "name" : "", title }, label)));
  return h(
    "div",
    { class: "card tl-scopes", "data-rows": stats.length },
    h("div", { class: "tl-scopes-title" }, h("b", {}, "Scopes inside kernels"), note && h("span", { class: "tl-hint", "data-note": "lod" }, note), h("span", { class: "tl-hint" }, "click a row to highlight its spans")),
    h("table", { class: "grid tl-scope-table" }, h("thead", {}, head), body),
  );
}
