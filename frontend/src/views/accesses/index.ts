// The Accesses view: every recorded launch's tensors as grids of which program touched which
// elements (or how often), the check reports' findings marked on them, a clicked cell's details,
// and the findings table. The shell mounts it once; switching launches rebuilds the cards.
import "./accesses.css";
import { getJSON } from "../../data";
import { h, picker } from "../../dom";
import type { Index, LaunchData } from "../../types";
import { TensorCard, type CardHost } from "./card";
import { findingsTable, showDetails, showEdgeDetails } from "./details";
import {
  clampProgram,
  EDGE_COLOUR,
  findingFor,
  OOB_COLOUR,
  pastEdge,
  programOf,
  heatStops,
  KIND_NAMES,
  launchLabel,
  launchWithTensor,
  MASKED_COLOUR,
  packedCss,
  programPalette,
  SEVERITY_COLOUR,
  type Filter,
  type Finding,
  type LaunchRef,
  type Mode,
} from "./model";

/** Launch JSON by URL: switching back to a launch costs nothing. */
const launchCache = new Map<string, Promise<LaunchData>>();

function loadLaunchData(url: string): Promise<LaunchData> {
  let got = launchCache.get(url);
  if (!got) {
    got = getJSON<LaunchData>(url);
    got.catch(() => launchCache.delete(url)); // let a failed fetch be retried
    launchCache.set(url, got);
  }
  return got;
}

export async function mountAccesses(root: HTMLElement, index: Index): Promise<void> {
  const refs: LaunchRef[] = index.records.flatMap((record) => record.launches.map((launch) => ({ record, launch })));
  const view = new AccessesView(root, index, refs);
  await view.start();
}

class AccessesView {
  private filter: Filter = { mode: "program", kinds: [true, true, true], program: null };
  private launch: LaunchData | null = null;
  private cards: TensorCard[] = [];
  private palette: Uint32Array = new Uint32Array(0);
  private token = 0;
  private readonly toolbar = h("div", { class: "toolbar acc-toolbar" });
  private readonly programSlot = h("span", { class: "acc-progslot" });
  private readonly legend = h("div", { class: "acc-legend" });
  private readonly cardBox = h("div", { class: "acc-cards" });
  private readonly details = h("aside", { class: "card acc-details" }, h("p", { class: "empty" }, "Click a cell to see which programs touched it."));
  private readonly findingsBox = h("div", { class: "acc-findbox" });
  private readonly status = h("span", { class: "acc-status" });

  constructor(
    private readonly root: HTMLElement,
    private readonly index: Index,
    private readonly refs: LaunchRef[],
  ) {}

  async start(): Promise<void> {
    this.root.classList.add("acc-root");
    if (!this.refs.length) {
      // Only check reports: the findings table is all there is.
      this.root.append(
        h("p", { class: "acc-dim" }, "No access record given (deuteron check --record): only the check findings are shown."),
        this.findingsBox,
      );
      this.findingsBox.append(findingsTable(this.index.checks, null, () => undefined));
      this.root.dataset.state = "ready";
      return;
    }
    this.buildToolbar();
    this.root.append(
      this.toolbar,
      this.legend,
      h("div", { class: "acc-layout" }, this.cardBox, this.details),
      this.findingsBox,
    );
    this.drawLegend();
    await this.show(0);
  }

  private host(): CardHost {
    return {
      launch: this.launch!,
      palette: this.palette,
      filter: () => this.filter,
      onCell: (card, row, col) => this.openCell(card, row, col),
      onFinding: (card, f) => void this.goToFinding(card, f),
    };
  }

  private buildToolbar(): void {
    const many = this.index.records.length > 1;
    const launchPick = picker(
      this.refs.map((r) => launchLabel(r, many)),
      0,
      (i) => void this.show(i),
      { name: "launch", class: "acc-launch" },
    );
    const modePick = picker(["program", "heat"], 0, (i) => {
      this.filter = { ...this.filter, mode: (["program", "heat"] as Mode[])[i] };
      this.redraw();
    }, { name: "mode" });
    const kinds = KIND_NAMES.slice(0, 3).map((name, k) => { // a masked kind follows its access's box
      const box = h("input", { type: "checkbox", name: `kind-${name}`, "data-kind": name, checked: true });
      box.addEventListener("change", () => {
        const next = [...this.filter.kinds] as Filter["kinds"];
        next[k] = box.checked;
        this.filter = { ...this.filter, kinds: next };
        this.redraw();
      });
      return h("label", { class: "acc-kind" }, box, ` ${name}s`);
    });
    this.toolbar.append(
      h("label", {}, "launch ", launchPick),
      h("label", {}, "colour ", modePick),
      ...kinds,
      this.programSlot,
      this.status,
    );
  }

  /** The program picker of the launch shown: a <select> for up to 4096 programs, else a number
   * input (a select of 100k options is slow to build); both show the program's (x,y,z). */
  private buildProgramPicker(launch: LaunchData): void {
    const count = launch.programs.length;
    const xyzText = (p: number | null): string => (p === null ? "" : `(${(launch.programs[p] ?? []).join(", ")})`);
    const pick = (p: number | null): void => {
      this.filter = { ...this.filter, program: p };
      this.redraw();
    };
    if (count <= 4096) {
      const select = h("select", { name: "program" }, h("option", { value: "all" }, "all"));
      launch.programs.forEach((xyz, p) => select.append(h("option", { value: p }, `${p} · (${xyz.join(", ")})`)));
      select.addEventListener("change", () => pick(select.value === "all" ? null : Number(select.value)));
      this.programSlot.replaceChildren(h("label", {}, "program ", select));
      return;
    }
    const label = h("span", { class: "acc-dim" });
    const input = h("input", { type: "number", name: "program", min: 0, max: count - 1, placeholder: "all", class: "acc-prog" });
    input.addEventListener("change", () => {
      const p = clampProgram(input.value, count);
      if (p !== null) input.value = String(p);
      label.textContent = xyzText(p);
      pick(p);
    });
    this.programSlot.replaceChildren(h("label", {}, "program ", input, " ", label));
  }

  /** Select program p from elsewhere (a details row): keep the picker in step. */
  private selectProgram(p: number): void {
    const control = this.programSlot.querySelector<HTMLSelectElement | HTMLInputElement>("[name=program]");
    if (control) {
      control.value = String(p);
      control.dispatchEvent(new Event("change"));
    }
  }

  /** Show launch i: fetch its JSON and every tensor's first slice in parallel, then draw. A newer
   * pick made while this one loads wins (the token). */
  private async show(i: number): Promise<void> {
    const token = ++this.token;
    const started = performance.now();
    this.root.dataset.state = "loading";
    this.status.textContent = "loading…";
    try {
      const launch = await loadLaunchData(this.refs[i].launch.url);
      if (token !== this.token) return;
      this.launch = launch;
      this.palette = programPalette(launch.programs.length);
      this.filter = { ...this.filter, program: null };
      this.buildProgramPicker(launch);
      const host = this.host();
      const cards = launch.tensors.map((t) => new TensorCard(t, host));
      await Promise.all(cards.map((c) => c.load(0)));
      if (token !== this.token) return;
      this.cards = cards;
      for (const c of cards) c.render();
      this.cardBox.replaceChildren(...cards.map((c) => c.el));
      if (!cards.length) this.cardBox.append(h("p", { class: "empty" }, "This launch recorded no tensor accesses."));
      this.details.replaceChildren(h("p", { class: "empty" }, "Click a cell to see which programs touched it."));
      delete this.details.dataset.cell;
      delete this.details.dataset.tensor;
      this.findingsBox.replaceChildren(findingsTable(this.index.checks, launch, (k, t, idx, m) => void this.pickFinding(k, t, idx, m)));
      this.drawLegend();
      const ms = performance.now() - started;
      this.status.textContent = `${launch.kernel}: ${launch.tensors.length} tensor(s), drawn in ${ms.toFixed(0)} ms`;
      this.root.dataset.launch = String(i);
      this.root.dataset.ms = ms.toFixed(1);
      this.root.dataset.state = "ready";
    } catch (error) {
      if (token !== this.token) return;
      this.status.textContent = "";
      this.cardBox.replaceChildren(h("div", { class: "error", role: "alert" }, error instanceof Error ? error.message : String(error)));
      this.root.dataset.state = "error";
    }
  }

  /** Redraw every card under the current filter (no refetch), and the open details. */
  private redraw(): void {
    for (const c of this.cards) c.render();
    this.drawLegend();
    const open = this.details.dataset.cell;
    const card = this.cards.find((c) => c.view.name === this.details.dataset.tensor);
    if (open && card && card.selected) this.openCell(card, card.selected[0], card.selected[1]);
  }

  private openCell(card: TensorCard, row: number, col: number): void {
    // One selected cell in the whole view: clear the others' outlines.
    for (const other of this.cards) {
      if (other !== card && other.selected) {
        other.selected = null;
        other.render();
      }
    }
    if (!this.launch) return;
    if (pastEdge(card.view, { row, col })) {
      showEdgeDetails(this.details, this.launch, card, row, col, card.edgeAt(row, col), (p) => this.selectProgram(p));
      return;
    }
    showDetails(this.details, this.launch, card, row, col, this.filter, (p) => this.selectProgram(p));
  }

  /** A finding chosen (the card's list or the findings table): select the program it names, then
   * its cell, past the tensor's edge for out-of-bounds lanes. */
  private async goToFinding(card: TensorCard, f: Finding): Promise<void> {
    if (!this.launch) return;
    const p = programOf(this.launch, f.program);
    if (p >= 0 && this.filter.program !== p) this.selectProgram(p);
    await card.goTo(f);
    this.root.dataset.finding = `${card.view.name}:${f.kind}`;
  }

  /** A findings-table row: show a launch of its kernel with that tensor (the one shown if it is
   * one), find the finding, select its program and go to its cell. */
  private async pickFinding(kernel: string, tensor: string, index: number[] | null, message: string): Promise<void> {
    const shown = this.launch && this.launch.kernel === kernel && this.launch.tensors.some((t) => t.name === tensor);
    if (!shown) {
      const i = launchWithTensor(this.refs, kernel, tensor);
      if (i < 0) return;
      const select = this.toolbar.querySelector<HTMLSelectElement>("select[name=launch]");
      if (select) select.value = String(i);
      await this.show(i);
    }
    const card = this.cards.find((c) => c.view.name === tensor);
    if (!card) return;
    const f = findingFor(card.view.findings, message, index);
    if (f) await this.goToFinding(card, f);
  }

  /** The legend for the mode shown, the finding colours, and what the record leaves out. */
  private drawLegend(): void {
    const swatch = (css: string, extra = ""): HTMLElement => h("span", { class: `acc-sw ${extra}`, style: `background:${css}` });
    const parts: (HTMLElement | string)[] = [];
    if (this.filter.mode === "program") {
      const sample = Array.from(this.palette.slice(0, 6), (c) => swatch(packedCss(c)));
      parts.push(h("span", {}, ...sample, " each program its own hue (the first program touching a cell)"));
      parts.push(h("span", {}, swatch("#888", "acc-hatch"), " striped: touched by several programs"));
    } else {
      const stops = heatStops();
      parts.push(h("span", {}, "lanes per cell, log scale: min ", h("span", { class: "acc-ramp", style: `background:linear-gradient(90deg,${stops})` }), " max (per tensor, below each grid)"));
    }
    parts.push(h("span", {}, swatch("#fff", "acc-ring-error"), " error"), h("span", {}, swatch("#fff", "acc-ring-warning"), " warning"));
    parts.push(h("span", { "data-legend": "masked" }, swatch(packedCss(MASKED_COLOUR)), " masked-off lanes of the selected program (its mask hid them)"));
    parts.push(h("span", { "data-legend": "oob" }, swatch(packedCss(OOB_COLOUR)), " out-of-bounds lanes, past the tensor's edge"));
    parts.push(h("span", { "data-legend": "edge" }, swatch(packedCss(EDGE_COLOUR), "acc-edge-sw"), " past the edge (dashed line: the tensor's border)"));
    parts.push(h("span", {}, swatch("#fff", "acc-ring-sel"), " selected cell"));
    parts.push(h("span", { class: "acc-dim" }, "Masked-off lanes are shown for one program at a time (pick one), where they point inside the tensor's memory; click a finding to select its program and cells. Records made before 2026-11-23 have no masked-off lanes."));
    this.legend.replaceChildren(...parts);
    this.legend.style.setProperty("--err", SEVERITY_COLOUR.error);
    this.legend.style.setProperty("--warn", SEVERITY_COLOUR.warning);
  }
}
