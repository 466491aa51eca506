// The Explain view: per kernel specialization, its source beside each compiler stage's text,
// linked both ways through the stages' source locations, with a resources/SASS/findings summary.
// A sampled kernel (`deuteron explain --profile`) adds a heat column to every pane, the stall
// breakdown on hover and its hottest lines. The address names the kernel and the selected line
// (`#explain?kernel=rms_scale&line=30`, links.ts), so the profile links here and a copied link
// opens the same place.
import "./explain.css";
import { codeBlock, h } from "../../dom";
import { readState, writeState } from "../../hashstate";
import { explainWanted, findExplainKernel, type ExplainWanted } from "../../links";
import type { ExplainData, ExplainKernel, Index } from "../../types";
import { findingsCard, resourceCards, sassCard } from "./cards";
import { byText, heatOf } from "./heat";
import { addSourceHeat, HeatTip, hotLinesCard } from "./heatview";
import { firstStage, kernelLabel, orderedStages, sourceLinesWithIr } from "./model";
import { scrollWithin, StageView, type StageHeat } from "./stage";

export function mountExplain(root: HTMLElement, index: Index): void {
  root.classList.add("exp-root");
  const bar = h("div", { class: "toolbar exp-kernels" });
  const body = h("div", { class: "exp-body" });
  root.append(bar, body);
  const buttons: HTMLButtonElement[] = [];
  const many = index.explains.length > 1;
  let shown: { d: number; i: number; pane: KernelPane } | null = null;
  /** The address names the target too only where the name alone is ambiguous. */
  const sameName = (k: ExplainKernel): number => index.explains.reduce((n, doc) => n + doc.kernels.filter((o) => o.name === k.name).length, 0);
  const save = (): void => {
    if (!shown) return;
    const k = index.explains[shown.d].kernels[shown.i];
    writeState("explain", { kernel: k.name, target: sameName(k) > 1 ? k.target : null, line: shown.pane.selected });
  };
  /** Show kernel i of document d (kept when it is shown already) and, when given, reveal a line. */
  const open = (d: number, i: number, line: number | null = null): void => {
    if (!shown || shown.d !== d || shown.i !== i) {
      const doc = index.explains[d];
      const pane = new KernelPane(doc.kernels[i], save);
      for (const b of buttons) b.setAttribute("aria-pressed", String(b.dataset.key === `${d}:${i}`));
      body.replaceChildren(...docNotes(doc), pane.el);
      shown = { d, i, pane };
    }
    if (line !== null) shown.pane.reveal(line);
    save();
  };
  /** Follow a link: the kernel (and line) it names, when it names one this page has. */
  const follow = (want: ExplainWanted | null): boolean => {
    const at = want ? findExplainKernel(index.explains, want) : null;
    if (!at || !want) return false;
    const same = shown && shown.d === at[0] && shown.i === at[1];
    if (!same || (want.line !== null && want.line !== shown?.pane.selected)) open(at[0], at[1], want.line);
    else save(); // the kernel shown already: the address keeps its selected line
    return true;
  };
  index.explains.forEach((doc: ExplainData, d) => {
    const group = h("span", { class: "exp-doc" });
    if (many) group.append(h("span", { class: "exp-dim", title: doc.source }, `${doc.name}${doc.device ? ` (${doc.device})` : ""}:`));
    doc.kernels.forEach((k, i) => {
      const button = h("button", { class: "exp-kbtn", "data-kernel": k.name, "data-key": `${d}:${i}`, "data-sampled": heatOf(k) ? 1 : null, title: `${k.file}:${k.line}`, onclick: () => open(d, i) }, kernelLabel(k));
      buttons.push(button);
      group.append(button);
    });
    if (!doc.kernels.length) group.append(h("span", { class: "exp-dim" }, `${doc.name}: no kernels`));
    bar.append(group);
  });
  // A link followed while this view is mounted (the profile's, Back, Forward) changes the hash.
  const onAddress = (): void => void follow(explainWanted(readState("explain")));
  window.addEventListener("hashchange", onAddress);
  window.addEventListener("popstate", onAddress);
  if (follow(explainWanted(readState("explain")))) return;
  const first = index.explains.findIndex((doc) => doc.kernels.length > 0);
  if (first >= 0) open(first, 0);
  else body.append(...index.explains.flatMap(docNotes), h("p", { class: "empty" }, "No kernel was explained."));
}

function docNotes(doc: ExplainData): HTMLElement[] {
  return doc.errors.map((e) => h("div", { class: "error" }, `${doc.name}: ${e}`));
}

/** One kernel: header, hottest lines (sampled kernels), summary cards, then source | stage panes. */
class KernelPane {
  readonly el: HTMLElement;
  private readonly stages = new Map<string, StageView>();
  private readonly stageBox = h("div", { class: "exp-stagebox" });
  private readonly tabs = h("div", { class: "exp-tabs", role: "tablist" });
  private readonly heatBy = h("span", { class: "exp-heatby", hidden: true });
  private readonly panes: HTMLElement;
  private readonly source: HTMLPreElement | null;
  private readonly tip: HeatTip | null = null;
  private shown: StageView | null = null;
  private selectedSrc: number | null = null;
  private selectedEl: HTMLElement | null = null;

  constructor(
    private readonly k: ExplainKernel,
    /** The selected source line changed (the view puts it in the address). */
    private readonly onSelect: () => void,
  ) {
    const heat = heatOf(k);
    this.source = k.source_text !== null ? codeBlock(k.source_text, 1, { class: "code exp-source", "data-source": k.file }) : null;
    if (this.source) this.wireSource(this.source);
    if (heat) {
      this.tip = new HeatTip(k, heat, (stage, line) => this.stages.get(stage)?.countAt(line) ?? 0);
      if (this.source) {
        addSourceHeat(this.source, heat);
        this.tip.watch(this.source, (ln) => ({ src: Number(ln.dataset.line) }));
      }
    }
    const names = orderedStages(k.stage_text);
    for (const name of names) {
      const count = k.stage_text[name].lines.length;
      const by = heat ? byText(heat.by[name]) : "";
      this.tabs.append(h("button", { role: "tab", "data-stage-tab": name, title: by || null, onclick: () => this.showStage(name) }, name, h("span", { class: "exp-dim" }, ` ${count.toLocaleString("en-US")}`)));
    }
    this.tabs.append(this.heatBy);
    this.panes = h(
      "div",
      { class: "exp-panes" },
      h("div", { class: "exp-left" }, h("div", { class: "exp-panehead" }, "source"), this.source ?? h("p", { class: "error" }, `The source of ${k.file} could not be read when the report was made.`)),
      h("div", { class: "exp-right" }, this.tabs, this.stageBox),
    );
    this.el = h(
      "div",
      { class: "exp-kernel", "data-kernel": k.name, "data-sampled": heat ? 1 : null },
      h("div", { class: "exp-head" }, h("b", {}, k.name), h("span", { class: "exp-dim" }, ` ${k.target} · ${k.file}:${k.line}`)),
      hotLinesCard(k, (line) => this.reveal(line)),
      h("div", { class: "exp-cards" }, ...resourceCards(k), sassCard(k), findingsCard(k, (line) => this.selectSource(line, true))),
      heat?.note ? h("p", { class: "exp-heatnote", role: "note" }, heat.note) : null,
      this.panes,
      this.tip?.el,
    );
    if (!names.length) this.stageBox.append(h("p", { class: "empty" }, "No compiler stage was captured."));
    this.markSourceLines();
    if (names.length) this.showStage(firstStage(names));
  }

  /** The selected source line (null: none). */
  get selected(): number | null {
    return this.selectedSrc;
  }

  /** Gutter marks on source lines some stage has IR for. */
  private markSourceLines(): void {
    if (!this.source) return;
    for (const line of sourceLinesWithIr(this.k.stage_text)) this.sourceLine(line)?.classList.add("has-ir");
  }

  private sourceLine(line: number): HTMLElement | null {
    // codeBlock appends one span per line in order: line n is child n-1.
    const el = this.source?.children[line - 1] as HTMLElement | undefined;
    return el && el.dataset.line === String(line) ? el : this.source?.querySelector<HTMLElement>(`[data-line="${line}"]`) ?? null;
  }

  private wireSource(pre: HTMLPreElement): void {
    pre.addEventListener("click", (e) => {
      const el = (e.target as HTMLElement).closest<HTMLElement>(".ln");
      if (el && pre.contains(el)) this.selectSource(Number(el.dataset.line), false);
    });
  }

  /** A stage's samples, when the kernel has them and they line up with its text. */
  private stageHeat(name: string): StageHeat | null {
    const heat = heatOf(this.k);
    const counts = heat?.stages[name];
    if (!heat || !counts || counts.length !== this.k.stage_text[name].lines.length) return null;
    return { counts, kernelSamples: heat.samples };
  }

  /** The stage's DOM is built on first show and kept; switching back only swaps it in. */
  private showStage(name: string): void {
    let view = this.stages.get(name);
    if (!view) {
      const heat = this.stageHeat(name);
      view = new StageView(name, this.k.stage_text[name], (line, src) => this.pickIr(line, src), heat);
      if (heat && this.tip) {
        this.tip.watch(view.pre, (ln) => ({ src: ln.dataset.src ? Number(ln.dataset.src) : null, stage: name, line: Number(ln.dataset.line) }));
      }
      this.stages.set(name, view);
    }
    for (const b of this.tabs.querySelectorAll<HTMLElement>("button")) b.setAttribute("aria-selected", String(b.dataset.stageTab === name));
    const by = byText(heatOf(this.k)?.by[name]);
    this.heatBy.textContent = by;
    this.heatBy.dataset.by = heatOf(this.k)?.by[name] ?? "";
    this.heatBy.hidden = !by;
    this.stageBox.replaceChildren(view.pre);
    this.shown = view;
    view.highlight(this.selectedSrc);
  }

  /** Select a source line: mark it, highlight its IR lines in the stage shown, scroll both. */
  selectSource(line: number, scrollSource: boolean): void {
    this.markSelected(line, scrollSource);
    this.shown?.highlight(line);
  }

  /** Select a source line and bring the panes into the window, the line a third of the way down
   * its pane (a link or a hot line followed: the point is to see that line). */
  reveal(line: number): void {
    this.selectSource(line, true);
    this.panes.scrollIntoView({ block: "start" });
  }

  /** An IR line was clicked: select its source line and highlight its siblings (no scroll of
   * the stage: the line clicked is in view). */
  private pickIr(line: number, src: number | null): void {
    this.markSelected(src, true);
    this.shown?.highlight(src, line, false);
  }

  private markSelected(line: number | null, scroll: boolean): void {
    this.selectedEl?.classList.remove("sel");
    this.selectedSrc = line;
    this.selectedEl = line !== null ? this.sourceLine(line) : null;
    this.selectedEl?.classList.add("sel");
    if (this.source) this.source.dataset.selected = line === null ? "" : String(line);
    if (scroll && this.selectedEl && this.source) scrollWithin(this.source, this.selectedEl);
    this.onSelect();
  }
}
