import { describe, expect, it } from "vitest";
import { explainKernel } from "../../fixtures";
import { heatCss } from "../../heat";
import type { ExplainKernel, KernelHeat } from "../../types";
import {
  breakdown,
  breakdownTitle,
  byText,
  heatCell,
  heatOf,
  hotSummary,
  hottestRows,
  irLineNote,
  lineSamples,
  maxCount,
  sourceCounts,
  sourceLineText,
  stallName,
} from "./heat";

// rms_scale of examples/hot_line.py as an H200 sampled it (tests/fixtures/cupti_sampling), cut down.
function heat(): KernelHeat {
  return {
    samples: 330073,
    lines: {
      "26": { samples: 546, not_issued: 247, stalls: { stalled_short_scoreboard: 196, stalled_mio_throttle: 82, stalled_not_selected: 82, stalled_wait: 67, stalled_selected: 61, stalled_math_pipe_throttle: 58 } },
      "30": {
        samples: 325003,
        not_issued: 239646,
        stalls: {
          stalled_dispatch_stall: 6,
          stalled_long_scoreboard: 10098,
          stalled_mio_throttle: 210458,
          stalled_not_selected: 28800,
          stalled_selected: 17069,
          stalled_short_scoreboard: 7689,
          stalled_wait: 50881,
          stalled_misc: 2,
        },
      },
      "31": { samples: 3727, not_issued: 2712, stalls: { stalled_drain: 1948, stalled_short_scoreboard: 891, stalled_branch_resolving: 384, stalled_wait: 288, stalled_selected: 206, stalled_not_selected: 6, stalled_dispatch_stall: 4 } },
      "40": { samples: 0, not_issued: 0, stalls: {} },
    },
    stages: { ttgir: [0, 546, 325003, 325003, 3727], sass: [0, 12, 900, 0] },
    by: { ttgir: "source line", sass: "PC" },
    note: "",
  };
}

const kernel = (extra: Partial<ExplainKernel> = {}): ExplainKernel =>
  explainKernel("rms_scale", { launches: 2, registers: 16, spills: 0, shared_bytes: 0, source_text: "a\n  b = 1  \nc\n", heat: heat(), ...extra });

describe("heatOf", () => {
  it("gives the heat of a sampled kernel, nothing for one without samples", () => {
    expect(heatOf(kernel())?.samples).toBe(330073);
    expect(heatOf(kernel({ heat: undefined }))).toBeNull();
    expect(heatOf(kernel({ heat: null }))).toBeNull();
    expect(heatOf(kernel({ heat: { ...heat(), samples: 0 } }))).toBeNull();
  });
});

describe("sourceCounts, lineSamples and maxCount", () => {
  it("count samples per source line, lines without samples left out", () => {
    const counts = sourceCounts(heat());
    expect([...counts]).toEqual([
      [26, 546],
      [30, 325003],
      [31, 3727],
    ]);
    expect(maxCount(counts.values())).toBe(325003);
    expect(maxCount([])).toBe(0);
  });

  it("find one line's samples, none for a line without", () => {
    expect(lineSamples(heat(), 30)?.not_issued).toBe(239646);
    expect(lineSamples(heat(), 40)).toBeNull();
    expect(lineSamples(heat(), 1)).toBeNull();
    expect(lineSamples(heat(), null)).toBeNull();
  });
});

describe("heatCell", () => {
  it("writes the count for people, coloured by its share of the pane's largest", () => {
    const top = heatCell(325003, 325003, 330073)!;
    expect(top).toEqual({ text: "325k", colour: heatCss(1), dark: true, title: "325,003 samples, 98% of the kernel's" });
    const small = heatCell(3727, 325003, 330073)!;
    expect(small.text).toBe("3.7k");
    expect(small.colour).toBe(heatCss(3727 / 325003));
    expect(small.dark).toBe(false);
    expect(small.title).toBe("3,727 samples, 1.1% of the kernel's");
  });

  it("leaves lines without samples blank", () => {
    expect(heatCell(0, 10, 10)).toBeNull();
    expect(heatCell(5, 0, 10)).toBeNull();
    expect(heatCell(NaN, 10, 10)).toBeNull();
  });
});

describe("breakdown", () => {
  it("lists a line's stalls, largest first, with their shares of the line and the not-issued share", () => {
    const b = breakdown(heat(), 30)!;
    expect(b.samples).toBe(325003);
    expect(b.share).toBeCloseTo(325003 / 330073);
    expect(b.notIssuedShare).toBeCloseTo(239646 / 325003);
    expect(b.stalls.map((s) => s.reason)).toEqual(["mio_throttle", "wait", "not_selected", "selected", "long_scoreboard", "short_scoreboard"]);
    expect(b.stalls[0].count).toBe(210458);
    expect(b.stalls[0].share).toBeCloseTo(0.6476, 4);
    expect(b.rest).toEqual({ reasons: 2, count: 8, share: 8 / 325003 });
    expect(breakdownTitle(b, "rms_scale")).toBe("line 30: 325,003 samples (98% of rms_scale's)");
  });

  it("sums nothing when every stall is shown, and gives nothing for a line without samples", () => {
    expect(breakdown(heat(), 26)!.rest).toBeNull();
    expect(breakdown(heat(), 26, 2)!.rest).toEqual({ reasons: 4, count: 82 + 67 + 61 + 58, share: 268 / 546 });
    expect(breakdown(heat(), 40)).toBeNull();
  });

  it("breaks ties by name", () => {
    expect(breakdown(heat(), 26)!.stalls.map((s) => s.reason).slice(1, 3)).toEqual(["mio_throttle", "not_selected"]);
  });
});

describe("stage texts", () => {
  it("say how a stage got its samples", () => {
    expect(byText("PC")).toBe("samples by PC");
    expect(byText("source line")).toBe("samples by source line");
    expect(byText(undefined)).toBe("");
  });

  it("say what an IR line's count is", () => {
    expect(irLineNote("sass", 12, 900, "PC", 330073)).toBe("sass line 12: 900 samples (0.3%) at its own PCs");
    expect(irLineNote("ttgir", 3, 325003, "source line", 330073)).toBe("ttgir line 3 shows the samples of its source line");
  });

  it("strip CUPTI's prefix from a stall's name", () => {
    expect(stallName("stalled_mio_throttle")).toBe("mio_throttle");
    expect(stallName("other")).toBe("other");
  });
});

describe("hottestRows", () => {
  const advice = {
    kernel: "rms_scale",
    file: "/work/main/examples/hot_line.py",
    line: 30,
    samples: 325003,
    share: 0.9846,
    stall: "stalled_mio_throttle",
    stall_share: 0.6476,
    meaning: "waits because the memory-input/output queue is full",
    change: "issue fewer of them",
    lints: [],
  };

  it("takes the report's hot lines and their advice", () => {
    const rows = hottestRows(kernel({ hot_lines: [advice] }));
    expect(rows).toEqual([
      { line: 30, samples: 325003, share: 0.9846, stall: "mio_throttle", stallShare: 0.6476, meaning: advice.meaning, change: advice.change, lints: [], here: true },
    ]);
    expect(hotSummary(rows[0])).toBe("325,003 samples · 98% of the kernel's · mio_throttle 65%");
  });

  it("adds explain's findings on the line when the report gave no lints, keeps those it gave", () => {
    const findings = [
      { kind: "k", line: 30, message: "a finding on 30", severity: "warning" },
      { kind: "k", line: 31, message: "elsewhere", severity: "info" },
    ];
    expect(hottestRows(kernel({ hot_lines: [advice], findings }))[0].lints).toEqual(["a finding on 30"]);
    expect(hottestRows(kernel({ hot_lines: [{ ...advice, lints: ["given"] }], findings }))[0].lints).toEqual(["given"]);
  });

  it("marks a hot line of another file as not in this source", () => {
    expect(hottestRows(kernel({ hot_lines: [{ ...advice, file: "/x/helpers.py" }] }))[0].here).toBe(false);
    expect(hottestRows(kernel({ hot_lines: [{ ...advice, file: "elsewhere/hot_line.py" }] }))[0].here).toBe(true);
  });

  it("falls back to the lines with most samples, naming a stall only when it dominates", () => {
    const rows = hottestRows(kernel({ hot_lines: [] }), 2);
    expect(rows.map((r) => [r.line, r.stall])).toEqual([
      [30, "mio_throttle"],
      [31, "drain"],
    ]);
    expect(rows[0].share).toBeCloseTo(325003 / 330073);
    expect(rows[0].meaning).toBe("");
    const flat = hottestRows(kernel({ heat: { ...heat(), lines: { "7": { samples: 10, not_issued: 0, stalls: { stalled_a: 2, stalled_b: 2, stalled_c: 2, stalled_d: 2, stalled_e: 2 } } } } }));
    expect(flat[0].stall).toBeNull();
    expect(hotSummary(flat[0])).toBe("10 samples · <0.1% of the kernel's · no dominant stall");
  });

  it("has nothing for a kernel without samples", () => {
    expect(hottestRows(kernel({ heat: null }))).toEqual([]);
  });
});

describe("sourceLineText", () => {
  it("quotes a source line, trimmed", () => {
    expect(sourceLineText("a\n  b = 1  \nc\n", 2)).toBe("b = 1");
    expect(sourceLineText("a", 5)).toBe("");
    expect(sourceLineText(null, 1)).toBe("");
    expect(sourceLineText("a", 0)).toBe("");
  });
});
