// The tree table, virtualized: the visible rows are a list of node ids (the expanded tree,
// flattened), and only the rows inside the scroll box's window are in the DOM. Rows have a fixed
// height so the row under any scroll offset is a division away.
import { h } from "../../dom";
import { fmt } from "../../format";
import type { ExplainLink } from "../../links";
import type { Filtered } from "./filter";
import { childrenInOrder, nameOf, nameTitle, ratioColour, ratioText, visibleRows, type ProfileModel } from "./model";
import { stallColumns } from "./stalls";

const ROW = 22; // px, must match profile.css (.ptable tr)
const OVERSCAN = 8;

export interface TableOptions {
  /** A row's name was clicked: the view highlights the node in the flame graph. */
  onPick: (node: number) => void;
  /** A frame's link to its kernel's explain view (an explain report was loaded too), or null. */
  linkOf?: (node: number) => ExplainLink | null;
}

/** A sortable column: its header and its per-node key (null: the name, sorted as text); a stall
 * column writes its cells itself (samples and share) and says what they are on hover. */
interface Column {
  label: string;
  key: Float64Array | null;
  cls: string;
  title?: string;
  text?: (i: number) => string;
  cellTitle?: (i: number) => string;
}

export class TreeTable {
  readonly el: HTMLElement;
  private body: HTMLTableSectionElement;
  private head: HTMLTableRowElement;
  private columns: Column[];
  private expanded: Uint8Array;
  private saved: Uint8Array | null = null; // expansion before the filter
  private match: Uint8Array | null = null; // filter: matches and what is below them (others greyed)
  private keep: Uint8Array | null = null; // filter: those plus their ancestors
  private depthLimit = Infinity;
  private sortBy: number; // index into columns
  private desc = true;
  private sorted = new Map<number, Int32Array>(); // node -> its children in the current order
  private rows: Int32Array = new Int32Array(0); // visible node ids, in display order
  private selected = -1;
  private frame = 0;

  constructor(private m: ProfileModel, private opts: TableOptions) {
    const d = m.data;
    this.columns = [{ label: "name", key: null, cls: "name" }];
    d.columns.forEach((label, c) => this.columns.push({ label, key: m.vals[c], cls: "num" }));
    if (m.base && m.ratio) {
      this.columns.push({ label: `base ${d.columns[d.primary]}`, key: m.base[d.primary], cls: "num base" });
      this.columns.push({ label: "ratio", key: m.ratio, cls: "num ratio" });
    }
    // A sampled profile: the frame's top stall, then the run's most frequent stall reasons.
    if (m.stalls) for (const c of stallColumns(m.stalls)) this.columns.push({ label: c.label, key: c.key, cls: c.label === "top stall" ? "num stall top" : "num stall", title: c.title, text: c.text, cellTitle: c.cellTitle });
    this.sortBy = 1 + d.primary;
    this.expanded = new Uint8Array(m.n);
    for (let i = 0; i < m.n; i++) if (m.depth[i] < 2) this.expanded[i] = 1; // ROOT + 2 levels shown
    this.head = h("tr");
    const colgroup = h("colgroup", {}, ...this.columns.map((c) => h("col", { class: c.cls === "name" ? "c-name" : c.cls === "num base" ? "c-base" : c.cls === "num stall top" ? "c-stall-top" : c.cls === "num stall" ? "c-stall" : "c-num" })));
    // A long column label (num_samples) gets room for itself and the sort mark.
    this.columns.forEach((c, k) => {
      if ((c.cls === "num" || c.cls === "num stall") && c.label.length > 10) (colgroup.children[k] as HTMLElement).style.width = `${c.label.length + 4}ch`;
    });
    this.body = h("tbody");
    const table = h("table", { class: "grid ptable" }, colgroup, h("thead", {}, this.head), this.body);
    table.style.minWidth = `${320 + 110 * (this.columns.length - 1)}px`;
    this.el = h("div", { class: "ptable-box", tabindex: 0 }, table);
    this.el.addEventListener("scroll", () => this.schedule());
    this.body.addEventListener("click", (e) => this.click(e));
    this.head.addEventListener("click", (e) => this.sortClick(e));
    new ResizeObserver(() => this.schedule()).observe(this.el);
    this.renderHead();
    this.rebuild();
  }

  /** Show a filter's tree (filter.ts: the matches with what is below them, and the frames on the
   * way to them, greyed) with its numbers; null: everything, as recorded. */
  setFilter(f: Filtered | null): void {
    const keep = f ? f.keep : null;
    // Filtering opens the matches' ancestors; clearing it brings back the rows open before.
    if (keep && !this.keep) this.saved = this.expanded.slice();
    if (!keep && this.saved) {
      this.expanded = this.saved;
      this.saved = null;
    }
    this.match = f ? f.below : null;
    this.keep = keep;
    if (f) {
      const opened = new Uint8Array(this.m.n); // each ancestor walked up from once
      for (let i = 1; i < this.m.n; i++) if (f.match[i]) for (let a = this.m.parent[i]; a >= 0 && !opened[a]; a = this.m.parent[a]) opened[a] = this.expanded[a] = 1;
    }
    this.m.data.columns.forEach((_, c) => (this.columns[1 + c].key = f ? f.vals[c] : this.m.vals[c]));
    this.sorted.clear();
    this.rebuild();
  }

  setDepthLimit(limit: number): void {
    this.depthLimit = limit;
    this.rebuild();
  }

  /** Select a node's row: open its ancestors, scroll it into view, mark it. */
  select(node: number): void {
    this.selected = node;
    for (let a = this.m.parent[node]; a >= 0; a = this.m.parent[a]) this.expanded[a] = 1;
    this.rebuild();
    const at = this.rows.indexOf(node);
    if (at >= 0) {
      const top = at * ROW;
      const view = this.el.clientHeight - ROW * 2; // leave room for the sticky header
      if (top < this.el.scrollTop || top > this.el.scrollTop + view) this.el.scrollTop = Math.max(0, top - view / 2);
    }
    this.render();
  }

  private kidsOf(i: number): Int32Array {
    let out = this.sorted.get(i);
    if (!out) {
      out = childrenInOrder(this.m, i, this.columns[this.sortBy].key, this.desc);
      this.sorted.set(i, out);
    }
    return out;
  }

  /** Flatten the expanded (and filtered, depth-limited) tree into `rows`. */
  private rebuild(): void {
    this.rows = visibleRows(this.m, this.expanded, this.keep, this.depthLimit, (i) => this.kidsOf(i));
    this.el.dataset.rows = String(this.rows.length);
    this.schedule();
  }

  private schedule(): void {
    if (!this.frame) this.frame = requestAnimationFrame(() => ((this.frame = 0), this.render()));
  }

  /** Put the rows in the scroll window (plus a margin) into the DOM, spacers around them. */
  render(): void {
    const total = this.rows.length;
    const first = Math.max(0, Math.floor(this.el.scrollTop / ROW) - OVERSCAN);
    const last = Math.min(total, Math.ceil((this.el.scrollTop + Math.max(this.el.clientHeight, 400)) / ROW) + OVERSCAN);
    const parts: Node[] = [spacer(first * ROW, this.columns.length)];
    for (let r = first; r < last; r++) parts.push(this.row(this.rows[r]));
    parts.push(spacer((total - last) * ROW, this.columns.length));
    this.body.replaceChildren(...parts);
  }

  private row(i: number): HTMLTableRowElement {
    const m = this.m;
    const name = nameOf(m, i);
    const hasKids = m.kidStart[i + 1] > m.kidStart[i] && m.depth[i] < this.depthLimit;
    const toggle = h("span", { class: "tog", "data-toggle": hasKids ? 1 : null }, hasKids ? (this.expanded[i] ? "▾" : "▸") : "");
    const label = h("span", { class: "nm", title: nameTitle(m, i) }, name);
    const link = this.opts.linkOf?.(i) ?? null;
    // The link stays in view however long the name: the name gives way (ellipsis), not the link.
    const nameCell = link ? h("td", { class: "name" }, h("span", { class: "name-link" }, toggle, label, explainAnchor(link))) : h("td", { class: "name" }, toggle, label);
    nameCell.style.paddingLeft = `${4 + m.depth[i] * 12}px`;
    const cls = [i === this.selected ? "sel" : "", m.removed[i] ? "removed" : "", this.match && !this.match[i] ? "anc" : ""];
    const tr = h("tr", { "data-node": i, "data-name": name, class: cls.filter(Boolean).join(" ") || null }, nameCell);
    for (let c = 1; c < this.columns.length; c++) {
      const column = this.columns[c];
      if (column.text) {
        tr.append(h("td", { class: column.cls, title: column.cellTitle?.(i) ?? null }, column.text(i)));
        continue;
      }
      const v = column.key![i];
      const isRatio = this.columns[c].label === "ratio";
      const td = h("td", { class: this.columns[c].cls }, isRatio ? ratioText(v) : fmt(Number.isNaN(v) ? null : v));
      const colour = isRatio ? ratioColour(v) : null;
      if (colour) {
        td.style.background = colour; // slower red, faster green: the flame graph's diff colours
        td.dataset.trend = v > 1 ? "slower" : v < 1 ? "faster" : "same";
      }
      tr.append(td);
    }
    if (m.removed[i]) tr.title = "removed: only in the base profile";
    return tr;
  }

  private renderHead(): void {
    this.head.replaceChildren(
      ...this.columns.map((c, k) => {
        const mark = k === this.sortBy ? (this.desc ? " ▼" : " ▲") : "";
        return h("th", { class: c.cls, "data-col": k, title: c.title ? `${c.title}; sort siblings` : "sort siblings" }, c.label + mark);
      }),
    );
  }

  private sortClick(e: Event): void {
    const th = (e.target as HTMLElement).closest("th");
    if (!th) return;
    const k = Number(th.dataset.col);
    // First click: descending (biggest first); again: ascending. Blanks stay last either way.
    this.desc = k === this.sortBy ? !this.desc : true;
    this.sortBy = k;
    this.sorted.clear();
    this.renderHead();
    this.rebuild();
  }

  private click(e: Event): void {
    const target = e.target as HTMLElement;
    const tr = target.closest("tr");
    if (!tr || tr.dataset.node === undefined) return;
    const i = Number(tr.dataset.node);
    if (target.closest("[data-toggle]")) {
      this.expanded[i] ^= 1;
      this.rebuild();
      return;
    }
    this.selected = i;
    this.render();
    this.opts.onPick(i);
  }
}

/** The one-click way from a kernel's row (or one of its sampled lines) to its explain view. */
export function explainAnchor(link: ExplainLink): HTMLAnchorElement {
  return h("a", { class: "to-explain", href: link.href, title: link.title }, "explain ›");
}

function spacer(height: number, span: number): HTMLTableRowElement {
  const tr = h("tr", { class: "spacer", "aria-hidden": "true" }, h("td", { colspan: span }));
  tr.style.height = `${height}px`;
  if (height === 0) tr.style.display = "none";
  return tr;
}
