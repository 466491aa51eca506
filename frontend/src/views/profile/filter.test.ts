import { describe, expect, it } from "vitest";
import type { ProfileData } from "../../types";
import { addsUp, filterModel, keptText, patternMatcher } from "./filter";
import fixture from "./filter.fixture.json";
import { buildModel } from "./model";

interface Case {
  pattern: string;
  matches: number;
  nodes: number[];
  values: Record<string, (number | null)[]>;
}

// deuteron view -i's answers on real profiles (tests/view/test_filter_parity.py writes them and
// checks they are today's): the page's filter must keep the same frames with the same numbers.
describe("the page's filter gives deuteron view -i's frames and numbers", () => {
  for (const profile of fixture.profiles) {
    const m = buildModel(profile.data as unknown as ProfileData);
    for (const c of profile.cases as Case[]) {
      it(`${profile.source}: '${c.pattern}'`, () => {
        const f = filterModel(m, c.pattern);
        expect(f.count).toBe(c.matches);
        const kept = Array.from(f.keep.keys()).filter((i) => f.keep[i]);
        expect(kept).toEqual(c.nodes);
        m.data.columns.forEach((label, col) => {
          c.nodes.forEach((node, k) => {
            const want = c.values[label][k];
            const have = f.vals[col][node];
            if (want === null) expect(have, `${label} of node ${node}`).toBeNaN();
            // the page's values travel with six significant digits; a frame on the way sums them
            else expect(Math.abs(have - want), `${label} of node ${node}`).toBeLessThanOrEqual(Math.abs(want) * 2e-5 + 1e-9);
          });
        });
      });
    }
  }
});

describe("patternMatcher", () => {
  it("finds text or a regex anywhere, case ignored; a name pasted whole finds itself", () => {
    const found = patternMatcher("MM");
    expect([found("aten::mm"), found("aten::addmm"), found("aten::add")]).toEqual([true, true, false]);
    expect(patternMatcher("optimizer.step (AdamW)")("optimizer.step (AdamW)")).toBe(true);
    expect([patternMatcher("^mm")("aten::mm"), patternMatcher("^aten")("aten::mm")]).toEqual([false, true]);
    expect(() => patternMatcher("attn(")).toThrow(SyntaxError);
  });

  it("sums only what adds up on the way to a match", () => {
    expect(["time/ms", "time/%", "cpu_time/ms", "count", "num_samples"].map(addsUp)).toEqual([true, true, true, true, true]);
    expect(["avg_time/us", "tflop/s", "gbyte/s", "util", "roofline_time/us", "calls"].map(addsUp)).toEqual([false, false, false, false, false, false]);
  });
});

describe("keptText", () => {
  it("says what ROOT keeps of the run's total, as deuteron view says it", () => {
    const shadow = fixture.profiles[1];
    const m = buildModel(shadow.data as unknown as ProfileData);
    expect(keptText(m, filterModel(m, "FillFunctor"), 0)).toBe("ROOT keeps 0.00211 of the run's 1.13 time/ms (0.2%)");
    expect(keptText(m, filterModel(m, "FillFunctor"), 2)).toBe(null); // avg_time/us: not a sum, no value at ROOT
    expect(keptText(m, filterModel(m, "nothing here"), 0)).toBe(null);
  });
});
