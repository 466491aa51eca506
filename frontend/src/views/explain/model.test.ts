import { describe, expect, it } from "vitest";
import { expectAnswers, explainKernel } from "../../fixtures";
import type { ExplainKernel } from "../../types";
import {
  bytes,
  firstStage,
  kernelLabel,
  mixEntries,
  orderedStages,
  recordRows,
  resourceRows,
  sassBars,
  sassTotal,
  sourceLinesWithIr,
  valueText,
} from "./model";

const kernel = (extra: Partial<ExplainKernel> = {}): ExplainKernel =>
  explainKernel("add_kernel", {
    file: "examples/vector_add.py", line: 8, args: ["x_ptr", "y_ptr", "n"], launches: 2, grids: [[4, 1, 1]],
    registers: 40, spills: 0, shared_bytes: 49152, ...extra,
  });

describe("kernelLabel", () => {
  it("names the kernel, its target, warps and stages", () => {
    expect(kernelLabel(kernel())).toBe("add_kernel · cuda:90 · 4w/3s");
  });

  it("shows ? for an unknown configuration", () => {
    expect(kernelLabel(kernel({ num_warps: null, num_stages: null }))).toBe("add_kernel · cuda:90 · ?w/?s");
  });
});

describe("bytes", () => {
  it("writes bytes, KiB and MiB with 3 significant digits", () => {
    expectAnswers(bytes, [
      [0, "0 B"], [1023, "1023 B"], [1024, "1.00 KiB"], [49152, "48.0 KiB"], [232448, "227 KiB"],
      [1048576, "1.00 MiB"], [1.5 * 1048576, "1.50 MiB"],
    ]);
  });

  it("has no unit past MiB: huge counts get an exponent", () => {
    expect(bytes(2 ** 40)).toBe("1.05e+6 MiB");
  });

  it("shows a dash for none", () => {
    expect(bytes(null)).toBe("–");
  });
});

describe("valueText", () => {
  it("shows fractions and utilisations up to 1 as percentages", () => {
    expect(valueText("fraction", 0.5)).toBe("50.0%");
    expect(valueText("util", 1)).toBe("100.0%");
    expect(valueText("util", 0)).toBe("0.0%");
    expect(valueText("fraction", 1.5)).toBe("1.50");
  });

  it("shows *_ns keys as times and other numbers as numbers", () => {
    expect(valueText("time_ns", 2500)).toBe("2.50 µs");
    expect(valueText("blocks_per_sm", 12)).toBe("12");
    expect(valueText("bytes", 3.5e9)).toBe("3.50G");
  });

  it("shows a dash for null, undefined and NaN", () => {
    expect(valueText("x", null)).toBe("–");
    expect(valueText("x", undefined)).toBe("–");
    expect(valueText("x", NaN)).toBe("–");
  });

  it("joins arrays, and writes nested records as key value pairs", () => {
    expect(valueText("grid", [1, 2.5, null])).toBe("1, 2.50, –");
    expect(valueText("limit", { by: "registers", fraction: 0.25, time_ns: 100 })).toBe("by registers, fraction 25.0%, time_ns 100 ns");
    expect(valueText("x", [])).toBe("");
    expect(valueText("x", {})).toBe("");
  });

  it("writes strings and booleans as they are", () => {
    expect(valueText("limiter", "shared memory")).toBe("shared memory");
    expect(valueText("ok", true)).toBe("true");
  });
});

describe("recordRows", () => {
  it("gives each key its value's text, in the record's order", () => {
    expect(recordRows({ warps_per_sm: 32, fraction: 0.5, limiter: "registers" })).toEqual([
      ["warps_per_sm", "32"],
      ["fraction", "50.0%"],
      ["limiter", "registers"],
    ]);
    expect(recordRows({})).toEqual([]);
  });
});

describe("resourceRows", () => {
  it("lists registers, spills, shared memory, configuration, launches, grids and args", () => {
    expect(resourceRows(kernel())).toEqual([
      ["registers", "40 / thread"],
      ["spills", "0 B"],
      ["shared memory", "48.0 KiB"],
      ["warps · stages · ctas", "4 · 3 · 1"],
      ["launches", "2"],
      ["grids", "(4, 1, 1)"],
      ["args", "x_ptr, y_ptr, n"],
    ]);
  });

  it("shows dashes for what was not measured and leaves out empty grids and args", () => {
    const k = kernel({ registers: null, spills: null, shared_bytes: null, num_warps: null, num_stages: null, num_ctas: null, grids: [], args: [] });
    expect(resourceRows(k)).toEqual([
      ["registers", "–"],
      ["spills", "–"],
      ["shared memory", "–"],
      ["warps · stages · ctas", "– · – · –"],
      ["launches", "2"],
    ]);
  });

  it("shows the first 6 grids and how many there were", () => {
    const grids = Array.from({ length: 8 }, (_, i) => [i + 1, 1, 1]);
    const row = resourceRows(kernel({ grids })).find(([key]) => key === "grids");
    expect(row).toEqual(["grids", "(1, 1, 1) (2, 1, 1) (3, 1, 1) (4, 1, 1) (5, 1, 1) (6, 1, 1) … 8 in all"]);
    const six = resourceRows(kernel({ grids: grids.slice(0, 6) })).find(([key]) => key === "grids");
    expect(six![1]).toBe("(1, 1, 1) (2, 1, 1) (3, 1, 1) (4, 1, 1) (5, 1, 1) (6, 1, 1)");
  });
});

describe("the SASS mix", () => {
  // Integer-like keys come first in a JS object, in numeric order: "32" before "128".
  const mix = { total: 100, ffma: 40, ldg: 0, tensor_core_ops: { hmma: 10, imma: 0 }, global_loads: { "128": 30, "32": 30 }, note: "x" };

  it("flattens groups to 'group width', drops zeros and the total, largest first", () => {
    expect(mixEntries(mix)).toEqual([
      ["ffma", 40],
      ["global_loads 32", 30],
      ["global_loads 128", 30],
      ["tensor_core_ops hmma", 10],
    ]);
  });

  it("has no entries for an empty mix or one with only a total", () => {
    expect(mixEntries({})).toEqual([]);
    expect(mixEntries({ total: 5 })).toEqual([]);
  });

  it("reads the total only when it is a number", () => {
    expect(sassTotal(mix)).toBe(100);
    expect(sassTotal({})).toBeNull();
    expect(sassTotal({ total: "12" })).toBeNull();
  });

  it("draws bars as shares of the largest, at least 1% wide", () => {
    expect(sassBars(mix)).toEqual([
      { name: "ffma", count: 40, width: "100%" },
      { name: "global_loads 32", count: 30, width: "75%" },
      { name: "global_loads 128", count: 30, width: "75%" },
      { name: "tensor_core_ops hmma", count: 10, width: "25%" },
    ]);
    expect(sassBars({ ffma: 1000, bra: 1 })[1]).toEqual({ name: "bra", count: 1, width: "1%" });
    expect(sassBars({})).toEqual([]);
  });

  it("keeps the 12 largest classes", () => {
    const many = Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`op${i}`, i + 1]));
    const bars = sassBars(many);
    expect(bars.length).toBe(12);
    expect(bars[0]).toEqual({ name: "op14", count: 15, width: "100%" });
    expect(bars[11].name).toBe("op3");
  });
});

describe("stages", () => {
  it("come in compiler order, unknown ones after in the document's order", () => {
    expect(orderedStages({ sass: 1, custom: 1, ttir: 1, ptx: 1, ttgir: 1, amdgcn: 1, llir: 1 })).toEqual(["ttir", "ttgir", "llir", "ptx", "sass", "amdgcn", "custom"]);
    expect(orderedStages({ zeta: 1, alpha: 1 })).toEqual(["zeta", "alpha"]);
    expect(orderedStages({})).toEqual([]);
  });

  it("open on TTGIR when there is one, else the first", () => {
    expect(firstStage(["ttir", "ttgir", "ptx"])).toBe("ttgir");
    expect(firstStage(["ptx", "sass"])).toBe("ptx");
  });

  it("mark the source lines any stage has IR for", () => {
    const stageText = {
      ttir: { lines: ["a", "b", "c", "d"], src: [3, null, 3, 5] },
      ptx: { lines: ["e", "f"], src: [7, null] },
      sass: { lines: [], src: [] },
    };
    expect([...sourceLinesWithIr(stageText)].sort((a, b) => a - b)).toEqual([3, 5, 7]);
    expect(sourceLinesWithIr({}).size).toBe(0);
  });
});
