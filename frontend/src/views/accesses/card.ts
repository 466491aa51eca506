// One tensor of a launch in the Accesses view: a titled card with its slice picker, the binned
// grid canvas, finding markers and a hover read-out. The card keeps the current slice's cells
// and its aggregate so a filter change redraws without refetching.
import { getPacked } from "../../data";
import { h } from "../../dom";
import { fmt } from "../../format";
import type { AccessCells, LaunchData, PlacedFinding, TensorView } from "../../types";
import { DIFF_COLOUR, diffFootprints, diffText, footprint, KINDS_DIFFER, ONLY_A, ONLY_B, sameGrid, sharedRange, type Diff } from "./compare";
import { drawBins, drawEdges, drawMarkers, frameSize, type Frame } from "./grid";
import {
  aggregate,
  asCells,
  edgeCells,
  findingPlace,
  padsFor,
  pastEdge,
  placeAt,
  type EdgeCell,
  clampSlice,
  emptyCells,
  findingMarkers,
  findingsOnSlice,
  geometry,
  heatStops,
  hoverText,
  sliceIndex,
  type Aggregate,
  type Filter,
  type Geometry,
} from "./model";

/** What a card needs from the view around it. */
export interface CardHost {
  launch: LaunchData;
  palette: Uint32Array;
  filter(): Filter;
  /** A cell was clicked (or a finding chosen): show its details. */
  onCell(card: TensorCard, row: number, col: number): void;
  /** A finding of the card's list was clicked: select its program and cells. */
  onFinding(card: TensorCard, finding: PlacedFinding): void;
  /** The slice picker moved: the host loads it (and the compared card's, in step). Without it
   * the card loads and draws the slice itself. */
  onSlice?(card: TensorCard, slice: number): void;
  /** Beside another launch: the names of the left and the right launch, for the hover line. */
  sides?: [string, string];
}

/** Draw two compared cards (a on the left, b on the right): one heat scale for both, and, where
 * their grids are the same and the same slice is loaded, the cells they touched differently
 * framed on both. */
export function renderPair(a: TensorCard, b: TensorCard): void {
  a.compute();
  b.compute();
  let diff: Diff | null = null;
  let note = "";
  if (!sameGrid(a.view, b.view)) note = `shapes differ ([${a.view.shape.join(", ")}] and [${b.view.shape.join(", ")}]): no cell-by-cell comparison`;
  else if (a.slice !== b.slice) note = `slices ${a.slice} and ${b.slice}: pick the same slice to compare cells`;
  else if (a.cells && b.cells) {
    const bins = a.view.bin_rows * a.view.bin_cols;
    const kinds = { kinds: a.currentFilter().kinds };
    diff = diffFootprints(footprint(a.cells, bins, kinds), footprint(b.cells, bins, kinds));
  }
  if (a.agg && b.agg) {
    const range = sharedRange(a.agg, b.agg);
    a.agg = { ...a.agg, ...range };
    b.agg = { ...b.agg, ...range };
  }
  a.draw(diff, note);
  b.draw(diff, note);
}

export class TensorCard {
  readonly el: HTMLElement;
  readonly canvas: HTMLCanvasElement;
  readonly geo: Geometry;
  readonly frame: Frame;
  /** Out-of-bounds lanes of the findings, placed past the edge (all slices). */
  readonly edges: EdgeCell[];
  slice = 0;
  cells: AccessCells | null = null;
  agg: Aggregate | null = null;
  selected: [number, number] | null = null;
  /** The card of the same tensor in the launch compared with (each points at the other). */
  partner: TensorCard | null = null;
  /** Its column when comparing: "a" the launch picked, "b" the one compared with. */
  side: "a" | "b" | null = null;
  /** The cells the pair touched differently (class per bin, compare.ts), when compared. */
  diff: Diff | null = null;
  private readonly compareLine: HTMLElement = h("div", { class: "acc-cmpline" });
  private readonly message: HTMLElement;
  private readonly hover: HTMLElement;
  private readonly list: HTMLElement;
  private readonly scale: HTMLElement = h("div", { class: "acc-scale" });

  constructor(
    readonly view: TensorView,
    private readonly host: CardHost,
  ) {
    this.geo = geometry(view.bin_rows, view.bin_cols);
    this.edges = edgeCells(view);
    this.frame = { geo: this.geo, pads: padsFor(view, this.edges), binRows: view.bin_rows, binCols: view.bin_cols };
    const size = frameSize(this.frame);
    this.canvas = h("canvas", { class: "acc-canvas", "data-tensor": view.name });
    const ratio = window.devicePixelRatio || 1;
    this.canvas.width = Math.max(1, Math.round(size.width * ratio));
    this.canvas.height = Math.max(1, Math.round(size.height * ratio));
    this.canvas.style.width = `${size.width}px`;
    this.canvas.style.height = `${size.height}px`;
    const p = this.frame.pads;
    this.canvas.dataset.pads = [p.top, p.right, p.bottom, p.left].join(",");
    this.canvas.addEventListener("click", (e) => this.click(e));
    this.canvas.addEventListener("mousemove", (e) => this.describe(e));
    this.canvas.addEventListener("mouseleave", () => (this.hover.textContent = "\u00a0"));
    this.message = h("div", { class: "acc-msg" });
    this.hover = h("div", { class: "acc-hover" }, "\u00a0");
    this.list = h("ul", { class: "acc-flist" });
    this.el = h(
      "div",
      { class: "card acc-card", "data-card": view.name },
      this.title(),
      this.notes(),
      h("div", { class: "acc-scroll" }, this.canvas),
      this.hover,
      this.scale,
      this.compareLine,
      this.message,
      this.list,
    );
  }

  private title(): HTMLElement {
    const v = this.view;
    const head = h(
      "div",
      { class: "acc-title" },
      h("b", {}, v.name),
      h("span", { class: "acc-dim" }, ` ${v.dtype} [${v.shape.join(", ")}]`),
      h("span", { class: "acc-dim" }, ` · bins ${v.bin_rows}×${v.bin_cols} of ${v.row_step}×${v.col_step}`),
      v.merged.length
        ? h("span", { class: "acc-dim", "data-merged": v.merged.join("x") }, ` · rows: dims ${v.merged.join("×")} flattened`)
        : null,
    );
    if (v.slices > 1) head.append(this.slicePicker());
    return head;
  }

  /** A number input over the slices, with the leading index it stands for. */
  private slicePicker(): HTMLElement {
    const v = this.view;
    const label = h("span", { class: "acc-dim" });
    const show = (): void => {
      label.textContent = `[${sliceIndex(v.lead, this.slice).join(", ")}] of (${v.lead.join(", ")})`;
    };
    const input = h("input", {
      type: "number",
      name: "slice",
      "data-tensor": v.name,
      min: 0,
      max: v.slices - 1,
      value: 0,
      class: "acc-slice",
    });
    input.addEventListener("change", () => {
      const s = clampSlice(input.value, v.slices);
      input.value = String(s);
      show();
      if (this.host.onSlice) return this.host.onSlice(this, s);
      void this.load(s).then(() => this.render());
    });
    this.showSlice = (s: number): void => {
      input.value = String(s);
      show();
    };
    show();
    return h("label", { class: "acc-slicepick" }, " slice ", input, " ", label);
  }

  /** Put slice s in the slice picker (the slice loaded from elsewhere: the compared card's). */
  showSlice: (s: number) => void = () => undefined;

  /** The filter this card draws under. */
  currentFilter(): Filter {
    return this.host.filter();
  }

  private notes(): HTMLElement {
    const out = h("div", { class: "acc-notes" });
    if (this.view.outside > 0) {
      out.append(
        h("div", { class: "acc-outside" }, `${fmt(this.view.outside)} accesses hit this tensor's storage outside its view`),
      );
    }
    return out;
  }

  /** Fetch slice s's cells; a slice the page does not carry leaves the grid empty, with a note. */
  async load(s: number): Promise<void> {
    this.slice = s;
    this.selected = null;
    this.cells = null;
    this.agg = null;
    this.message.textContent = "";
    const url = this.view.slice_urls[s] ?? null;
    if (url === null) {
      this.message.textContent = "this slice is not in the file; open with deuteron serve";
      return;
    }
    try {
      const cells = asCells(await getPacked(url));
      if (this.slice === s) this.cells = cells; // a newer pick may have landed meanwhile
    } catch (error) {
      this.message.textContent = error instanceof Error ? error.message : String(error);
    }
  }

  /** Findings on the slice shown (a finding with no slice belongs to a tensor with one slice). */
  findingsHere(): PlacedFinding[] {
    return findingsOnSlice(this.view.findings, this.slice);
  }

  /** Aggregate under the current filter and redraw (with the compared card, when there is one);
   * sets the test-facing data attributes. */
  render(): void {
    if (this.partner) {
      if (this.side === "b") renderPair(this.partner, this);
      else renderPair(this, this.partner);
      return;
    }
    this.compute();
    this.draw(null, "");
  }

  /** Aggregate the slice's cells under the current filter. */
  compute(): void {
    const bins = this.view.bin_rows * this.view.bin_cols;
    this.agg = aggregate(this.cells ?? emptyCells(), bins, this.host.filter());
  }

  /** Draw the aggregate, with the cells touched differently from the compared card framed. */
  draw(diff: Diff | null, note: string): void {
    const filter = this.host.filter();
    if (!this.agg) this.compute();
    const agg = this.agg!;
    this.diff = diff;
    drawBins(this.canvas, this.frame, agg, filter, this.host.palette, diff?.cls ?? null, DIFF_COLOUR);
    const oob = drawEdges(this.canvas, this.frame, this.edges, this.slice);
    const drawn = drawMarkers(this.canvas, this.frame, findingMarkers(this.findingsHere()));
    if (this.selected) {
      drawMarkers(this.canvas, this.frame, [{ row: this.selected[0], col: this.selected[1], colour: "#1864ab" }]);
    }
    const c = this.canvas.dataset;
    c.binsTouched = String(agg.touched);
    c.binsSelected = String(agg.selected);
    c.binsMasked = String(agg.maskedSelected);
    c.maxLanes = String(agg.maxLanes);
    if (diff) {
      c.binsDiffer = String(diff.differ);
      c.binsOnlyA = String(diff.onlyA);
      c.binsOnlyB = String(diff.onlyB);
      c.binsKinds = String(diff.kinds);
      c.binsLanes = String(diff.lanes);
    } else for (const key of ["binsDiffer", "binsOnlyA", "binsOnlyB", "binsKinds", "binsLanes"]) delete c[key];
    const sides = this.host.sides ?? ["the left launch", "the right launch"];
    this.compareLine.textContent = diff ? diffText(diff, sides[0], sides[1]) : note;
    this.compareLine.dataset.differ = diff ? String(diff.differ) : "";
    c.mode = filter.mode;
    c.program = filter.program === null ? "all" : String(filter.program);
    c.findings = String(drawn);
    c.oob = String(oob); // band cells holding out-of-bounds lanes on this slice
    c.selectedCell = this.selected ? this.selected.join(",") : "";
    c.slice = String(this.slice);
    this.fillFindings();
    this.fillScale(filter);
  }

  /** Heat mode: this tensor's lane range (each tensor is scaled on its own). */
  private fillScale(filter: Filter): void {
    if (filter.mode !== "heat" || !this.agg || !this.agg.touched) {
      this.scale.replaceChildren();
      return;
    }
    const stops = heatStops();
    this.scale.replaceChildren(
      `lanes per cell: ${fmt(this.agg.minLanes)} `,
      h("span", { class: "acc-ramp", style: `background:linear-gradient(90deg,${stops})` }),
      ` ${fmt(this.agg.maxLanes)} (log)`,
    );
  }

  /** The slice's findings as a short clickable list (those without a bin are listed too). */
  private fillFindings(): void {
    const found = this.findingsHere();
    const shown = found.slice(0, 12);
    this.list.replaceChildren(
      ...shown.map((f) =>
        h(
          "li",
          {
            class: "acc-fitem link",
            "data-kind": f.kind,
            title: "select its program and cells",
            onclick: () => this.host.onFinding(this, f),
          },
          h("span", { class: `sev-${f.severity}` }, f.severity),
          ` ${f.kind}`,
          f.index ? ` [${f.index.join(", ")}]` : "",
          f.line !== null ? ` line ${f.line}` : "",
          f.bin ? "" : pastEdge(this.view, findingPlace(this.view, f) ?? { row: 0, col: 0 }) ? " (past the edge)" : "",
          h("span", { class: "acc-dim" }, ` ${f.message}`),
        ),
      ),
    );
    if (found.length > shown.length) this.list.append(h("li", { class: "acc-dim" }, `${found.length - shown.length} more`));
  }

  /** Select a cell: outline it (on the compared card too) and ask the host for the details panel. */
  select(row: number, col: number): void {
    this.selected = [row, col];
    if (this.partner) this.partner.selected = [row, col];
    this.render();
    this.host.onCell(this, row, col);
  }

  /** Go to a finding's place: its slice, then its cell (past the edge for out-of-bounds lanes). */
  async goTo(f: PlacedFinding): Promise<void> {
    const place = findingPlace(this.view, f);
    if (!place) return;
    if (place.slice !== this.slice) {
      const input = this.el.querySelector<HTMLInputElement>("input[name=slice]");
      if (input) input.value = String(place.slice);
      const partner = this.partner && this.partner.view.slices === this.view.slices ? this.partner : null;
      partner?.showSlice(place.slice);
      await Promise.all([this.load(place.slice), partner?.load(place.slice)]);
    }
    this.select(place.row, place.col);
    this.el.scrollIntoView({ block: "nearest" });
  }

  /** The band cell at (row, col) of the slice shown, if out-of-bounds lanes landed there. */
  edgeAt(row: number, col: number): EdgeCell | undefined {
    return this.edges.find((c) => c.slice === this.slice && c.row === row && c.col === col);
  }

  private binAt(e: MouseEvent): [number, number] | null {
    const rect = this.canvas.getBoundingClientRect();
    const size = frameSize(this.frame);
    const x = ((e.clientX - rect.left) / rect.width) * size.width;
    const y = ((e.clientY - rect.top) / rect.height) * size.height;
    const at = placeAt(this.geo, this.frame.pads, this.view.bin_rows, this.view.bin_cols, x, y);
    return at ? [at.row, at.col] : null;
  }

  private click(e: MouseEvent): void {
    const at = this.binAt(e);
    if (at) this.select(at[0], at[1]);
  }

  /** The hovered cell's range, lanes and first program, under the canvas. */
  private describe(e: MouseEvent): void {
    const at = this.binAt(e);
    if (!at || !this.agg) return;
    if (pastEdge(this.view, { row: at[0], col: at[1] })) {
      const edge = this.edgeAt(at[0], at[1]);
      this.hover.textContent = edge ? `past the edge · ${fmt(edge.lanes)} out-of-bounds lane(s)` : "past the tensor's edge";
      return;
    }
    let text = hoverText(this.view, this.agg, this.host.launch.programs, at[0], at[1]);
    const cls = this.diff?.cls[at[0] * this.view.bin_cols + at[1]] ?? 0;
    const sides = this.host.sides ?? ["the left launch", "the right launch"];
    if (cls === ONLY_A) text += ` · touched only in ${sides[0]}`;
    else if (cls === ONLY_B) text += ` · touched only in ${sides[1]}`;
    else if (cls === KINDS_DIFFER) text += " · touched by other kinds in the other";
    this.hover.textContent = text;
  }
}
