// The Explain view: per kernel specialization, its source beside each compiler stage's text,
// linked both ways through the stages' source locations, with a resources/SASS/findings summary.
import "./explain.css";
import { codeBlock, h } from "../../dom";
import type { ExplainData, ExplainKernel, Index } from "../../types";
import { findingsCard, resourceCards, sassCard } from "./cards";
import { firstStage, kernelLabel, orderedStages, sourceLinesWithIr } from "./model";
import { scrollWithin, StageView } from "./stage";

export function mountExplain(root: HTMLElement, index: Index): void {
  root.classList.add("exp-root");
  const bar = h("div", { class: "toolbar exp-kernels" });
  const body = h("div", { class: "exp-body" });
  root.append(bar, body);
  const buttons: HTMLButtonElement[] = [];
  const many = index.explains.length > 1;
  let first: (() => void) | null = null;
  index.explains.forEach((doc: ExplainData, d) => {
    const group = h("span", { class: "exp-doc" });
    if (many) group.append(h("span", { class: "exp-dim", title: doc.source }, `${doc.name}${doc.device ? ` (${doc.device})` : ""}:`));
    doc.kernels.forEach((k, i) => {
      const open = (): void => {
        for (const b of buttons) b.setAttribute("aria-pressed", String(b === button));
        body.replaceChildren(...docNotes(doc), new KernelPane(k).el);
      };
      const button = h("button", { class: "exp-kbtn", "data-kernel": k.name, "data-key": `${d}:${i}`, title: `${k.file}:${k.line}`, onclick: open }, kernelLabel(k));
      buttons.push(button);
      group.append(button);
      first ??= open;
    });
    if (!doc.kernels.length) group.append(h("span", { class: "exp-dim" }, `${doc.name}: no kernels`));
    bar.append(group);
  });
  if (first) (first as () => void)();
  else body.append(...index.explains.flatMap(docNotes), h("p", { class: "empty" }, "No kernel was explained."));
}

function docNotes(doc: ExplainData): HTMLElement[] {
  return doc.errors.map((e) => h("div", { class: "error" }, `${doc.name}: ${e}`));
}

/** One kernel: header, summary cards, then source | stage panes. */
class KernelPane {
  readonly el: HTMLElement;
  private readonly stages = new Map<string, StageView>();
  private readonly stageBox = h("div", { class: "exp-stagebox" });
  private readonly tabs = h("div", { class: "exp-tabs", role: "tablist" });
  private readonly source: HTMLPreElement | null;
  private shown: StageView | null = null;
  private selectedSrc: number | null = null;
  private selectedEl: HTMLElement | null = null;

  constructor(private readonly k: ExplainKernel) {
    this.source = k.source_text !== null ? codeBlock(k.source_text, 1, { class: "code exp-source", "data-source": k.file }) : null;
    if (this.source) this.wireSource(this.source);
    const names = orderedStages(k.stage_text);
    for (const name of names) {
      const count = k.stage_text[name].lines.length;
      this.tabs.append(h("button", { role: "tab", "data-stage-tab": name, onclick: () => this.showStage(name) }, name, h("span", { class: "exp-dim" }, ` ${count.toLocaleString("en-US")}`)));
    }
    this.el = h(
      "div",
      { class: "exp-kernel", "data-kernel": k.name },
      h("div", { class: "exp-head" }, h("b", {}, k.name), h("span", { class: "exp-dim" }, ` ${k.target} · ${k.file}:${k.line}`)),
      h("div", { class: "exp-cards" }, ...resourceCards(k), sassCard(k), findingsCard(k, (line) => this.selectSource(line, true))),
      h(
        "div",
        { class: "exp-panes" },
        h("div", { class: "exp-left" }, h("div", { class: "exp-panehead" }, "source"), this.source ?? h("p", { class: "error" }, `The source of ${k.file} could not be read when the report was made.`)),
        h("div", { class: "exp-right" }, this.tabs, this.stageBox),
      ),
    );
    if (!names.length) this.stageBox.append(h("p", { class: "empty" }, "No compiler stage was captured."));
    this.markSourceLines();
    if (names.length) this.showStage(firstStage(names));
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

  /** The stage's DOM is built on first show and kept; switching back only swaps it in. */
  private showStage(name: string): void {
    let view = this.stages.get(name);
    if (!view) {
      view = new StageView(name, this.k.stage_text[name], (line, src) => this.pickIr(line, src));
      this.stages.set(name, view);
    }
    for (const b of this.tabs.querySelectorAll<HTMLElement>("button")) b.setAttribute("aria-selected", String(b.dataset.stageTab === name));
    this.stageBox.replaceChildren(view.pre);
    this.shown = view;
    view.highlight(this.selectedSrc);
  }

  /** Select a source line: mark it, highlight its IR lines in the stage shown, scroll both. */
  selectSource(line: number, scrollSource: boolean): void {
    this.markSelected(line, scrollSource);
    this.shown?.highlight(line);
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
  }
}
