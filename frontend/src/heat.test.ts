import { describe, expect, it } from "vitest";
import { HEAT, heatCss, heatStep, heatStops, packedCss } from "./heat";

describe("heatStep and heatCss", () => {
  it("map 0..1 onto the ramp's 256 steps, clamped", () => {
    expect(heatStep(0)).toBe(0);
    expect(heatStep(0.5)).toBe(128);
    expect(heatStep(1)).toBe(255);
    expect(heatStep(-1)).toBe(0);
    expect(heatStep(7)).toBe(255);
    expect(heatStep(NaN)).toBe(0);
  });

  it("give the ramp's colours as CSS, coolest to hottest", () => {
    expect(heatCss(0)).toBe("rgb(255 247 188)");
    expect(heatCss(1)).toBe("rgb(103 0 13)");
    expect(heatCss(0.5)).toBe(packedCss(HEAT[128]));
  });

  it("give a legend the ramp's ends", () => {
    const stops = heatStops().split(",");
    expect(stops).toHaveLength(6);
    expect(stops[0]).toBe(heatCss(0));
    expect(stops[5]).toBe(heatCss(1));
  });
});
