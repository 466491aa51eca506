// The Profile view: toolbar (profile, width column, regex filter, depth limit), metadata card, the
// icicle graph and the tree table below it. The two stay in step: a rectangle clicked selects its
// row, a row clicked outlines its rectangle. A "flat" toggle swaps both for the flat view (every
// name summed over the tree, and a picked name's callers and callees); it and the picked name are
// in the address (hashstate.ts). With an explain report loaded too, a kernel it covers (and each
// of its sampled lines) links to its explain view, in the table and in the picked frame's details.
import "./profile.css";
import { h, picker } from "../../dom";
import { readState, writeState } from "../../hashstate";
import { explainLinker, type ExplainLink } from "../../links";
import type { Index, ProfileData } from "../../types";
import { PickDetails } from "./details";
import { Flame } from "./flame";
import { FlatView } from "./flat";
import { buildModel, columnNote, matchNodes, matchText, metaRows, nameOf, parseDepthLimit, prunedText, withAncestors } from "./model";
import { TreeTable } from "./table";

/** What outlives a switch of profile (several files served): the filter typed, the flat toggle
 * and (from the address, for the first profile shown) the name picked in the flat view. */
interface Kept {
  filter: string;
  flat: boolean;
  frame: string | null;
}

export function mountProfile(root: HTMLElement, index: Index): void {
  const slot = h("div", { class: "profile-slot" });
  const profiles = index.profiles;
  const opened = readState("profile");
  const kept: Kept = { filter: "", flat: opened.flat === "1", frame: opened.frame || null };
  const linkOfName = explainLinker(index.explains);
  const show = (k: number): void => {
    slot.replaceChildren();
    showProfile(slot, profiles[k], profiles.length > 1 ? picker(profiles.map((p) => p.name), k, show, { name: "profile", title: "profile" }) : null, kept, linkOfName);
  };
  root.append(slot);
  show(0);
}

function showProfile(
  root: HTMLElement,
  data: ProfileData,
  profilePicker: HTMLSelectElement | null,
  kept: Kept,
  linkOfName: (name: string) => ExplainLink | null,
): void {
  const m = buildModel(data);
  const linkOf = (i: number): ExplainLink | null => (i > 0 ? linkOfName(nameOf(m, i)) : null);
  const details = new PickDetails(m, data.primary, linkOf);
  const table = new TreeTable(m, { onPick: (i) => (flame.highlight(i), details.show(i)), linkOf });
  const flame: Flame = new Flame(m, { onPick: (i) => (table.select(i), details.show(i)) });

  const error = h("span", { class: "filter-error", role: "alert", hidden: true });
  const filter = h("input", { type: "search", name: "filter", placeholder: "regex filter", spellcheck: "false", "aria-label": "filter by name (regex)" });
  filter.value = kept.filter;
  const matches = h("span", { class: "filter-count", role: "status", hidden: true });
  const note = h("p", { class: "flame-note", role: "status", hidden: true });
  const showNote = (column: number): void => {
    const text = columnNote(m, column);
    note.textContent = text ?? "";
    note.hidden = text === null;
  };
  const depth = h("input", { type: "number", name: "depth", min: 0, max: m.maxDepth, placeholder: String(m.maxDepth), title: "depth limit" });
  depth.style.width = "6ch";
  const reset = h("button", { type: "button", name: "reset-zoom", onclick: () => flame.resetZoom() }, "reset zoom");
  let column = data.primary;
  const columnPicker = picker(data.columns, data.primary, (c) => {
    column = c;
    flame.setColumn(c);
    details.setColumn(c);
    flat?.setColumn(c);
    showNote(c);
  }, { name: "column", title: "flame width" });
  const save = (): void => writeState("profile", { flat: kept.flat ? 1 : null, frame: kept.flat ? kept.frame : null });
  let flat: FlatView | null = null;
  const flameCard = h("div", { class: "profile-flame card" }, note, flame.el, details.el);
  const glance = h(
    "div",
    { class: "profile-summary" },
    ...(data.warnings ?? []).map((w) => h("p", { class: "profile-warning", role: "alert" }, w)),
    // one line, so the flame graph stays near the top: "GPU busy … · kernel time … · top kernels …"
    ...(data.summary?.length ? [h("p", { class: "profile-summary-line" }, data.summary.join(" · "))] : []),
  );
  const flatBox = h("input", { type: "checkbox", name: "flat", checked: kept.flat });
  const showFlat = (on: boolean): void => {
    kept.flat = on;
    if (on && !flat) {
      // Built on first use: summing a 100 000-node tree is not part of the first paint.
      flat = new FlatView(m, { onSelect: (name) => ((kept.frame = name), save()) });
      flat.setColumn(column);
      flat.setFilter(filterRegex());
      if (kept.frame) flat.select(kept.frame);
      root.append(flat.el);
    }
    flameCard.hidden = on;
    table.el.hidden = on;
    reset.hidden = on;
    if (flat) flat.el.hidden = !on;
    root.dataset.flat = String(on);
    save();
  };
  flatBox.addEventListener("change", () => showFlat(flatBox.checked));
  const filterRegex = (): RegExp | null => {
    try {
      return filter.value.trim() ? new RegExp(filter.value.trim(), "i") : null;
    } catch {
      return null;
    }
  };

  let filterTimer = 0;
  const applyFilter = (): void => {
    const text = filter.value.trim();
    kept.filter = filter.value;
    if (!text) {
      error.hidden = true;
      matches.hidden = true;
      flame.setMatch(null);
      table.setFilter(null, null);
      flat?.setFilter(null);
      root.dataset.matches = "";
      return;
    }
    let match: Uint8Array;
    try {
      match = matchNodes(m, text);
    } catch (e) {
      // A half-typed pattern is normal while typing: say so, keep the last good view.
      error.textContent = e instanceof Error ? e.message.replace(/^Invalid regular expression: /, "") : "bad pattern";
      error.hidden = false;
      return;
    }
    error.hidden = true;
    flame.setMatch(match);
    table.setFilter(match, withAncestors(m, match));
    flat?.setFilter(filterRegex());
    const count = match.reduce((a, b) => a + b, 0);
    root.dataset.matches = String(count);
    matches.textContent = matchText(text, count);
    matches.classList.toggle("none", count === 0);
    matches.hidden = false;
  };
  filter.addEventListener("input", () => {
    kept.filter = filter.value;
    clearTimeout(filterTimer);
    filterTimer = window.setTimeout(applyFilter, 120); // don't rescan 100k nodes on every key
  });
  depth.addEventListener("input", () => {
    const limit = parseDepthLimit(depth.value);
    flame.setDepthLimit(limit);
    table.setDepthLimit(limit);
  });

  const toolbar = h(
    "div",
    { class: "toolbar" },
    profilePicker && h("label", {}, "profile ", profilePicker),
    h("label", {}, "width ", columnPicker),
    h("label", {}, "filter ", filter),
    error,
    matches,
    h("label", {}, "depth ≤ ", depth),
    reset,
    h("label", { title: "every frame name summed over the tree; pick one for its callers and callees" }, flatBox, " flat"),
    data.base ? h("span", { class: "legend" }, h("i", { class: "slow" }), "slower ", h("i", { class: "fast" }), "faster than ", h("code", {}, data.base.source)) : null,
  );
  root.append(toolbar, glance, metaCard(data), flameCard, table.el);
  showNote(data.primary);
  if (kept.filter.trim()) applyFilter(); // the filter typed on the profile shown before
  flame.draw(); // first paint now, not a frame later
  table.render();
  if (kept.flat) showFlat(true);
}

/** The run's metadata, closed by default (one line: the file's name and the run's date) so the
 * flame graph is in view first; a click opens it. */
function metaCard(data: ProfileData): HTMLElement {
  const rows = metaRows(data);
  const list = h("div", { class: "meta-list" });
  for (const [key, value] of rows) list.append(h("div", { class: "meta-item", "data-key": key }, h("span", { class: "k" }, key), h("span", { class: "v" }, value)));
  const when = rows.find(([key]) => key === "start_time");
  const summary = h("summary", {}, h("b", {}, data.name), when ? h("span", { class: "meta-when" }, ` ${when[1]}`) : null, h("span", { class: "meta-hint" }, " (details)"));
  const card = h("details", { class: "card profile-meta" }, summary, list);
  const pruned = prunedText(data);
  if (pruned !== null) card.append(h("div", { class: "pruned", "data-pruned": data.pruned_nodes }, pruned));
  return card;
}
