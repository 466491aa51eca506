import { describe, expect, it } from "vitest";
import { base64Bytes, unpack } from "./data";

/** A buffer as deuteron's Python packer lays it out: "DTP1", u32 header length, header JSON, then
 * each array at an 8-byte aligned offset. */
function packed(arrays: { name: string; dtype: string; bytes: Uint8Array; length: number }[], magic = "DTP1"): ArrayBuffer {
  const align = (n: number): number => (n + 7) & ~7;
  const entries = arrays.map((a) => ({ name: a.name, dtype: a.dtype, offset: 0, length: a.length }));
  // Room for the header with its offsets filled in (they only make it longer by a few digits).
  let offset = align(8 + JSON.stringify({ arrays: entries }).length + 16 * entries.length + 16);
  arrays.forEach((a, k) => {
    entries[k].offset = offset;
    offset = align(offset + a.bytes.length);
  });
  const header = new TextEncoder().encode(JSON.stringify({ arrays: entries }));
  const out = new Uint8Array(offset);
  out.set(new TextEncoder().encode(magic), 0);
  new DataView(out.buffer).setUint32(4, header.length, true);
  out.set(header, 8);
  arrays.forEach((a, k) => out.set(a.bytes, entries[k].offset));
  return out.buffer;
}

const bytesOf = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

// Written by deuteron/render/web/packed.py's pack() from start=f64 [0, 1.5, -2, NaN],
// name=u32 [0, 4294967295], site=i32 [-1, 2147483647], lane=u16 [65535, 7, 0], cat=u8 [].
const FROM_PYTHON =
  "RFRQMUEBAAB7ImFycmF5cyI6IFt7Im5hbWUiOiAic3RhcnQiLCAiZHR5cGUiOiAiZjY0IiwgIm9mZnNldCI6IDQxNiwgImxlbmd0aCI6IDR9LCB7Im5hbWUiOiAibmFtZSIsICJkdHlwZSI6ICJ1MzIiLCAib2Zmc2V0IjogNDQ4LCAibGVuZ3RoIjogMn0sIHsibmFtZSI6ICJzaXRlIiwgImR0eXBlIjogImkzMiIsICJvZmZzZXQiOiA0NTYsICJsZW5ndGgiOiAyfSwgeyJuYW1lIjogImxhbmUiLCAiZHR5cGUiOiAidTE2IiwgIm9mZnNldCI6IDQ2NCwgImxlbmd0aCI6IDN9LCB7Im5hbWUiOiAiY2F0IiwgImR0eXBlIjogInU4IiwgIm9mZnNldCI6IDQ3MiwgImxlbmd0aCI6IDB9XX0AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAPg/AAAAAAAAAMAAAAAAAAD4fwAAAAD//////////////3///wcAAAAAAA==";

describe("base64Bytes", () => {
  it("decodes base64 to the bytes it stands for", () => {
    expect(Array.from(new Uint8Array(base64Bytes("AAEC/w==")))).toEqual([0, 1, 2, 255]);
    expect(new TextDecoder().decode(base64Bytes("RFRQMQ=="))).toBe("DTP1");
  });

  it("decodes empty text to no bytes", () => {
    expect(base64Bytes("").byteLength).toBe(0);
  });
});

describe("unpack", () => {
  it("reads a buffer the Python side packed: every dtype, extremes, NaN and an empty array", () => {
    const buffer = base64Bytes(FROM_PYTHON);
    expect(buffer.byteLength).toBe(472);
    const out = unpack(buffer);
    expect(Object.keys(out)).toEqual(["start", "name", "site", "lane", "cat"]);
    expect(out.start).toBeInstanceOf(Float64Array);
    expect(Array.from(out.start)).toEqual([0, 1.5, -2, NaN]);
    expect(out.name).toBeInstanceOf(Uint32Array);
    expect(Array.from(out.name)).toEqual([0, 4294967295]);
    expect(out.site).toBeInstanceOf(Int32Array);
    expect(Array.from(out.site)).toEqual([-1, 2147483647]);
    expect(out.lane).toBeInstanceOf(Uint16Array);
    expect(Array.from(out.lane)).toEqual([65535, 7, 0]);
    expect(out.cat).toBeInstanceOf(Uint8Array);
    expect(out.cat.length).toBe(0);
  });

  it("maps the arrays onto the buffer without copying", () => {
    const buffer = base64Bytes(FROM_PYTHON);
    const out = unpack(buffer);
    expect(out.start.buffer).toBe(buffer);
    expect(out.start.byteOffset).toBe(416);
    expect(out.lane.byteOffset).toBe(464);
  });

  it("reads one element of each kind at its offset", () => {
    const buffer = packed([
      { name: "dur", dtype: "f64", bytes: bytesOf(Float64Array.of(1e300)), length: 1 },
      { name: "depth", dtype: "u8", bytes: Uint8Array.of(255), length: 1 },
      { name: "bin", dtype: "u32", bytes: bytesOf(Uint32Array.of(123456789)), length: 1 },
    ]);
    const out = unpack(buffer);
    expect(Array.from(out.dur)).toEqual([1e300]);
    expect(Array.from(out.depth)).toEqual([255]);
    expect(Array.from(out.bin)).toEqual([123456789]);
    expect(out.bin.byteOffset % 8).toBe(0);
  });

  it("gives nothing for a buffer of no arrays", () => {
    expect(unpack(packed([]))).toEqual({});
  });

  it("refuses a buffer without the magic", () => {
    expect(() => unpack(packed([], "DTP2"))).toThrow("not a packed answer");
    expect(() => unpack(new TextEncoder().encode('{"arrays": []}').buffer)).toThrow("not a packed answer");
  });

  it("refuses a dtype it does not know", () => {
    const buffer = packed([{ name: "half", dtype: "f16", bytes: new Uint8Array(2), length: 1 }]);
    expect(() => unpack(buffer)).toThrow("unknown dtype f16");
  });
});
