// The heat ramp the views share: light yellow → orange → red → dark red (sequential, readable on
// white). The Accesses view colours lanes per cell with it, the Explain view samples per line, so
// one hot thing looks the same wherever it is shown. Colours are packed as the bytes of an RGBA
// pixel read through a little-endian Uint32Array (what a canvas's ImageData takes). Pure (no DOM).

/** A colour as the bytes of an RGBA pixel (alpha 255). */
export function pack(r: number, g: number, b: number): number {
  return ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
}

/** A packed colour as CSS. */
export function packedCss(colour: number): string {
  return `rgb(${colour & 255} ${(colour >> 8) & 255} ${(colour >> 16) & 255})`;
}

const HEAT_STOPS: [number, number, number][] = [
  [255, 247, 188],
  [254, 196, 79],
  [236, 112, 20],
  [204, 30, 30],
  [103, 0, 13],
];

/** The ramp in 256 steps, coolest first. */
export const HEAT: Uint32Array = (() => {
  const out = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    const t = (i / 255) * (HEAT_STOPS.length - 1);
    const j = Math.min(Math.floor(t), HEAT_STOPS.length - 2);
    const f = t - j;
    const [a, b] = [HEAT_STOPS[j], HEAT_STOPS[j + 1]];
    out[i] = pack(
      Math.round(a[0] + (b[0] - a[0]) * f),
      Math.round(a[1] + (b[1] - a[1]) * f),
      Math.round(a[2] + (b[2] - a[2]) * f),
    );
  }
  return out;
})();

/** The ramp's step for t in 0..1 (clamped; NaN counts as 0). */
export function heatStep(t: number): number {
  return Number.isNaN(t) ? 0 : Math.max(0, Math.min(255, Math.round(t * 255)));
}

/** The ramp's colour at t in 0..1, as CSS. */
export function heatCss(t: number): string {
  return packedCss(HEAT[heatStep(t)]);
}

/** Six stops of the ramp for a CSS gradient (legends). */
export function heatStops(): string {
  return Array.from({ length: 6 }, (_, i) => packedCss(HEAT[Math.round((i / 5) * 255)])).join(",");
}
