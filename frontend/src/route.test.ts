import { describe, expect, it } from "vitest";
import { viewOfHash } from "./route";

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
