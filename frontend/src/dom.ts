// Small DOM helpers shared by the views (no UI framework: the views draw their large parts on
// canvas and build the rest with these). The pure number/time formatting is in format.ts.

type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

/** An element with attributes (on* keys become listeners; data-* and others set as attributes). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Node | string | null | undefined | false)[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value as EventListener);
    } else if (key === "class") {
      el.className = String(value);
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child);
  }
  return el;
}

/** Show a tooltip beside the pointer, kept inside the window. */
export function placeTip(tip: HTMLElement, e: MouseEvent): void {
  tip.hidden = false;
  const x = Math.min(e.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
  const y = e.clientY + 16 + tip.offsetHeight > window.innerHeight ? e.clientY - tip.offsetHeight - 8 : e.clientY + 16;
  tip.style.left = `${Math.max(4, x)}px`;
  tip.style.top = `${Math.max(4, y)}px`;
}

/** A canvas sized to its box at the screen's pixel ratio; returns its 2-D context. */
export function fitCanvas(canvas: HTMLCanvasElement, width: number, height: number): CanvasRenderingContext2D {
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.max(1, Math.round(width * ratio));
  canvas.height = Math.max(1, Math.round(height * ratio));
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  if (!ctx) throw new Error("no 2-D canvas");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  return ctx;
}

/** A <select> of labels; calls back with the chosen index. */
export function picker(labels: string[], chosen: number, onPick: (i: number) => void, attrs: Attrs = {}): HTMLSelectElement {
  const select = h("select", attrs);
  labels.forEach((label, i) => select.append(h("option", { value: i, selected: i === chosen }, label)));
  select.addEventListener("change", () => onPick(Number(select.value)));
  return select;
}

/** Source text as numbered lines (each a `.ln` span with `data-line`). Returns the <pre>. */
export function codeBlock(text: string, first = 1, attrs: Attrs = {}): HTMLPreElement {
  const pre = h("pre", { class: "code", ...attrs });
  const lines = text.split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  lines.forEach((line, i) => {
    const n = first + i;
    pre.append(h("span", { class: "ln", "data-line": n }, h("i", {}, String(n)), line, "\n"));
  });
  return pre;
}
