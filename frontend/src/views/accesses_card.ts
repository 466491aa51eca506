// One tensor of a launch in the Accesses view: a titled card with its slice picker, the binned
// grid canvas, finding markers and a hover read-out. The card keeps the current slice's cells
// and its aggregate so a filter change redraws without refetching.
import { getPacked, type Packed } from "../data";
import { fmt, h } from "../dom";
import type { AccessCells, LaunchData, TensorView } from "../types";
import {
  aggregate,
  drawBins,
  drawMarkers,
  geometry,
  HEAT,
  packedCss,
  SEVERITY_COLOUR,
  type Aggregate,
  type Filter,
  type Geometry,
  type Marker,
} from "./accesses_grid";

export type Finding = TensorView["findings"][number];

/** What a card needs from the view around it. */
export interface CardHost {
  launch: LaunchData;
  palette: Uint32Array;
  filter(): Filter;
  /** A cell was clicked (or a finding chosen): show its details. */
  onCell(card: TensorCard, row: number, col: number): void;
}

/** The leading-dims index of slice s (row-major over `lead`). */
export function sliceIndex(lead: number[], s: number): number[] {
  const out = new Array<number>(lead.length).fill(0);
  for (let d = lead.length - 1; d >= 0; d--) {
    out[d] = s % lead[d];
    s = Math.floor(s / lead[d]);
  }
  return out;
}

/** The element range a bin stands for, inclusive, in the tensor's last two dims. */
export function cellRange(view: TensorView, row: number, col: number): { r0: number; r1: number; c0: number; c1: number } {
  const r0 = row * view.row_step;
  const c0 = col * view.col_step;
  return {
    r0,
    r1: Math.min(view.rows, r0 + view.row_step) - 1,
    c0,
    c1: Math.min(view.cols, c0 + view.col_step) - 1,
  };
}

export function rangeText(view: TensorView, row: number, col: number): string {
  const { r0, r1, c0, c1 } = cellRange(view, row, col);
  const span = (a: number, b: number): string => (a === b ? `${a}` : `${a}..${b}`);
  return view.shape.length <= 1 ? `elements ${span(c0, c1)}` : `rows ${span(r0, r1)}, cols ${span(c0, c1)}`;
}

function asCells(packed: Packed): AccessCells {
  const need = ["program", "bin", "kind", "site", "lanes"] as const;
  for (const name of need) if (!packed[name]) throw new Error(`packed cells lack "${name}"`);
  return {
    program: packed.program as Uint32Array,
    bin: packed.bin as Uint32Array,
    kind: packed.kind as Uint8Array,
    site: packed.site as Int32Array,
    lanes: packed.lanes as Uint32Array,
  };
}

export class TensorCard {
  readonly el: HTMLElement;
  readonly canvas: HTMLCanvasElement;
  readonly geo: Geometry;
  slice = 0;
  cells: AccessCells | null = null;
  agg: Aggregate | null = null;
  selected: [number, number] | null = null;
  private readonly message: HTMLElement;
  private readonly hover: HTMLElement;
  private readonly list: HTMLElement;
  private readonly scale: HTMLElement = h("div", { class: "acc-scale" });

  constructor(
    readonly view: TensorView,
    private readonly host: CardHost,
  ) {
    this.geo = geometry(view.bin_rows, view.bin_cols);
    this.canvas = h("canvas", { class: "acc-canvas", "data-tensor": view.name });
    const ratio = window.devicePixelRatio || 1;
    this.canvas.width = Math.max(1, Math.round(this.geo.width * ratio));
    this.canvas.height = Math.max(1, Math.round(this.geo.height * ratio));
    this.canvas.style.width = `${this.geo.width}px`;
    this.canvas.style.height = `${this.geo.height}px`;
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
      const s = Math.max(0, Math.min(v.slices - 1, Math.floor(Number(input.value) || 0)));
      input.value = String(s);
      void this.load(s).then(() => {
        show();
        this.render();
      });
    });
    show();
    return h("label", { class: "acc-slicepick" }, " slice ", input, " ", label);
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
  findingsHere(): Finding[] {
    return this.view.findings.filter((f) => (f.slice ?? 0) === this.slice);
  }

  /** Aggregate under the current filter and redraw; sets the test-facing data attributes. */
  render(): void {
    const filter = this.host.filter();
    const bins = this.view.bin_rows * this.view.bin_cols;
    const empty: AccessCells = {
      program: new Uint32Array(0),
      bin: new Uint32Array(0),
      kind: new Uint8Array(0),
      site: new Int32Array(0),
      lanes: new Uint32Array(0),
    };
    this.agg = aggregate(this.cells ?? empty, bins, filter);
    drawBins(this.canvas, this.geo, this.view.bin_cols, this.agg, filter, this.host.palette);
    const markers: Marker[] = [];
    for (const f of this.findingsHere()) {
      if (f.bin) markers.push({ row: f.bin[0], col: f.bin[1], colour: SEVERITY_COLOUR[f.severity] ?? "#862e9c" });
    }
    const drawn = drawMarkers(this.canvas, this.geo, markers);
    if (this.selected) {
      drawMarkers(this.canvas, this.geo, [{ row: this.selected[0], col: this.selected[1], colour: "#1864ab" }]);
    }
    const c = this.canvas.dataset;
    c.binsTouched = String(this.agg.touched);
    c.binsSelected = String(this.agg.selected);
    c.binsMasked = String(this.agg.maskedSelected);
    c.mode = filter.mode;
    c.program = filter.program === null ? "all" : String(filter.program);
    c.findings = String(drawn);
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
    const stops = Array.from({ length: 6 }, (_, i) => packedCss(HEAT[Math.round((i / 5) * 255)])).join(",");
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
            class: f.bin ? "acc-fitem link" : "acc-fitem",
            "data-kind": f.kind,
            onclick: () => {
              if (f.bin) this.select(f.bin[0], f.bin[1]);
            },
          },
          h("span", { class: `sev-${f.severity}` }, f.severity),
          ` ${f.kind}`,
          f.index ? ` [${f.index.join(", ")}]` : "",
          f.line !== null ? ` line ${f.line}` : "",
          f.bin ? "" : " (not on the grid)",
          h("span", { class: "acc-dim" }, ` ${f.message}`),
        ),
      ),
    );
    if (found.length > shown.length) this.list.append(h("li", { class: "acc-dim" }, `${found.length - shown.length} more`));
  }

  /** Select a cell: outline it and ask the host for the details panel. */
  select(row: number, col: number): void {
    this.selected = [row, col];
    this.render();
    this.host.onCell(this, row, col);
  }

  private binAt(e: MouseEvent): [number, number] | null {
    const rect = this.canvas.getBoundingClientRect();
    const x = ((e.clientX - rect.left) / rect.width) * this.geo.width;
    const y = ((e.clientY - rect.top) / rect.height) * this.geo.height;
    const row = Math.floor(y / this.geo.cellH);
    const col = Math.floor(x / this.geo.cellW);
    if (row < 0 || col < 0 || row >= this.view.bin_rows || col >= this.view.bin_cols) return null;
    return [row, col];
  }

  private click(e: MouseEvent): void {
    const at = this.binAt(e);
    if (at) this.select(at[0], at[1]);
  }

  /** The hovered cell's range, lanes and first program, under the canvas. */
  private describe(e: MouseEvent): void {
    const at = this.binAt(e);
    if (!at || !this.agg) return;
    const b = at[0] * this.view.bin_cols + at[1];
    const first = this.agg.first[b];
    let text = `${rangeText(this.view, at[0], at[1])} · `;
    if (first < 0) text += "not touched";
    else {
      const xyz = this.host.launch.programs[first] ?? [first, 0, 0];
      text += `${fmt(this.agg.lanes[b])} lanes · program (${xyz.join(",")})${this.agg.multi[b] ? " and others" : ""}`;
    }
    this.hover.textContent = text;
  }
}
