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
