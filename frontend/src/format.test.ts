import { describe, expect, it } from "vitest";
import { colourOf, fmt, fmtCount, fmtNs, fmtShare, timeUnit } from "./format";

describe("fmt", () => {
  it("shows a dash for what has no value, NaN included", () => {
    expect(fmt(null)).toBe("–");
    expect(fmt(undefined)).toBe("–");
    expect(fmt(NaN)).toBe("–");
  });

  it("shows infinities as symbols and both zeros as 0", () => {
    expect(fmt(Infinity)).toBe("∞");
    expect(fmt(-Infinity)).toBe("-∞");
    expect(fmt(0)).toBe("0");
    expect(fmt(-0)).toBe("0");
  });

  it("writes integers below a million in full, with thousands separated", () => {
    expect(fmt(7)).toBe("7");
    expect(fmt(1234)).toBe("1,234");
    expect(fmt(-999999)).toBe("-999,999");
  });

  it("gives large numbers 3 significant digits and an SI suffix", () => {
    expect(fmt(1e6)).toBe("1.00M");
    expect(fmt(1234567)).toBe("1.23M");
    expect(fmt(1234567.8)).toBe("1.23M");
    expect(fmt(-2.5e6)).toBe("-2.50M");
    expect(fmt(1.5e9)).toBe("1.50G");
    expect(fmt(4.2e15)).toBe("4.20P");
  });

  it("stays on P past the last suffix (huge numbers)", () => {
    // 1e18 / 1e15 = 1000: three digits of 1000 need an exponent.
    expect(fmt(1e18)).toBe("1.00e+3P");
    expect(fmt(Number.MAX_VALUE)).toBe("1.80e+293P");
  });

  it("gives fractions one decimal from 100 up, 3 significant digits below, exponents under 1e-3", () => {
    expect(fmt(123.456)).toBe("123.5");
    expect(fmt(3.14159)).toBe("3.14");
    expect(fmt(0.5)).toBe("0.500");
    expect(fmt(0.001)).toBe("0.00100");
    expect(fmt(0.0001234)).toBe("1.23e-4");
    expect(fmt(-0.25)).toBe("-0.250");
  });
});

describe("timeUnit", () => {
  it("picks the largest unit the time reaches, by magnitude", () => {
    expect(timeUnit(3e9)).toEqual([1e9, "s"]);
    expect(timeUnit(1e9)).toEqual([1e9, "s"]);
    expect(timeUnit(999999)).toEqual([1e3, "µs"]);
    expect(timeUnit(-2e6)).toEqual([1e6, "ms"]);
  });

  it("falls back to ns below a nanosecond", () => {
    expect(timeUnit(0)).toEqual([1, "ns"]);
    expect(timeUnit(0.4)).toEqual([1, "ns"]);
  });
});

describe("fmtNs", () => {
  it("rounds nanoseconds to whole ones", () => {
    expect(fmtNs(0)).toBe("0 ns");
    expect(fmtNs(999)).toBe("999 ns");
    expect(fmtNs(12.6)).toBe("13 ns");
  });

  it("gives larger times 3 significant digits in their unit", () => {
    expect(fmtNs(1500)).toBe("1.50 µs");
    expect(fmtNs(2.5e6)).toBe("2.50 ms");
    expect(fmtNs(200e6)).toBe("200 ms");
    expect(fmtNs(3e9)).toBe("3.00 s");
    expect(fmtNs(-1500)).toBe("-1.50 µs");
  });

  it("keeps every nanosecond when exact", () => {
    expect(fmtNs(127055123, true)).toBe("127.055123 ms");
    expect(fmtNs(1500, true)).toBe("1.500 µs");
    expect(fmtNs(3e9 + 7, true)).toBe("3.000000007 s");
    expect(fmtNs(42, true)).toBe("42 ns");
  });
});

describe("colourOf", () => {
  // Hues from the 32-bit FNV-1a hash of the name, modulo 360 (worked out independently).
  it("takes the hue from the name's FNV-1a hash", () => {
    expect(colourOf("")).toBe("hsl(61 55% 62%)"); // 2166136261 % 360
    expect(colourOf("a")).toBe("hsl(340 55% 62%)"); // 3826002220 % 360
    expect(colourOf("matmul")).toBe("hsl(121 55% 62%)"); // 2483433481 % 360
    expect(colourOf("ROOT")).toBe("hsl(13 55% 62%)"); // 508485253 % 360
  });

  it("is stable and takes the saturation and lightness given", () => {
    expect(colourOf("matmul", 58, 64)).toBe("hsl(121 58% 64%)");
    expect(colourOf("matmul")).toBe(colourOf("matmul"));
  });
});

describe("fmtCount", () => {
  it("writes counts below 1000 in full", () => {
    expect(fmtCount(0)).toBe("0");
    expect(fmtCount(7)).toBe("7");
    expect(fmtCount(999)).toBe("999");
  });

  it("gives larger counts a suffix and at most three digits", () => {
    expect(fmtCount(1000)).toBe("1.0k");
    expect(fmtCount(1234)).toBe("1.2k");
    expect(fmtCount(9949)).toBe("9.9k");
    expect(fmtCount(9950)).toBe("10k");
    expect(fmtCount(325003)).toBe("325k");
    expect(fmtCount(999499)).toBe("999k");
    expect(fmtCount(999500)).toBe("1.0M");
    expect(fmtCount(1165594)).toBe("1.2M");
    expect(fmtCount(46856712)).toBe("47M");
    expect(fmtCount(2.5e9)).toBe("2.5G");
  });

  it("shows a dash for what is not a number", () => {
    expect(fmtCount(NaN)).toBe("–");
  });
});

describe("fmtShare", () => {
  it("writes shares as percentages, one decimal below 10%", () => {
    expect(fmtShare(0.9846)).toBe("98%");
    expect(fmtShare(0.6476)).toBe("65%");
    expect(fmtShare(0.0113)).toBe("1.1%");
    expect(fmtShare(1)).toBe("100%");
  });

  it("keeps a tiny share visible and shows nothing as 0%", () => {
    expect(fmtShare(0.0004)).toBe("<0.1%");
    expect(fmtShare(0)).toBe("0%");
    expect(fmtShare(NaN)).toBe("0%");
  });
});
