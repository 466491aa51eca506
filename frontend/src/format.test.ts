import { describe, expect, it } from "vitest";
import { expectAnswers } from "./fixtures";
import { colourOf, fmt, fmtCount, fmtNs, fmtShare, timeUnit } from "./format";

describe("fmt", () => {
  it("shows a dash for what has no value, NaN included", () => {
    expectAnswers(fmt, [[null, "–"], [undefined, "–"], [NaN, "–"]]);
  });

  it("shows infinities as symbols and both zeros as 0", () => {
    expectAnswers(fmt, [[Infinity, "∞"], [-Infinity, "-∞"], [0, "0"], [-0, "0"]]);
  });

  it("writes integers below a million in full, with thousands separated", () => {
    expectAnswers(fmt, [[7, "7"], [1234, "1,234"], [-999999, "-999,999"]]);
  });

  it("gives large numbers 3 significant digits and an SI suffix", () => {
    expectAnswers(fmt, [
      [1e6, "1.00M"], [1234567, "1.23M"], [1234567.8, "1.23M"], [-2.5e6, "-2.50M"], [1.5e9, "1.50G"],
      [4.2e15, "4.20P"],
    ]);
  });

  it("stays on P past the last suffix (huge numbers)", () => {
    // 1e18 / 1e15 = 1000: three digits of 1000 need an exponent.
    expect(fmt(1e18)).toBe("1.00e+3P");
    expect(fmt(Number.MAX_VALUE)).toBe("1.80e+293P");
  });

  it("gives fractions one decimal from 100 up, 3 significant digits below, exponents under 1e-3", () => {
    expectAnswers(fmt, [
      [123.456, "123.5"], [3.14159, "3.14"], [0.5, "0.500"], [0.001, "0.00100"], [0.0001234, "1.23e-4"],
      [-0.25, "-0.250"],
    ]);
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
    expectAnswers(fmtNs, [[0, "0 ns"], [999, "999 ns"], [12.6, "13 ns"]]);
  });

  it("gives larger times 3 significant digits in their unit", () => {
    expectAnswers(fmtNs, [
      [1500, "1.50 µs"], [2.5e6, "2.50 ms"], [200e6, "200 ms"], [3e9, "3.00 s"], [-1500, "-1.50 µs"],
    ]);
  });

  it("keeps every nanosecond when exact", () => {
    expectAnswers((x: number) => fmtNs(x, true), [
      [127055123, "127.055123 ms"], [1500, "1.500 µs"], [3e9 + 7, "3.000000007 s"], [42, "42 ns"],
    ]);
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
    expectAnswers(fmtCount, [[0, "0"], [7, "7"], [999, "999"]]);
  });

  it("gives larger counts a suffix and at most three digits", () => {
    expectAnswers(fmtCount, [
      [1000, "1.0k"], [1234, "1.2k"], [9949, "9.9k"], [9950, "10k"], [325003, "325k"], [999499, "999k"],
      [999500, "1.0M"], [1165594, "1.2M"], [46856712, "47M"], [2.5e9, "2.5G"],
    ]);
  });

  it("shows a dash for what is not a number", () => {
    expect(fmtCount(NaN)).toBe("–");
  });
});

describe("fmtShare", () => {
  it("writes shares as percentages, one decimal below 10%", () => {
    expectAnswers(fmtShare, [[0.9846, "98%"], [0.6476, "65%"], [0.0113, "1.1%"], [1, "100%"]]);
  });

  it("keeps a tiny share visible and shows nothing as 0%", () => {
    expectAnswers(fmtShare, [[0.0004, "<0.1%"], [0, "0%"], [NaN, "0%"]]);
  });
});
