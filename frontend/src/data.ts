// How the page gets its data. Served: `fetch` from the local server. A `--html` file: the same
// answers ride inside the page (a <script type="application/json" id="deuteron-data"> holding
// {path: answer}); packed answers are base64 there. Nothing ever leaves for the network.

export type Packed = Record<string, Float64Array | Uint32Array | Int32Array | Uint16Array | Uint8Array>;

type Embedded = Record<string, unknown>;

let embedded: Embedded | null | undefined;

function embeddedData(): Embedded | null {
  if (embedded === undefined) {
    const tag = document.getElementById("deuteron-data");
    embedded = tag && tag.textContent ? (JSON.parse(tag.textContent) as Embedded) : null;
  }
  return embedded;
}

/** True when the page is a standalone file (no server behind it). */
export function standalone(): boolean {
  return embeddedData() !== null;
}

/** Answers live beside the page: the server keeps everything under a secret first path part. */
function served(path: string): string {
  return `.${path}`;
}

export async function getJSON<T>(path: string): Promise<T> {
  const inline = embeddedData();
  if (inline) {
    if (!(path in inline)) throw new Error(`${path} is not in this file (open it with deuteron serve)`);
    return inline[path] as T;
  }
  const reply = await fetch(served(path), { cache: "no-store" });
  if (!reply.ok) throw new Error(`${path}: ${reply.status} ${(await reply.text()).slice(0, 200)}`);
  return (await reply.json()) as T;
}

/** A packed answer; `signal` aborts its fetch (a level-of-detail window no longer wanted). */
export async function getPacked(path: string, signal?: AbortSignal): Promise<Packed> {
  const inline = embeddedData();
  let bytes: ArrayBuffer;
  if (inline) {
    const value = inline[path];
    if (typeof value !== "string") throw new Error(`${path} is not in this file (open it with deuteron serve)`);
    bytes = base64Bytes(value);
  } else {
    const reply = await fetch(served(path), { cache: "no-store", signal });
    if (!reply.ok) throw new Error(`${path}: ${reply.status} ${(await reply.text()).slice(0, 200)}`);
    bytes = await reply.arrayBuffer();
  }
  return unpack(bytes);
}

/** Base64 text (how a `--html` page carries a packed answer) as bytes. */
export function base64Bytes(text: string): ArrayBuffer {
  const raw = atob(text);
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out.buffer;
}

const KINDS = {
  f64: Float64Array,
  u32: Uint32Array,
  i32: Int32Array,
  u16: Uint16Array,
  u8: Uint8Array,
} as const;

/** The packed format (deuteron/render/web/packed.py writes it): "DTP1", a u32 header length, the
 * header JSON {arrays: [{name, dtype, offset, length}]}, then the arrays, each 8-byte aligned
 * (offsets from the start of the buffer). */
export function unpack(buffer: ArrayBuffer): Packed {
  const view = new DataView(buffer);
  const magic = String.fromCharCode(view.getUint8(0), view.getUint8(1), view.getUint8(2), view.getUint8(3));
  if (magic !== "DTP1") throw new Error("not a packed answer");
  const length = view.getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 8, length))) as {
    arrays: { name: string; dtype: keyof typeof KINDS; offset: number; length: number }[];
  };
  const out: Packed = {};
  for (const a of header.arrays) {
    const Kind = KINDS[a.dtype];
    if (!Kind) throw new Error(`unknown dtype ${a.dtype}`);
    out[a.name] = new Kind(buffer, a.offset, a.length);
  }
  return out;
}
