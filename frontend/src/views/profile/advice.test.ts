import { describe, expect, it } from "vitest";
import type { AdviceFinding } from "../../types";
import { adviceSummary, rowTarget, rowTitle } from "./advice";

const row = (extra: Partial<AdviceFinding["evidence"][number]>): AdviceFinding["evidence"][number] => ({
  path: "a > b",
  line: "a > b  (calls=3)",
  numbers: { calls: 3 },
  names: "frame",
  node: 4,
  ...extra,
});

describe("rowTarget", () => {
  it("selects the node a row names when this tree has it", () => {
    expect(rowTarget(row({}), 10)).toBe(4);
    expect(rowTitle(row({}), 10)).toBe("select this frame");
    expect(rowTitle(row({ names: "line" }), 10)).toBe("select this source line's frame");
    expect(rowTitle(row({ names: "kernel" }), 10)).toBe("select this kernel");
  });

  it("selects nothing for a rank, a total, a cut frame, ROOT or a node out of range", () => {
    expect(rowTarget(row({ names: "rank", node: null }), 10)).toBe(-1);
    expect(rowTitle(row({ names: "rank", node: null }), 10)).toMatch(/^a rank/);
    expect(rowTarget(row({ names: null, node: null }), 10)).toBe(-1);
    expect(rowTitle(row({ names: null, node: null }), 10)).toMatch(/cut by the threshold/);
    expect(rowTarget(row({ node: 0 }), 10)).toBe(-1);
    expect(rowTarget(row({ node: 10 }), 10)).toBe(-1);
  });
});

describe("adviceSummary", () => {
  const finding = (kind: string): AdviceFinding => ({ kind, title: "t", headline: `[${kind}] t`, evidence: [row({})] });

  it("counts the findings and names their kinds once each", () => {
    expect(adviceSummary([finding("idle"), finding("lines"), finding("lines")])).toBe("advice: 3 findings (idle, lines)");
    expect(adviceSummary([finding("copies")])).toBe("advice: 1 finding (copies)");
    expect(adviceSummary([])).toBe("advice: nothing to flag");
  });
});
