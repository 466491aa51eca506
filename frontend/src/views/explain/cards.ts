// The Explain view's summary cards: a kernel's resources (registers, spills, shared memory,
// launch configuration, occupancy, profile numbers), its SASS instruction mix as bars, and its
// findings (clicking one selects its source line).
import { h } from "../../dom";
import { fmt } from "../../format";
import type { ExplainKernel } from "../../types";
import { recordRows, resourceRows, sassBars, sassTotal } from "./model";

function metaList(rows: [string, string][]): HTMLElement {
  const dl = h("dl", { class: "meta" });
  for (const [k, v] of rows) dl.append(h("dt", {}, k), h("dd", {}, v));
  return dl;
}

/** Resources, occupancy and (when present) profile numbers: separate small cards, side by side,
 * so the summary stays short and the code panes stay near the top. */
export function resourceCards(k: ExplainKernel): HTMLElement[] {
  const out = [h("div", { class: "card exp-res", "data-card": "resources" }, h("h4", {}, "Resources"), metaList(resourceRows(k)))];
  out.push(
    h(
      "div",
      { class: "card exp-occ", "data-card": "occupancy" },
      h("h4", {}, "Occupancy"),
      k.occupancy
        ? metaList(recordRows(k.occupancy))
        : h("p", { class: "exp-dim" }, "not computed"),
    ),
  );
  if (k.profile) {
    out.push(
      h(
        "div",
        { class: "card exp-prof", "data-card": "profile" },
        h("h4", {}, "Profile"),
        metaList(recordRows(k.profile)),
      ),
    );
  }
  return out;
}

export function sassCard(k: ExplainKernel): HTMLElement {
  const card = h("div", { class: "card exp-sass", "data-card": "sass" }, h("h4", {}, "SASS mix"));
  const mix = k.sass as Record<string, unknown> | null;
  if (!mix) {
    card.append(h("p", { class: "exp-dim" }, "no SASS for this target"));
    return card;
  }
  const total = sassTotal(mix);
  if (total !== null) card.append(h("p", { class: "exp-dim" }, `${fmt(total)} instructions`));
  const bars = sassBars(mix);
  const list = h("ul", { class: "exp-bars" });
  for (const { name, count, width } of bars) {
    const bar = h("span", { class: "exp-bar" });
    bar.style.width = width;
    list.append(h("li", { "data-class": name }, h("span", { class: "exp-barname" }, name), h("span", { class: "exp-bartrack" }, bar), h("span", { class: "exp-barn" }, fmt(count))));
  }
  card.append(bars.length ? list : h("p", { class: "exp-dim" }, "no instructions counted"));
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
