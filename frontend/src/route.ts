// Which view the page's address names. The hash follows the tab shown (main.ts), so a link or a
// bookmark opens that view and Back/Forward step between tabs. Pure, so route.test.ts runs it.

/** The view a URL hash names: `#timeline` → "timeline"; anything after a `/`, `?` or `&` is left
 * for the view itself; "" when the hash names nothing (the shell then shows its first view). */
export function viewOfHash(hash: string): string {
  return hash.replace(/^#/, "").split(/[/?&]/)[0].toLowerCase();
}
