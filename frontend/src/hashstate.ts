// The views' state in the address (route.ts names the format): a view reads its state once, when
// it mounts, and writes it back as it changes, replacing the history entry (a zoom is not a step
// for Back). The shell (main.ts) asks for the last state written when it shows a tab again, so
// the address keeps a view's window and selection across tab switches.
import { hashOf, hashParams, viewOfHash } from "./route";

type Params = Record<string, string | number | null | undefined>;
const last = new Map<string, Params>();

/** The state the address held for `view` when the page opened (or {} when it names another). */
export function readState(view: string): Record<string, string> {
  return viewOfHash(location.hash) === view ? hashParams(location.hash) : {};
}

/** Record a view's state, and put it in the address while that view is shown. */
export function writeState(view: string, params: Params): void {
  last.set(view, params);
  if (viewOfHash(location.hash) !== view) return;
  const hash = hashOf(view, params);
  if (hash === location.hash) return;
  try {
    history.replaceState(history.state, "", hash);
  } catch {
    // A page inside a notebook's srcdoc frame has no URL of its own to change.
  }
}

/** The hash that shows `view` as it was last left. */
export function hashFor(view: string): string {
  return hashOf(view, last.get(view) ?? {});
}
