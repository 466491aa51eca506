// Links into the Explain view: the address that opens one kernel (and one of its source lines)
// there, how the Explain view reads it back, and which profile frames get such a link. The
// profile's kernel frames carry the kernel's name, and a sampled profile's line frames are
// Proton's `file:line@kernel`, so both are matched by name. Pure (no DOM): links.test.ts runs it.
import { hashOf } from "./route";
import type { ExplainData } from "./types";

/** What an Explain link names: a kernel, optionally its target and one of its source lines. */
export interface ExplainWanted {
  kernel: string;
  target: string | null;
  line: number | null;
}

/** The address of a kernel's explain view: `#explain?kernel=rms_scale&line=30`. */
export function explainHash(want: ExplainWanted): string {
  return hashOf("explain", { kernel: want.kernel, target: want.target, line: want.line });
}

/** What the Explain view's address asks for (its hash parameters), or null when it names no kernel. */
export function explainWanted(params: Record<string, string>): ExplainWanted | null {
  if (!params.kernel) return null;
  const line = Number(params.line);
  return {
    kernel: params.kernel,
    target: params.target || null,
    line: Number.isInteger(line) && line > 0 ? line : null,
  };
}

/** The explained kernel a link means, as [document, kernel] indices: the first of that name (and
 * target, when given) that has samples, else the first of that name; null when none has it. */
export function findExplainKernel(explains: ExplainData[], want: ExplainWanted): [number, number] | null {
  let first: [number, number] | null = null;
  for (let d = 0; d < explains.length; d++) {
    const kernels = explains[d].kernels;
    for (let i = 0; i < kernels.length; i++) {
      const k = kernels[i];
      if (k.name !== want.kernel || (want.target !== null && k.target !== want.target)) continue;
      if (k.heat) return [d, i];
      first ??= [d, i];
    }
  }
  return first;
}

/** A sampled profile's line frame, Proton's `file:line@kernel`; null for any other name. */
export function lineFrame(name: string): { file: string; line: number; kernel: string } | null {
  const m = /^(.+):(\d+)@([^@]+)$/.exec(name);
  return m ? { file: m[1], line: Number(m[2]), kernel: m[3] } : null;
}

/** A path's last part: the profile and the explain report may name one file by different paths
 * (absolute against relative, another machine's checkout), as deuteron/explain/heat.py compares. */
export function baseName(path: string): string {
  return path.split(/[\\/]/).pop() ?? path;
}

export interface ExplainLink {
  href: string;
  /** The link's tooltip: what it opens. */
  title: string;
}

/** For a profile: a frame name → the link to its explain view, or null. A frame links when its
 * name is an explained kernel's (whatever its type: Proton's files call kernels functions), or
 * when it is a line frame of one, which opens at that line (in the kernel's own file; a line of
 * another file, an inlined helper's, opens the kernel only). */
export function explainLinker(explains: ExplainData[]): (name: string) => ExplainLink | null {
  const files = new Map<string, string>();
  for (const doc of explains) for (const k of doc.kernels) if (!files.has(k.name) || k.heat) files.set(k.name, k.file);
  const cache = new Map<string, ExplainLink | null>();
  const link = (name: string): ExplainLink | null => {
    if (files.has(name)) return { href: explainHash({ kernel: name, target: null, line: null }), title: `open ${name} in the Explain view` };
    const frame = lineFrame(name);
    if (!frame || !files.has(frame.kernel)) return null;
    const own = baseName(frame.file) === baseName(files.get(frame.kernel)!);
    return {
      href: explainHash({ kernel: frame.kernel, target: null, line: own ? frame.line : null }),
      title: own ? `open ${frame.kernel} in the Explain view at line ${frame.line}` : `open ${frame.kernel} in the Explain view`,
    };
  };
  return (name) => {
    if (!cache.has(name)) cache.set(name, link(name));
    return cache.get(name)!;
  };
}
