// How values are shown, shared by the views: numbers and times for people, and a stable colour per
// name. Pure (no DOM), so the model modules can use it and tests can run it without a browser.

/** A number for people: 3 significant digits, thousands separated, SI suffixes for large counts. */
export function fmt(value: number | null | undefined): string {
  if (value === null || value === undefined || Number.isNaN(value)) return "–";
  if (!Number.isFinite(value)) return value > 0 ? "∞" : "-∞";
  const abs = Math.abs(value);
  if (abs === 0) return "0";
  if (Number.isInteger(value) && abs < 1e6) return value.toLocaleString("en-US");
  if (abs >= 1e6) {
    const units = ["", "k", "M", "G", "T", "P"];
    let i = 0;
    let v = value;
    while (Math.abs(v) >= 1000 && i < units.length - 1) {
      v /= 1000;
      i++;
    }
    return `${v.toPrecision(3)}${units[i]}`;
  }
  if (abs >= 100) return value.toFixed(1);
  if (abs >= 1e-3) return value.toPrecision(3);
  return value.toExponential(2);
}

/** A count in a narrow column (a heat column's samples): in full below 1000, else two or three
 * significant digits with k, M or G ("1.2k", "325k", "1.17M"), so every cell fits in five
 * characters. A share of the total says the exact size where it matters. */
export function fmtCount(value: number): string {
  if (!Number.isFinite(value)) return "–";
  const abs = Math.abs(value);
  if (abs < 1000) return String(Math.round(value));
  const units = ["k", "M", "G", "T"];
  let v = value / 1000;
  let i = 0;
  while (Math.abs(v) >= 999.5 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  const digits = Math.abs(v) < 9.95 ? 1 : 0;
  return `${v.toFixed(digits)}${units[i]}`;
}

/** A share (0..1) as a percentage for people: "98%", "0.4%", "<0.1%" (a share that is there
 * but rounds to nothing), "0%". */
export function fmtShare(share: number): string {
  if (!Number.isFinite(share) || share <= 0) return "0%";
  const pct = share * 100;
  if (pct < 0.1) return "<0.1%";
  if (pct < 9.95) return `${pct.toFixed(1)}%`;
  return `${Math.round(pct)}%`;
}

const TIME_UNITS: [number, string][] = [
  [1e9, "s"],
  [1e6, "ms"],
  [1e3, "µs"],
  [1, "ns"],
];

/** The unit (size in ns, name) for times around `ns`. */
export function timeUnit(ns: number): [number, string] {
  return TIME_UNITS.find(([size]) => Math.abs(ns) >= size) ?? TIME_UNITS[TIME_UNITS.length - 1];
}

/** Nanoseconds with a unit: 3 significant digits, or `exact` to the nanosecond (a tooltip's start:
 * 3 digits are not enough to find an event 127 ms into a trace). */
export function fmtNs(ns: number, exact = false): string {
  const [size, name] = timeUnit(ns);
  if (size === 1) return `${Math.round(ns)} ns`;
  return `${exact ? (ns / size).toFixed(Math.round(Math.log10(size))) : (ns / size).toPrecision(3)} ${name}`;
}

/** A stable colour for a name (flame graphs, lanes): hue from a string hash. */
export function colourOf(text: string, saturation = 55, lightness = 62): string {
  let hash = 2166136261;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 16777619);
  }
  const hue = ((hash >>> 0) % 360 + 360) % 360;
  return `hsl(${hue} ${saturation}% ${lightness}%)`;
}
