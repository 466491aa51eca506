import { describe, expect, it } from "vitest";
import { profileData } from "../../fixtures";
import type { ProfileData, SamplingData, StallData } from "../../types";
import { buildModel, describeNode } from "./model";
import { buildStalls, explainCommand, nodeTenths, sampledPlace, samplingLine, samplingRows, shareTenths, shellWord, stallBreakdown, stallColumns, stallSummary, tenthsText } from "./stalls";

// ROOT(0) ─┬─ k(1, kernel) ─┬─ k.py:41@k(2) ── standard.py:263(3)
//          │                └─ k.py:42@k(4)
//          └─ cpu(5)                           (no samples)
const STALLS: StallData = {
  reasons: ["stalled_not_selected", "stalled_wait", "stalled_long_scoreboard", "stalled_barrier", "stalled_drain", "stalled_misc", "stalled_membar", "stalled_imc_miss"],
  nodes: [0, 1, 2, 3, 4],
  counts: [
    [600, 200, 100, 50, 25, 12, 8, 5],
    [600, 200, 100, 50, 25, 12, 8, 5],
    [599, 200, 100, 50, 25, 12, 8, 5],
    [0, 200, 0, 0, 0, 0, 0, 0],
    [1, 0, 0, 0, 0, 0, 0, 0],
  ],
  samples: [1000, 1000, 999, 200, 1],
  not_issued: [300, 300, 299, null, 0],
  meanings: { stalled_wait: { meaning: "waits on a fixed-latency dependency", change: "interleave" } },
};

function sampled(extra: Partial<ProfileData> = {}): ProfileData {
  const tree = {
    parent: [-1, 0, 1, 2, 1, 0],
    name_id: [0, 1, 2, 3, 4, 5],
    type_id: [0, 1, 0, 0, 0, 0],
    names: ["ROOT", "k", "/src/k.py:41@k", "standard.py:263", "/src/k.py:42@k", "cpu"],
    values: [[1000, 1000, 999, 200, 1, null]],
  };
  return profileData(tree, { columns: ["num_samples"], stalls: STALLS, ...extra });
}

const SAMPLING: SamplingData = {
  recorded: true,
  mode: "continuous (kernels not serialised)",
  interval_cycles: 1024,
  asked_interval: 1000,
  samples: 1775328,
  dropped_samples: 0,
  hardware_buffer_full: 0,
  drains: 1,
  unplaced_samples: 1234,
  placed_kernel_samples: 1763755,
  kernels_with_lines: 2,
  kernels_without_lines: 13,
  samples_without_lines: 11573,
  error: null,
  program: "benchmarks/hot_line_kernel.py",
};

describe("shareTenths", () => {
  it("rounds shares so they add up to exactly 100.0%", () => {
    for (const counts of [[1, 1, 1], [2, 1, 1, 1, 1, 1, 1], [739829, 213075, 174519, 145252, 79020, 44475, 44277, 27636, 12480, 3231, 2], [5, 0, 995]]) {
      const t = shareTenths(counts)!;
      expect(t.reduce((a, b) => a + b, 0)).toBe(1000);
      counts.forEach((c, k) => expect(Math.abs(t[k] - (c * 1000) / counts.reduce((a, b) => a + b, 0))).toBeLessThan(1));
    }
    expect(shareTenths([1, 1, 1])).toEqual([334, 333, 333]);
  });
  it("has no share where there is nothing to share", () => {
    expect(shareTenths([])).toBeNull();
    expect(shareTenths([0, 0])).toBeNull();
  });
  it("says a share too small to show is there, not 0", () => {
    expect(tenthsText(0, 2)).toBe("<0.1%");
    expect(tenthsText(0, 0)).toBe("0.0%");
    expect(tenthsText(499, 10)).toBe("49.9%");
  });
});

describe("buildStalls", () => {
  it("is null for a profile without stalls", () => {
    expect(buildStalls(sampled({ stalls: undefined }), 6)).toBeNull();
    expect(buildModel(sampled({ stalls: undefined })).stalls).toBeNull();
  });
  it("puts each node's counts on its id, NaN where it has none", () => {
    const s = buildModel(sampled()).stalls!;
    expect(s.words[0]).toBe("not_selected");
    expect(s.counts[1][3]).toBe(200);
    expect(s.total[2]).toBe(999);
    expect(Number.isNaN(s.total[5])).toBe(true);
    expect(s.dominant[3]).toBe(1);
    expect(s.dominantShare[3]).toBe(1);
    expect(s.dominant[5]).toBe(-1);
    expect(Number.isNaN(s.notIssued[3])).toBe(true);
  });
});

describe("stallBreakdown", () => {
  const s = buildModel(sampled()).stalls!;
  it("lists the top reasons and the rest in one line, summing to 100.0% and to the total", () => {
    const b = stallBreakdown(s, 2)!;
    expect(b.parts.map((p) => p.word)).toEqual(["not_selected", "wait", "long_scoreboard", "barrier", "drain", "3 other reasons"]);
    expect(b.parts.map((p) => p.share)).toEqual(["60.0%", "20.0%", "10.0%", "5.0%", "2.5%", "2.5%"]);
    expect(b.parts.reduce((a, p) => a + p.tenths, 0)).toBe(1000);
    expect(b.parts.reduce((a, p) => a + p.count, 0)).toBe(999);
    expect(b.total).toBe(999);
    expect(b.notIssuedShare).toBe("29.9%");
    expect(b.note).toBeNull();
  });
  it("says nothing is hidden behind '1 other reason'", () => {
    expect(stallBreakdown(s, 2, 7)!.parts.map((p) => p.word)).toHaveLength(8);
  });
  it("has no breakdown for a frame without stall samples, and says so", () => {
    expect(stallBreakdown(s, 5)).toBeNull();
    expect(nodeTenths(s, 5)).toBeNull();
    expect(stallSummary(s, 5)).toMatch(/no share can be computed/);
  });
  it("says how num_samples and the stall columns differ (Proton's count each sample twice)", () => {
    const twice = buildModel(sampled({ stalls: { ...STALLS, samples: [2000, 2000, 1998, 400, 2] } })).stalls!;
    expect(stallBreakdown(twice, 1)!.note).toMatch(/counts each sample twice/);
    expect(stallBreakdown(twice, 1)!.parts[0].share).toBe("60.0%");
  });
  it("writes one line for tooltips, and the flame graph's tooltip has it", () => {
    const m = buildModel(sampled());
    expect(stallSummary(m.stalls!, 3)).toBe("stalls of 200 samples: wait 100.0%");
    expect(describeNode(m, 2)).toContain("stalls of 999 samples: not_selected 60.0%, wait 20.0%, long_scoreboard 10.0%, 5 other reasons 10.0%");
    expect(describeNode(m, 5)).not.toContain("stalls");
  });
});

describe("stallColumns", () => {
  const s = buildModel(sampled()).stalls!;
  const cols = stallColumns(s);
  it("offers the top stall and the run's three most frequent reasons", () => {
    expect(cols.map((c) => c.label)).toEqual(["top stall", "not_selected", "wait", "long_scoreboard"]);
    expect(cols[0].text(3)).toBe("wait 100.0%");
    expect(cols[1].text(2)).toBe("599 60.0%");
    expect(cols[2].cellTitle(2)).toBe("wait: 200 of 999 samples (20.0%)");
    expect(cols[1].text(4)).toBe("1 100.0%");
    expect(cols[1].text(3)).toBe("0"); // sampled, none of them on this reason
  });
  it("writes – for a frame without samples, and says why", () => {
    for (const c of cols) {
      expect(c.text(5)).toBe("–");
      expect(c.cellTitle(5)).toMatch(/no share can be computed/);
    }
  });
});

describe("sampling on the run card", () => {
  it("gives the interval, the dropped and the unplaced samples", () => {
    const rows = new Map(samplingRows(SAMPLING));
    expect(rows.get("sampling interval")).toBe("1,024 cycles (asked for 1,000)");
    expect(rows.get("dropped samples")).toBe("0 (0.0% of 1,775,328)");
    expect(rows.get("unplaced samples")).toBe("1,234 (0.1% of 1,763,755) on <no source line>, in kernels with a line table");
    expect(rows.get("without line table")).toBe("13 kernels, 11,573 (0.7% of 1,775,328) samples");
    expect(samplingLine(SAMPLING)).toBe("sampled every 1,024 cycles · 0 dropped · 0.1% unplaced");
    expect(samplingLine({ ...SAMPLING, unplaced_samples: 12 })).toBe("sampled every 1,024 cycles · 0 dropped · <0.1% unplaced");
  });
  it("says 'not recorded' for what the file does not hold, never 0", () => {
    const none: SamplingData = { ...SAMPLING, recorded: false, interval_cycles: null, asked_interval: null, samples: null, dropped_samples: null, hardware_buffer_full: null, unplaced_samples: null, placed_kernel_samples: null, kernels_with_lines: null, kernels_without_lines: null, samples_without_lines: null, mode: null };
    const rows = new Map(samplingRows(none));
    for (const key of ["sampling interval", "samples", "dropped samples", "unplaced samples"]) expect(rows.get(key)).toBe("not recorded");
    expect(samplingLine(none)).toMatch(/not recorded/);
    expect(samplingLine({ ...SAMPLING, dropped_samples: null })).toContain("dropped samples not recorded");
  });
});

describe("the way to the Explain view", () => {
  const m = buildModel(sampled());
  const name = (i: number): string => m.data.names[m.data.name_id[i]];
  const isKernel = (i: number): boolean => i === 1;
  it("finds the kernel and line of a line frame, of its inlined callee, and of the kernel", () => {
    expect(sampledPlace(name, m.parent, 2, isKernel)).toEqual({ kernel: "k", line: 41, file: "/src/k.py" });
    expect(sampledPlace(name, m.parent, 3, isKernel)).toEqual({ kernel: "k", line: 41, file: "/src/k.py" });
    expect(sampledPlace(name, m.parent, 1, isKernel)).toEqual({ kernel: "k", line: null, file: null });
    expect(sampledPlace(name, m.parent, 5, isKernel)).toBeNull();
  });
  it("writes the command, quoting what a shell would split", () => {
    expect(explainCommand("runs/hot.hatchet", "k", "benchmarks/hot_line_kernel.py --n 3")).toBe(
      "deuteron explain --profile runs/hot.hatchet --kernel k --json ex.json benchmarks/hot_line_kernel.py --n 3 && deuteron serve runs/hot.hatchet ex.json",
    );
    expect(explainCommand("my runs/a.hatchet", "k", null)).toContain("--profile 'my runs/a.hatchet' --kernel k --json ex.json YOUR_SCRIPT.py");
    expect(shellWord("it's")).toBe(`'it'"'"'s'`);
  });
});
