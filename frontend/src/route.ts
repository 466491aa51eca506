// Which view the page's address names. The hash follows the tab shown (main.ts), so a link or a
// bookmark opens that view and Back/Forward step between tabs. Pure, so route.test.ts runs it.

/** The view a URL hash names: `#timeline` → "timeline"; anything after a `/`, `?` or `&` is left
 * for the view itself; "" when the hash names nothing (the shell then shows its first view). */
export function viewOfHash(hash: string): string {
  return hash.replace(/^#/, "").split(/[/?&]/)[0].toLowerCase();
}

/** A view's own state in the hash, after a `?`: `#timeline?t0=1200&q=gemm` → {t0: "1200", q:
 * "gemm"}. So a link or a bookmark opens the same window, selection and search; {} when none. */
export function hashParams(hash: string): Record<string, string> {
  const at = hash.indexOf("?");
  const out: Record<string, string> = {};
  if (at < 0) return out;
  for (const [key, value] of new URLSearchParams(hash.slice(at + 1))) out[key] = value;
  return out;
}

/** The hash of a view and its state: `#timeline?t0=1200&q=gemm`, keys in the order given, empty
 * and null values left out (a default need not be spelt), `#view` when nothing is left. */
export function hashOf(view: string, params: Record<string, string | number | null | undefined> = {}): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== null && value !== undefined && value !== "") query.set(key, String(value));
  const text = query.toString().replace(/\+/g, "%20");
  return text ? `#${view}?${text}` : `#${view}`;
}
