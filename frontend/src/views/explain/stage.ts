// One compiler stage's text (TTIR, TTGIR, LLIR, PTX, SASS, ...) as a <pre> of lines, each with the
// source line it came from in a narrow column. SASS can run to tens of thousands of lines, so the
// DOM is built once per stage and kept, and lines are indexed by source line: highlighting a
// source line touches only the lines that were and will be highlighted, never the whole stage.
// For a sampled kernel each line starts with its heat cell (heatview.ts).
import { h } from "../../dom";
import { maxCount } from "./heat";
import { heatCellEl } from "./heatview";

/** Lines per block: blocks let the browser skip laying out the parts of a long stage that are
 * off screen (content-visibility), with a fixed height per line so positions stay exact. */
const BLOCK = 200;

/** A stage's samples: per IR line (aligned with its lines), and the kernel's total. */
export interface StageHeat {
  counts: number[];
  kernelSamples: number;
}

export class StageView {
  readonly pre: HTMLPreElement;
  /** IR lines by the source line they came from. */
  private readonly bySrc = new Map<number, HTMLElement[]>();
  private readonly lines: HTMLElement[] = [];
  private highlighted: HTMLElement[] = [];
  private current: HTMLElement | null = null;

  constructor(
    readonly name: string,
    stage: { lines: string[]; src: (number | null)[] },
    /** An IR line was clicked: its index and source line (null: no location). */
    onPick: (line: number, src: number | null) => void,
    /** Its samples, when the kernel was sampled (null: no heat column). */
    private readonly heat: StageHeat | null = null,
  ) {
    this.pre = h("pre", { class: heat ? "code exp-stage exp-heat" : "code exp-stage", "data-stage": name, "data-highlighted": 0 });
    const n = stage.lines.length;
    const max = heat ? maxCount(heat.counts) : 0;
    let block: HTMLElement | null = null;
    for (let i = 0; i < n; i++) {
      if (i % BLOCK === 0) {
        block = h("div", { class: "exp-block" });
        block.style.setProperty("--lines", String(Math.min(BLOCK, n - i)));
        this.pre.append(block);
      }
      const src = stage.src[i] ?? null;
      const el = document.createElement("span");
      el.className = src === null ? "ln nosrc" : "ln";
      el.dataset.line = String(i + 1);
      if (src !== null) el.dataset.src = String(src);
      const gutter = document.createElement("i");
      gutter.textContent = src === null ? "" : String(src);
      if (heat) el.append(heatCellEl(heat.counts[i] ?? 0, max, heat.kernelSamples));
      el.append(gutter, stage.lines[i], "\n");
      block!.append(el);
      this.lines.push(el);
      if (src !== null) {
        const list = this.bySrc.get(src);
        if (list) list.push(el);
        else this.bySrc.set(src, [el]);
      }
    }
    // One listener for the whole stage (not one per line).
    this.pre.addEventListener("click", (e) => {
      const el = (e.target as HTMLElement).closest<HTMLElement>(".ln");
      if (!el || !this.pre.contains(el)) return;
      const line = Number(el.dataset.line);
      onPick(line, el.dataset.src ? Number(el.dataset.src) : null);
    });
  }

  get lineCount(): number {
    return this.lines.length;
  }

  /** An IR line's samples (1-based; 0 without heat or samples). */
  countAt(line: number): number {
    return this.heat?.counts[line - 1] ?? 0;
  }

  /** Source lines with IR in this stage. */
  sources(): Iterable<number> {
    return this.bySrc.keys();
  }

  /** Highlight the IR lines of source line `src` (null clears); `current` (an IR line number)
   * gets its own mark. Scrolls to `current`, else to the first highlighted line. Returns the count. */
  highlight(src: number | null, current: number | null = null, scroll = true): number {
    for (const el of this.highlighted) el.classList.remove("hl");
    this.current?.classList.remove("cur");
    this.highlighted = src === null ? [] : this.bySrc.get(src) ?? [];
    for (const el of this.highlighted) el.classList.add("hl");
    this.current = current !== null ? this.lines[current - 1] ?? null : null;
    this.current?.classList.add("cur");
    this.pre.dataset.highlighted = String(this.highlighted.length);
    const target = this.current ?? this.highlighted[0];
    if (scroll && target && !this.current) scrollWithin(this.pre, target);
    return this.highlighted.length;
  }
}

/** Scroll a scrolling box so `el` sits a third of the way down, without moving the page
 * (scrollIntoView would scroll every ancestor). Measured with client rects: the blocks' layout
 * containment would make offsetTop relative to the block, not the box. */
export function scrollWithin(box: HTMLElement, el: HTMLElement): void {
  const top = el.getBoundingClientRect().top - box.getBoundingClientRect().top + box.scrollTop;
  if (top < box.scrollTop || top > box.scrollTop + box.clientHeight - 20) {
    box.scrollTop = Math.max(0, top - box.clientHeight / 3);
  }
}
