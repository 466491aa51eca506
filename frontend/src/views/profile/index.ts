// The Profile view: toolbar (profile, width column, regex filter, depth limit), metadata card, the
// icicle graph and the tree table below it. The two stay in step: a rectangle clicked selects its
// row, a row clicked outlines its rectangle. A "flat" toggle swaps both for the flat view (every
// name summed over the tree, and a picked name's callers and callees); it and the picked name are
// in the address (hashstate.ts), with the flame graph's zoomed and picked frames; a link set on an
// open page (pasted into its address bar, Back, Forward) brings them back. With an explain report
// loaded too, a kernel it covers (and each of its sampled lines) links to its explain view, in the
// table and in the picked frame's details. The advice panel lists what `deuteron view --advise`
// finds; a row of it selects the frame it names. A sampled profile adds stall columns to the
// table, each frame's stall breakdown to its tooltip and details, and the sampling's interval and
// losses to the metadata card (stalls.ts).
import "./profile.css";
import { h, picker } from "../../dom";
import { readState, writeState } from "../../hashstate";
import { explainLinker, type ExplainLink } from "../../links";
import { viewOfHash } from "../../route";
import { getJSON } from "../../data";
import type { AdviceFinding, Index, ProfileData } from "../../types";
import { AdvicePanel } from "./advice";
import { PickDetails } from "./details";
import { Flame } from "./flame";
import { FlatView } from "./flat";
import { filterModel, keptText, patternMatcher, type Filtered } from "./filter";
import { buildModel, columnNote, matchText, metaRows, nameOf, parseDepthLimit, parseProfileState, profileParams, prunedText, type ProfileState } from "./model";
import { samplingLine, samplingRows } from "./stalls";
import { TreeTable } from "./table";

/** What outlives a switch of profile (several files served): the filter typed, the flat toggle
 * and the name picked in the flat view; and, for the profile the address names, its zoomed and
 * picked frames (node ids of that profile's tree, so a switch of profile forgets them). */
interface Kept {
  filter: string;
  flat: boolean;
  frame: string | null;
  zoom: number;
  sel: number;
}

/** A shown profile: `apply` puts a state the address names on it. */
interface ShownProfile {
  apply: (want: ProfileState) => void;
}

export function mountProfile(root: HTMLElement, index: Index): void {
  const slot = h("div", { class: "profile-slot" });
  const profiles = index.profiles;
  const which = (s: ProfileState): number => (s.profile < profiles.length ? s.profile : 0);
  const opened = parseProfileState(readState("profile"));
  const kept: Kept = { filter: "", flat: opened.flat, frame: opened.frame, zoom: opened.zoom, sel: opened.sel };
  const linkOfName = explainLinker(index.explains);
  let current = -1;
  let shown: ShownProfile | null = null;
  const show = (k: number): void => {
    current = k;
    slot.replaceChildren();
    const choose = (j: number): void => {
      [kept.zoom, kept.sel] = [0, -1];
      show(j);
    };
    const profilePicker = profiles.length > 1 ? picker(profiles.map((p) => p.name), k, choose, { name: "profile", title: "profile" }) : null;
    shown = showProfile(slot, profiles[k], k, profilePicker, kept, linkOfName, index.explains.length > 0);
  };
  root.append(slot);
  show(which(opened));
  // The address changed under the open page (a link pasted into this tab's address bar,
  // `location.hash = …`, Back, Forward): show what it names. Applying a state twice changes
  // nothing, so popstate and hashchange of one step may both come.
  const follow = (): void => {
    if (viewOfHash(location.hash) !== "profile") return;
    const want = parseProfileState(readState("profile"));
    if (which(want) === current) return shown?.apply(want);
    Object.assign(kept, { flat: want.flat, frame: want.frame, zoom: want.zoom, sel: want.sel });
    show(which(want));
  };
  window.addEventListener("hashchange", follow);
  window.addEventListener("popstate", follow);
}

function showProfile(
  root: HTMLElement,
  data: ProfileData,
  which: number,
  profilePicker: HTMLSelectElement | null,
  kept: Kept,
  linkOfName: (name: string) => ExplainLink | null,
  explained: boolean,
): ShownProfile {
  const m = buildModel(data);
  const linkOf = (i: number): ExplainLink | null => (i > 0 ? linkOfName(nameOf(m, i)) : null);
  const details = new PickDetails(m, data.primary, linkOf, explained);
  // deuteron view --advise's findings; a row selects the frame it names, as a click on it would.
  const advice = data.advice_url ? new AdvicePanel(m.n, (node) => pickFromAdvice(node)) : null;
  const table = new TreeTable(m, { onPick: (i) => (flame.highlight(i), details.show(i), advice?.mark(i), save()), linkOf });
  const flame: Flame = new Flame(m, { onPick: (i) => (table.select(i), details.show(i), advice?.mark(i), save()) });
  /** Zoom and outline frames as a link names them (ids outside this tree: ROOT, none). */
  const restoreFrames = (zoom: number, sel: number): void => {
    const z = zoom < m.n ? zoom : 0;
    const s = sel < m.n ? sel : -1;
    if (z === flame.zoomed && s === flame.picked) return;
    flame.restore(z, s);
    table.select(s);
    details.show(s);
    advice?.mark(s);
  };
  const pickFromAdvice = (node: number): void => {
    if (kept.flat) {
      flatBox.checked = false;
      showFlat(false);
    }
    flame.highlight(node); // zoomed out (or in) where it would not be visible
    table.select(node);
    details.show(node);
    advice?.mark(node);
    save();
    flameCard.scrollIntoView({ block: "nearest" });
  };

  const error = h("span", { class: "filter-error", role: "alert", hidden: true });
  const filter = h("input", { type: "search", name: "filter", placeholder: "filter: text or regex", spellcheck: "false", "aria-label": "filter by name (text or regex, as deuteron view -i)" });
  filter.value = kept.filter;
  const matches = h("span", { class: "filter-count", role: "status", hidden: true });
  // What ROOT keeps of the run's total under the filter, as deuteron view -i says it.
  const keeps = h("span", { class: "filter-kept", role: "status", hidden: true });
  const showKept = (f: Filtered | null, c: number): void => {
    const text = f ? keptText(m, f, c) : null;
    keeps.textContent = text ?? "";
    keeps.hidden = text === null;
  };
  const note = h("p", { class: "flame-note", role: "status", hidden: true });
  const showNote = (column: number): void => {
    const text = columnNote(m, column);
    note.textContent = text ?? "";
    note.hidden = text === null;
  };
  const depth = h("input", { type: "number", name: "depth", min: 0, max: m.maxDepth, placeholder: String(m.maxDepth), title: "depth limit" });
  depth.style.width = "6ch";
  const reset = h("button", { type: "button", name: "reset-zoom", onclick: () => (flame.resetZoom(), save()) }, "reset zoom");
  let column = data.primary;
  const columnPicker = picker(data.columns, data.primary, (c) => {
    column = c;
    flame.setColumn(c);
    details.setColumn(c);
    flat?.setColumn(c);
    showNote(c);
    if (filtered) showKept(filtered, c);
  }, { name: "column", title: "flame width" });
  const save = (): void => writeState("profile", profileParams({ profile: which, flat: kept.flat, frame: kept.frame, zoom: flame.zoomed, sel: flame.picked }));
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
      flat.setFilter(filterTest());
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
  // The filter's rules are deuteron view -i's (filter.ts): the same frames, the same numbers.
  const filterTest = (): ((name: string) => boolean) | null => {
    try {
      return filter.value.trim() ? patternMatcher(filter.value.trim()) : null;
    } catch {
      return null;
    }
  };

  let filterTimer = 0;
  let filtered: Filtered | null = null;
  const applyFilter = (): void => {
    const text = filter.value.trim();
    kept.filter = filter.value;
    if (!text) {
      error.hidden = true;
      matches.hidden = true;
      flame.setMatch(null);
      table.setFilter(null);
      flat?.setFilter(null);
      filtered = null;
      showKept(null, column);
      root.dataset.matches = "";
      return;
    }
    let f: Filtered;
    try {
      f = filterModel(m, text);
    } catch (e) {
      // A half-typed pattern is normal while typing: say so, keep the last good view.
      error.textContent = e instanceof Error ? e.message.replace(/^Invalid regular expression: /, "") : "bad pattern";
      error.hidden = false;
      return;
    }
    error.hidden = true;
    filtered = f;
    flame.setMatch(f.below); // the matches and what is below them in colour
    table.setFilter(f); // the kept frames, with the filtered tree's numbers
    flat?.setFilter(filterTest());
    const count = f.count;
    root.dataset.matches = String(count);
    matches.textContent = matchText(text, count);
    showKept(f, column);
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
    keeps,
    h("label", {}, "depth ≤ ", depth),
    reset,
    h("label", { title: "every frame name summed over the tree; pick one for its callers and callees" }, flatBox, " flat"),
    data.base ? h("span", { class: "legend" }, h("i", { class: "slow" }), "slower ", h("i", { class: "fast" }), "faster than ", h("code", {}, data.base.source)) : null,
  );
  root.append(toolbar, glance, ...(advice ? [advice.el] : []), metaCard(data), flameCard, table.el);
  showNote(data.primary);
  if (kept.filter.trim()) applyFilter(); // the filter typed on the profile shown before
  restoreFrames(kept.zoom, kept.sel);
  flame.draw(); // first paint now, not a frame later
  table.render();
  if (kept.flat) showFlat(true);
  save();
  if (advice && data.advice_url)
    getJSON<AdviceFinding[]>(data.advice_url).then(
      (found) => advice.fill(found),
      (e: unknown) => advice.failed(e instanceof Error ? e.message : String(e)),
    );
  return {
    apply: (want) => {
      restoreFrames(want.zoom, want.sel);
      if (want.flat) kept.frame = want.frame;
      if (want.flat !== kept.flat) {
        flatBox.checked = want.flat;
        showFlat(want.flat); // builds the flat view on first use, with kept.frame picked
      }
      if (want.flat && flat && flat.selectedName !== want.frame) flat.select(want.frame);
      save();
    },
  };
}

/** The run's metadata, closed by default (one line: the file's name and the run's date, and for a
 * sampled profile how it was sampled) so the flame graph is in view first; a click opens it. */
function metaCard(data: ProfileData): HTMLElement {
  const rows = metaRows(data);
  const list = h("div", { class: "meta-list" });
  const item = (key: string, value: string, cls = "meta-item"): HTMLElement => h("div", { class: cls, "data-key": key }, h("span", { class: "k" }, key), h("span", { class: "v" }, value));
  // A sampled profile's sampling first: its interval and what was lost ("not recorded" where the
  // file does not say).
  if (data.sampling) for (const [key, value] of samplingRows(data.sampling)) list.append(item(key, value, "meta-item sampling"));
  for (const [key, value] of rows) list.append(item(key, value));
  const when = rows.find(([key]) => key === "start_time");
  const sampled = data.sampling ? h("span", { class: "meta-sampling" }, ` · ${samplingLine(data.sampling)}`) : null;
  const summary = h("summary", {}, h("b", {}, data.name), when ? h("span", { class: "meta-when" }, ` ${when[1]}`) : null, sampled, h("span", { class: "meta-hint" }, " (details)"));
  const card = h("details", { class: "card profile-meta" }, summary, list);
  const pruned = prunedText(data);
  if (pruned !== null) card.append(h("div", { class: "pruned", "data-pruned": data.pruned_nodes }, pruned));
  return card;
}
