import { describe, expect, it } from "vitest";
import { baseName, explainHash, explainLinker, explainWanted, findExplainKernel, lineFrame } from "./links";
import { hashParams } from "./route";
import { explainReport as doc, explainKernel as kernel } from "./fixtures";
import type { KernelHeat } from "./types";

const HEAT: KernelHeat = { samples: 10, lines: {}, stages: {}, by: {}, note: "" };

describe("explainHash and explainWanted", () => {
  it("write a kernel and a line into the address and read them back", () => {
    const hash = explainHash({ kernel: "rms_scale", target: null, line: 30 });
    expect(hash).toBe("#explain?kernel=rms_scale&line=30");
    expect(explainWanted(hashParams(hash))).toEqual({ kernel: "rms_scale", target: null, line: 30 });
  });

  it("keep a target and names that need escaping", () => {
    const hash = explainHash({ kernel: "a&b c", target: "cuda:90", line: null });
    expect(explainWanted(hashParams(hash))).toEqual({ kernel: "a&b c", target: "cuda:90", line: null });
  });

  it("name nothing without a kernel, and drop a line that is not one", () => {
    expect(explainWanted({})).toBeNull();
    expect(explainWanted({ line: "3" })).toBeNull();
    expect(explainWanted({ kernel: "k", line: "x" })?.line).toBeNull();
    expect(explainWanted({ kernel: "k", line: "0" })?.line).toBeNull();
    expect(explainWanted({ kernel: "k", line: "2.5" })?.line).toBeNull();
  });
});

describe("findExplainKernel", () => {
  const docs = [doc(kernel("a", { target: "cuda:80" }), kernel("b")), doc(kernel("a", { target: "cuda:90", heat: HEAT }))];

  it("prefers the kernel of that name with samples", () => {
    expect(findExplainKernel(docs, { kernel: "a", target: null, line: null })).toEqual([1, 0]);
  });

  it("takes the first of that name when none has samples, and honours a target", () => {
    expect(findExplainKernel(docs, { kernel: "b", target: null, line: null })).toEqual([0, 1]);
    expect(findExplainKernel(docs, { kernel: "a", target: "cuda:80", line: null })).toEqual([0, 0]);
  });

  it("finds nothing for an unknown name or target", () => {
    expect(findExplainKernel(docs, { kernel: "c", target: null, line: null })).toBeNull();
    expect(findExplainKernel(docs, { kernel: "b", target: "cuda:80", line: null })).toBeNull();
  });
});

describe("lineFrame", () => {
  it("reads Proton's file:line@kernel frames", () => {
    expect(lineFrame("/work/main/examples/hot_line.py:30@rms_scale")).toEqual({ file: "/work/main/examples/hot_line.py", line: 30, kernel: "rms_scale" });
    expect(lineFrame("C:\\src\\k.py:7@k")).toEqual({ file: "C:\\src\\k.py", line: 7, kernel: "k" });
  });

  it("leaves other names alone", () => {
    expect(lineFrame("rms_scale")).toBeNull();
    expect(lineFrame("<no source line>")).toBeNull();
    expect(lineFrame("file.py:x@k")).toBeNull();
    expect(lineFrame("f.py:3@")).toBeNull();
  });
});

describe("baseName", () => {
  it("keeps a path's last part", () => {
    expect(baseName("/a/b/hot_line.py")).toBe("hot_line.py");
    expect(baseName("../../hot_line.py")).toBe("hot_line.py");
    expect(baseName("hot_line.py")).toBe("hot_line.py");
  });
});

describe("explainLinker", () => {
  const link = explainLinker([doc(kernel("rms_scale"))]);

  it("links an explained kernel's frame to its view", () => {
    expect(link("rms_scale")).toEqual({ href: "#explain?kernel=rms_scale", title: "open rms_scale in the Explain view" });
  });

  it("links a line frame of that kernel to its line, whatever the path's prefix", () => {
    expect(link("/elsewhere/examples/hot_line.py:30@rms_scale")?.href).toBe("#explain?kernel=rms_scale&line=30");
  });

  it("links a line of another file (an inlined helper) to the kernel only", () => {
    expect(link("/x/helpers.py:5@rms_scale")?.href).toBe("#explain?kernel=rms_scale");
  });

  it("links nothing else", () => {
    expect(link("gather_add")).toBeNull();
    expect(link("/x/hot_line.py:30@gather_add")).toBeNull();
    expect(link("vectorized_elementwise_kernel<…>")).toBeNull();
  });

  it("links nothing when no report was loaded", () => {
    expect(explainLinker([])("rms_scale")).toBeNull();
  });
});
