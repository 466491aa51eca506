// The profile's flat view: every frame name summed over the tree (flatmodel.ts) in a table
// sortable by any header over all names and narrowed by the page's filter, with each name's calls
// and average (total / calls) where the profile records calls; picking a name shows its sandwich,
// the frames directly above its places (callers) and below them (callees), with their shares, and
// its every call site: the inverted caller tree, from the direct callers up to the outermost frames. In a diff each name also has its base total, the ratio (coloured as the table's) and
// the change, so sorting by ratio lists what got slower over the whole profile.
import { h } from "../../dom";
import { fmt } from "../../format";
import { callerTree, flatDiffRows, flatRows, isAdditive, sandwich, sortFlat, type CallerNode, type FlatDiffRow, type FlatKey, type FlatRow, type Neighbour } from "./flatmodel";
import { ratioColour, ratioText, type ProfileModel } from "./model";

const SHOWN = 500; // rows in the DOM at most: a 100 000-name profile is narrowed by the filter
const CALL_SITES = 400; // rows of the inverted caller tree at most (depth first, largest first)

export interface FlatOptions {
  /** A name was picked (null: none): the view puts it in the address. */
  onSelect: (name: string | null) => void;
}

export class FlatView {
  readonly el: HTMLElement;
  private rows: FlatRow[] = [];
  private column = 0;
  private key: FlatKey = "total";
  private desc = true;
  private filter: ((name: string) => boolean) | null = null; // filter.ts's patternMatcher
  private selected: string | null = null;
  private note = h("p", { class: "flat-note", role: "status", hidden: true });
  private table = h("table", { class: "grid flat-table" });
  private more = h("p", { class: "flat-more", hidden: true });
  private sides = h("div", { class: "flat-sandwich", hidden: true });

  constructor(private m: ProfileModel, private opts: FlatOptions) {
    this.el = h("div", { class: "card profile-flat" }, this.note, h("div", { class: "flat-box" }, this.table), this.more, this.sides);
    this.table.addEventListener("click", (e) => this.click(e));
    this.sides.addEventListener("click", (e) => {
      const row = (e.target as HTMLElement).closest<HTMLElement>("tr[data-name]");
      if (row) this.select(row.dataset.name ?? null);
    });
  }

  /** Sum the chosen width column, or the primary one when the chosen one does not add up. */
  setColumn(chosen: number): void {
    const labels = this.m.data.columns;
    const primary = this.m.data.primary;
    this.column = isAdditive(labels[chosen] ?? "") || !isAdditive(labels[primary] ?? "") ? chosen : primary;
    const note = this.column === chosen ? "" : `${labels[chosen]} does not add up over places: the flat view sums ${labels[this.column]}`;
    this.note.textContent = note;
    this.note.hidden = !note;
    this.rows = this.m.base ? flatDiffRows(this.m, this.column) : flatRows(this.m, this.column);
    this.render();
  }

  setFilter(filter: ((name: string) => boolean) | null): void {
    this.filter = filter;
    this.render();
  }

  /** Pick a name (null: none) and show its callers and callees. */
  select(name: string | null): void {
    this.selected = name && this.rows.some((r) => r.name === name) ? name : null;
    this.opts.onSelect(this.selected);
    this.render();
  }

  get selectedName(): string | null {
    return this.selected;
  }

  render(): void {
    const label = this.m.data.columns[this.column] ?? "?";
    const heads: [FlatKey, string][] = this.m.base
      ? [["name", "name"], ["total", `total ${label}`], ["base", `base ${label}`], ["ratio", "ratio"], ["change", "change"], ["self", `self ${label}`], ["places", "places"]]
      : [["name", "name"], ["total", `total ${label}`], ["self", `self ${label}`], ["places", "places"], ...(this.m.data.calls ? ([["calls", "calls"], ["average", `average ${label}`]] as [FlatKey, string][]) : [])];
    const head = h(
      "tr",
      {},
      ...heads.map(([key, text]) =>
        h("th", { "data-sort": key, class: key === "name" ? "name" : `num ${key}`, title: "sort all names", "aria-sort": key === this.key ? (this.desc ? "descending" : "ascending") : null }, text + (key === this.key ? (this.desc ? " ▾" : " ▴") : "")),
      ),
    );
    const shown = sortFlat(this.filter ? this.rows.filter((r) => this.filter!(r.name)) : this.rows, this.key, this.desc);
    const body = h("tbody");
    for (const r of shown.slice(0, SHOWN)) {
      const only = (r as Partial<FlatDiffRow>).only ?? null; // a diff's name of one profile only
      const cls = [r.name === this.selected ? "sel" : "", only === "base" ? "removed" : ""].filter(Boolean).join(" ") || null;
      const why = only === "base" ? "removed: only in the base profile" : only === "new" ? "added: only in the new profile" : null;
      const tr = h("tr", { "data-name": r.name, "data-only": only, class: cls, title: why }, h("td", { class: "name", title: r.name }, r.name));
      for (const [key] of heads.slice(1)) tr.append(cell(r, key));
      body.append(tr);
    }
    this.table.replaceChildren(h("thead", {}, head), body);
    this.el.dataset.rows = String(shown.length);
    this.el.dataset.sort = `${this.key} ${this.desc ? "desc" : "asc"}`;
    this.more.hidden = shown.length <= SHOWN;
    this.more.textContent = `the first ${fmt(SHOWN)} of ${fmt(shown.length)} names shown: filter to narrow`;
    this.renderSandwich(label);
  }

  private renderSandwich(label: string): void {
    const name = this.selected;
    const id = name === null ? -1 : this.m.data.names.indexOf(name);
    this.sides.hidden = id < 0;
    if (id < 0) {
      delete this.el.dataset.selected;
      return this.sides.replaceChildren();
    }
    this.el.dataset.selected = name!;
    const s = sandwich(this.m, this.column, id);
    const diff = this.m.base !== null;
    const row = (n: Neighbour): HTMLElement => {
      const tr = h("tr", { "data-name": n.name }, h("td", { class: "name", title: n.name }, n.name), h("td", { class: "num" }, fmt(n.value)), h("td", { class: "num share" }, `${(n.share * 100).toFixed(1)}%`));
      if (diff) tr.append(h("td", { class: "num base" }, fmt(n.base ?? NaN)), ratioCell(n.ratio ?? NaN));
      return tr;
    };
    const side = (title: string, kind: string, items: Neighbour[]): HTMLElement =>
      h(
        "div",
        { class: "flat-side", "data-side": kind },
        h("b", {}, title),
        items.length
          ? h("table", { class: "grid" }, diff ? h("thead", {}, h("tr", {}, h("th", { class: "name" }, "name"), h("th", { class: "num" }, label), h("th", { class: "num" }, "share"), h("th", { class: "num" }, "base"), h("th", { class: "num" }, "ratio"))) : null, h("tbody", {}, ...items.map(row)))
          : h("p", { class: "empty" }, kind === "callers" ? "none" : "none: it calls nothing"),
      );
    const title = h("div", { class: "flat-title" }, h("code", {}, name!), ` — total ${label} ${fmt(s.total)}`);
    if (diff) title.append(`, base ${fmt(s.base ?? NaN)}, ratio `, ratioCell(s.ratio ?? NaN, "span"));
    this.sides.replaceChildren(title, side(`callers of ${name}`, "callers", s.callers), side(`callees of ${name}`, "callees", s.callees), this.callSites(id, name!, label));
  }

  /** Every call site of the picked name: its inverted caller tree, one indented row per frame
   * (depth first, largest first), with the share of the name's total that comes through it. */
  private callSites(id: number, name: string, label: string): HTMLElement {
    const t = callerTree(this.m, this.column, id);
    const rows: HTMLElement[] = [];
    let left = 0;
    const walk = (nodes: CallerNode[], depth: number): void => {
      for (const n of nodes) {
        if (rows.length >= CALL_SITES) {
          left += frames(n);
          continue;
        }
        const nameCell = h("td", { class: "name", title: n.name, style: `padding-left: ${4 + depth * 14}px` }, n.name);
        rows.push(h("tr", { "data-name": n.name, "data-depth": depth }, nameCell, h("td", { class: "num" }, fmt(n.value)), h("td", { class: "num share" }, `${(n.share * 100).toFixed(1)}%`)));
        walk(n.callers, depth + 1);
      }
    };
    walk(t.callers, 0);
    const head = h("thead", {}, h("tr", {}, h("th", { class: "name" }, "called from (direct callers, then theirs)"), h("th", { class: "num" }, label), h("th", { class: "num" }, "share")));
    return h(
      "div",
      { class: "flat-side flat-sites", "data-side": "sites", "data-rows": rows.length },
      h("b", {}, `every call site of ${name}`),
      rows.length ? h("table", { class: "grid" }, head, h("tbody", {}, ...rows)) : h("p", { class: "empty" }, "none: it is called from ROOT only"),
      left ? h("p", { class: "flat-more" }, `the first ${fmt(CALL_SITES)} rows shown; ${fmt(left)} more frames`) : null,
    );
  }

  private click(e: MouseEvent): void {
    const target = e.target as HTMLElement;
    const th = target.closest<HTMLElement>("th[data-sort]");
    if (th) {
      const key = th.dataset.sort as FlatKey;
      if (key === this.key) this.desc = !this.desc;
      else [this.key, this.desc] = [key, key !== "name"];
      return this.render();
    }
    const row = target.closest<HTMLElement>("tr[data-name]");
    if (row) this.select(row.dataset.name === this.selected ? null : (row.dataset.name ?? null));
  }
}

/** How many frames a caller tree's node holds, itself included. */
function frames(n: CallerNode): number {
  return n.callers.reduce((k, c) => k + frames(c), 1);
}

/** A flat row's cell under a header: numbers for people, the ratio as the table shows it, the
 * change signed. */
function cell(r: FlatRow, key: FlatKey): HTMLElement {
  const d = r as Partial<FlatDiffRow>;
  if (key === "ratio") return ratioCell(d.ratio ?? NaN);
  if (key === "change") {
    const v = d.change ?? NaN;
    return h("td", { class: "num change" }, v > 0 ? `+${fmt(v)}` : fmt(v));
  }
  const v = key === "total" ? r.total : key === "self" ? r.self : key === "places" ? r.places : key === "calls" ? r.calls : key === "average" ? r.average : (d.base ?? NaN);
  return h("td", { class: `num ${key}` }, fmt(v));
}

/** A ratio (new / base) coloured as the tree table's: red slower, green faster, blank "–" where a
 * side lacks the name. */
function ratioCell(v: number, tag: "td" | "span" = "td"): HTMLElement {
  const el = h(tag, { class: "num ratio" }, ratioText(v));
  const colour = ratioColour(v);
  if (colour) {
    el.style.background = colour;
    el.dataset.trend = v > 1 ? "slower" : v < 1 ? "faster" : "same";
  }
  return el;
}
