import { describe, expect, it } from "vitest";
import { hashOf, hashParams, viewOfHash } from "./route";

describe("viewOfHash", () => {
  it("names the view of the hash, whatever follows it", () => {
    expect(viewOfHash("#timeline")).toBe("timeline");
    expect(viewOfHash("#Profile")).toBe("profile");
    expect(viewOfHash("#accesses/2")).toBe("accesses");
    expect(viewOfHash("#explain?k=1")).toBe("explain");
  });

  it("is empty when the address has no hash", () => {
    expect(viewOfHash("")).toBe("");
    expect(viewOfHash("#")).toBe("");
  });
});

describe("hashParams and hashOf", () => {
  it("spell a view's state after a ?, and read it back", () => {
    const hash = hashOf("timeline", { t0: 1200, t1: 5000, q: "gemm kernel", sel: null, arrows: 0 });
    expect(hash).toBe("#timeline?t0=1200&t1=5000&q=gemm%20kernel&arrows=0");
    expect(viewOfHash(hash)).toBe("timeline");
    expect(hashParams(hash)).toEqual({ t0: "1200", t1: "5000", q: "gemm kernel", arrows: "0" });
  });

  it("leave a bare view when there is no state", () => {
    expect(hashOf("profile", { flat: null, frame: "" })).toBe("#profile");
    expect(hashParams("#profile")).toEqual({});
    expect(hashParams("")).toEqual({});
    expect(hashParams("#profile?frame=a%26b%3Dc&flat=1")).toEqual({ frame: "a&b=c", flat: "1" });
  });
});
