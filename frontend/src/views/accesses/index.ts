// The Accesses view: every recorded launch's tensors as grids of which program touched which
// elements (or how often), the check reports' findings marked on them, a clicked cell's details,
// and the findings table. The shell mounts it once; switching launches rebuilds the cards.
// "compare with" puts a second launch's cards beside the first's (by default, with two records,
// the launch of the other record that pairs up: a learner's kernel beside the reference's),
// on one heat scale, the cells the two touched differently framed. The address keeps the
// launches and the colour mode (`#accesses?launch=0&vs=3&mode=heat`, compare.ts).
import "./accesses.css";
import { getJSON } from "../../data";
import { h, picker } from "../../dom";
import { readState, writeState } from "../../hashstate";
import { viewOfHash } from "../../route";
import type { Index, LaunchData, PlacedFinding } from "../../types";
import { TensorCard, type CardHost } from "./card";
import { accessesParams, DIFF_COLOUR, followVs, KINDS_DIFFER, LANES_DIFFER, ONLY_A, ONLY_B, pairTensors, parseAccessesState, programIn, sameGrid, type AccessesState } from "./compare";
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
  /** The launch compared with (its data, cards and palette), null when none is. */
  private other: LaunchData | null = null;
  private otherCards: TensorCard[] = [];
  private otherPalette: Uint32Array = new Uint32Array(0);
  /** What is shown: launch and compared launch (indices into refs, -1 none), colour mode. */
  private state: AccessesState = { launch: 0, vs: -1, mode: "program" };
  private launchPick: HTMLSelectElement | null = null;
  private vsPick: HTMLSelectElement | null = null;
  private modePick: HTMLSelectElement | null = null;
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
    this.state = parseAccessesState(readState("accesses"), this.refs);
    this.filter = { ...this.filter, mode: this.state.mode };
    this.syncPickers();
    // A link followed while the view is mounted (pasted into the address bar, Back, Forward).
    const follow = (): void => {
      if (viewOfHash(location.hash) !== "accesses") return;
      const want = parseAccessesState(readState("accesses"), this.refs);
      if (want.mode !== this.state.mode) {
        this.state = { ...this.state, mode: want.mode };
        this.filter = { ...this.filter, mode: want.mode };
        this.syncPickers();
        this.redraw();
      }
      if (want.launch !== this.state.launch || want.vs !== this.state.vs) void this.show(want.launch, want.vs);
      else this.save();
    };
    window.addEventListener("hashchange", follow);
    window.addEventListener("popstate", follow);
    await this.show(this.state.launch, this.state.vs);
  }

  /** Launch i as the comparison's texts name it: its record's file (with several records) and
   * its launch index, e.g. "11_blur_bounds.yours.npz #4". */
  private sideName(i: number): string {
    const ref = this.refs[i];
    if (!ref) return "";
    const many = this.index.records.length > 1;
    return `${many ? `${ref.record.name} ` : ""}#${ref.launch.index}`;
  }

  private host(): CardHost {
    return {
      launch: this.launch!,
      palette: this.palette,
      filter: () => this.filter,
      onCell: (card, row, col) => this.openCell(card, row, col),
      onFinding: (card, f) => void this.goToFinding(card, f),
      onSlice: (card, s) => void this.loadSlice(card, s),
      sides: this.other ? [this.sideName(this.state.launch), this.sideName(this.state.vs)] : undefined,
    };
  }

  /** The compared launch's cards: the program picked is its program of the same (x, y, z). */
  private otherHost(): CardHost {
    const launch = this.launch!;
    const other = this.other!;
    return {
      launch: other,
      palette: this.otherPalette,
      filter: () => ({ ...this.filter, program: programIn(launch.programs, other.programs, this.filter.program) }),
      onCell: (card, row, col) => this.openCell(card, row, col),
      onFinding: (card, f) => void this.goToFinding(card, f),
      onSlice: (card, s) => void this.loadSlice(card, s),
      sides: [this.sideName(this.state.launch), this.sideName(this.state.vs)],
    };
  }

  /** Load slice s of a card and, when compared, the same slice of its partner; then draw. */
  private async loadSlice(card: TensorCard, s: number): Promise<void> {
    const partner = card.partner && card.partner.view.slices === card.view.slices ? card.partner : null;
    partner?.showSlice(s);
    await Promise.all([card.load(s), partner?.load(s)]);
    card.render();
  }

  /** Write the state to the address (hashstate.ts). */
  private save(): void {
    writeState("accesses", accessesParams(this.state, this.refs));
  }

  /** The toolbar's pickers as the state says. */
  private syncPickers(): void {
    if (this.launchPick) this.launchPick.value = String(this.state.launch);
    if (this.vsPick) this.vsPick.value = String(this.state.vs);
    if (this.modePick) this.modePick.value = this.state.mode === "heat" ? "1" : "0";
  }

  private buildToolbar(): void {
    const many = this.index.records.length > 1;
    const labels = this.refs.map((r) => launchLabel(r, many));
    const launchPick = picker(labels, 0, (i) => void this.show(i, followVs(this.refs, this.state.launch, this.state.vs, i)), {
      name: "launch",
      class: "acc-launch",
    });
    // "compare with": none, or any launch (the one shown is refused: it would be itself).
    const vsPick = h("select", { name: "vs", class: "acc-launch", title: "show a second launch beside this one" }, h("option", { value: -1 }, "none"));
    labels.forEach((label, i) => vsPick.append(h("option", { value: i }, label)));
    vsPick.addEventListener("change", () => {
      const vs = Number(vsPick.value);
      void this.show(this.state.launch, vs === this.state.launch ? -1 : vs);
    });
    this.launchPick = launchPick;
    this.vsPick = vsPick;
    const modePick = picker(["program", "heat"], 0, (i) => {
      const mode = (["program", "heat"] as Mode[])[i];
      this.filter = { ...this.filter, mode };
      this.state = { ...this.state, mode };
      this.save();
      this.redraw();
    }, { name: "mode" });
    this.modePick = modePick;
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
      this.refs.length > 1 ? h("label", {}, "compare with ", vsPick) : "",
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

  /** Show launch i, beside launch vs when vs >= 0: fetch their JSON and every tensor's first
   * slice in parallel, then draw. A newer pick made while this one loads wins (the token). */
  private async show(i: number, vs = -1): Promise<void> {
    const token = ++this.token;
    const started = performance.now();
    if (vs === i || vs >= this.refs.length) vs = -1;
    this.state = { ...this.state, launch: i, vs };
    this.syncPickers();
    this.save();
    this.root.dataset.state = "loading";
    this.status.textContent = "loading…";
    try {
      const [launch, other] = await Promise.all([
        loadLaunchData(this.refs[i].launch.url),
        vs >= 0 ? loadLaunchData(this.refs[vs].launch.url) : Promise.resolve(null),
      ]);
      if (token !== this.token) return;
      this.launch = launch;
      this.other = other;
      this.palette = programPalette(launch.programs.length);
      this.otherPalette = other ? programPalette(other.programs.length) : new Uint32Array(0);
      this.filter = { ...this.filter, program: null };
      this.buildProgramPicker(launch);
      const host = this.host();
      const cards = launch.tensors.map((t) => new TensorCard(t, host));
      let otherCards: TensorCard[] = [];
      if (other) {
        const otherHost = this.otherHost();
        otherCards = other.tensors.map((t) => new TensorCard(t, otherHost));
        pairTensors(launch.tensors, other.tensors).forEach((j, k) => {
          if (j < 0) return;
          cards[k].partner = otherCards[j];
          otherCards[j].partner = cards[k];
        });
        for (const c of cards) c.side = "a";
        for (const c of otherCards) c.side = "b";
      }
      await Promise.all([...cards, ...otherCards].map((c) => c.load(0)));
      if (token !== this.token) return;
      this.cards = cards;
      this.otherCards = otherCards;
      for (const c of cards) c.render();
      for (const c of otherCards) if (!c.partner) c.render();
      this.layCards();
      this.details.replaceChildren(h("p", { class: "empty" }, "Click a cell to see which programs touched it."));
      delete this.details.dataset.cell;
      delete this.details.dataset.tensor;
      this.findingsBox.replaceChildren(findingsTable(this.index.checks, launch, (k, t, idx, m) => void this.pickFinding(k, t, idx, m)));
      this.drawLegend();
      const ms = performance.now() - started;
      const beside = other ? ` beside ${other.kernel} #${other.index}` : "";
      this.status.textContent = `${launch.kernel}: ${launch.tensors.length} tensor(s)${beside}, drawn in ${ms.toFixed(0)} ms`;
      this.root.dataset.launch = String(i);
      this.root.dataset.vs = String(vs);
      this.root.dataset.ms = ms.toFixed(1);
      this.root.dataset.state = "ready";
    } catch (error) {
      if (token !== this.token) return;
      this.status.textContent = "";
      this.cardBox.replaceChildren(h("div", { class: "error", role: "alert" }, error instanceof Error ? error.message : String(error)));
      this.root.dataset.state = "error";
    }
  }

  /** The cards in the page: one column, or, when comparing, the launch shown on the left and the
   * one compared with on the right, a tensor per row (a tensor of one launch only: a gap). */
  private layCards(): void {
    const cards = this.cards;
    this.cardBox.classList.toggle("acc-compare", this.other !== null);
    if (!this.other) {
      this.cardBox.replaceChildren(...cards.map((c) => c.el));
      if (!cards.length) this.cardBox.append(h("p", { class: "empty" }, "This launch recorded no tensor accesses."));
      return;
    }
    const head = (side: "a" | "b", i: number, launch: LaunchData): HTMLElement =>
      h("div", { class: "acc-colhead", "data-side": side }, launchLabel(this.refs[i], this.index.records.length > 1), launch.tensors.length ? "" : h("p", { class: "empty" }, "This launch recorded no tensor accesses."));
    const gap = (name: string): HTMLElement => h("div", { class: "acc-gap acc-dim" }, `${name}: not in this launch`);
    const rows: HTMLElement[] = [head("a", this.state.launch, this.launch!), head("b", this.state.vs, this.other)];
    for (const c of cards) {
      c.el.dataset.side = "a";
      rows.push(c.el, c.partner ? c.partner.el : gap(c.view.name));
      if (c.partner) c.partner.el.dataset.side = "b";
    }
    for (const c of this.otherCards) {
      if (c.partner) continue;
      c.el.dataset.side = "b";
      rows.push(gap(c.view.name), c.el);
    }
    this.cardBox.replaceChildren(...rows);
  }

  /** Redraw every card under the current filter (no refetch), and the open details. */
  private redraw(): void {
    for (const c of this.cards) c.render();
    for (const c of this.otherCards) if (!c.partner) c.render();
    this.drawLegend();
    const open = this.details.dataset.cell;
    const list = this.details.dataset.side === "b" ? this.otherCards : this.cards;
    const card = list.find((c) => c.view.name === this.details.dataset.tensor);
    if (open && card && card.selected) this.openCell(card, card.selected[0], card.selected[1]);
  }

  private openCell(card: TensorCard, row: number, col: number): void {
    // One selected cell in the whole view (and its twin on the compared card): clear the others'.
    for (const other of [...this.cards, ...this.otherCards]) {
      if (other !== card && other !== card.partner && other.selected) {
        other.selected = null;
        other.render();
      }
    }
    if (!this.launch) return;
    const b = card.side === "b";
    const launch = b && this.other ? this.other : this.launch;
    // A program picked in a row of the compared launch's details: its twin of the same (x, y, z).
    const pick = (p: number): void => {
      const mine = b && this.other ? programIn(this.other.programs, this.launch!.programs, p) : p;
      if (mine !== null && mine >= 0) this.selectProgram(mine);
    };
    this.details.dataset.side = b ? "b" : "a";
    if (pastEdge(card.view, { row, col })) {
      showEdgeDetails(this.details, launch, card, row, col, card.edgeAt(row, col), pick);
      return;
    }
    const partner = card.partner;
    if (!partner || !this.other || !sameGrid(card.view, partner.view)) {
      showDetails(this.details, launch, card, row, col, b ? card.currentFilter() : this.filter, pick);
      return;
    }
    // Compared: the cell on both sides, the launch shown first.
    const [left, right] = b ? [partner, card] : [card, partner];
    const panes = [left, right].map((c, k) => {
      const pane = h("div", { class: "acc-sidepane", "data-side": k ? "b" : "a" });
      const sideLaunch = k ? this.other! : this.launch!;
      const sidePick = (p: number): void => {
        const mine = k ? programIn(this.other!.programs, this.launch!.programs, p) : p;
        if (mine !== null && mine >= 0) this.selectProgram(mine);
      };
      showDetails(pane, sideLaunch, c, row, col, c.currentFilter(), sidePick);
      const cls = left.diff?.cls[row * left.view.bin_cols + col] ?? 0;
      if (k === 0 && cls) pane.dataset.diff = String(cls);
      return pane;
    });
    const names = [this.sideName(this.state.launch), this.sideName(this.state.vs)];
    const cls = left.diff?.cls[row * left.view.bin_cols + col] ?? 0;
    const verdict =
      cls === ONLY_A ? `touched only in ${names[0]}` :
      cls === ONLY_B ? `touched only in ${names[1]}` :
      cls === KINDS_DIFFER ? "touched by other kinds of access on each side" :
      cls === LANES_DIFFER ? "the same kinds of access, a different number of times" : "touched alike";
    this.details.replaceChildren(
      h("p", { class: "acc-verdict", "data-diff": cls }, verdict),
      h("h4", { class: "acc-sidehead" }, names[0]),
      panes[0],
      h("h4", { class: "acc-sidehead" }, names[1]),
      panes[1],
    );
    this.details.dataset.cell = `${row},${col}`;
    this.details.dataset.tensor = card.view.name;
  }

  /** A finding chosen (the card's list or the findings table): select the program it names, then
   * its cell, past the tensor's edge for out-of-bounds lanes. */
  private async goToFinding(card: TensorCard, f: PlacedFinding): Promise<void> {
    if (!this.launch) return;
    const p = programOf(this.launch, f.program);
    if (p >= 0 && this.filter.program !== p) this.selectProgram(p);
    await card.goTo(f);
    this.root.dataset.finding = `${card.view.name}:${f.kind}`;
  }

  /** A findings-table row: show a launch of its kernel with that tensor (the one shown if it is
   * one), find the finding, select its program and go to its cell. */
  private async pickFinding(kernel: string, tensor: string, index: number[] | null, message: string): Promise<void> {
    // On a card shown already, on either side: go there.
    const onSide = (launch: LaunchData | null, cards: TensorCard[]): TensorCard | undefined =>
      launch?.kernel === kernel ? cards.find((c) => c.view.name === tensor && findingFor(c.view.findings, message, index)) : undefined;
    const here = onSide(this.launch, this.cards) ?? onSide(this.other, this.otherCards);
    if (here) {
      const f = findingFor(here.view.findings, message, index);
      if (f) await this.goToFinding(here, f);
      return;
    }
    const shown = this.launch && this.launch.kernel === kernel && this.launch.tensors.some((t) => t.name === tensor);
    if (!shown) {
      const i = launchWithTensor(this.refs, kernel, tensor);
      if (i < 0) return;
      await this.show(i, followVs(this.refs, this.state.launch, this.state.vs, i));
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
    if (this.other) {
      const [a, b] = [this.sideName(this.state.launch), this.sideName(this.state.vs)];
      const ring = (css: string): HTMLElement => h("span", { class: "acc-sw", style: `box-shadow: inset 0 0 0 2px ${css}` });
      parts.push(
        h("span", { "data-legend": "only-a" }, ring(DIFF_COLOUR[ONLY_A]), ` touched only in ${a}`),
        h("span", { "data-legend": "only-b" }, ring(DIFF_COLOUR[ONLY_B]), ` touched only in ${b}`),
        h("span", { "data-legend": "kinds" }, ring(DIFF_COLOUR[KINDS_DIFFER]), " touched by both, by other kinds (read on one side, written on the other)"),
      );
    }
    parts.push(h("span", { class: "acc-dim" }, "Masked-off lanes are shown for one program at a time (pick one), where they point inside the tensor's memory; click a finding to select its program and cells. Records made before 2026-11-23 have no masked-off lanes."));
    this.legend.replaceChildren(...parts);
    this.legend.style.setProperty("--err", SEVERITY_COLOUR.error);
    this.legend.style.setProperty("--warn", SEVERITY_COLOUR.warning);
  }
}
