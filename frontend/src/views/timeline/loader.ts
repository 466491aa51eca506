// Level of detail, the fetching part: the view tells the loader where it is (each move and
// resize); once it has been still for SETTLE_MS, the loader asks the server for the window
// lod.ts windowAsk names (when none held serves the view), aborts the request that one replaces,
// drops stale answers, and builds the window's model with the overview's folds. No DOM: the fetch
// is handed in, so lod.test.ts runs it under Node with a fake one and fake timers.
import type { Packed } from "../../data";
import { Requests, OVERVIEW_PX, SETTLE_MS, windowAsk, windowQuery, type Held, type Span } from "./lod";
import { buildTimeline, type TimelineModel } from "./model";

/** A loaded window and its model; `exact` when none of its events is merged. */
export interface Loaded extends Span {
  model: TimelineModel;
  exact: boolean;
}

/** Fetches a packed answer (data.ts getPacked); rejects when `signal` aborts it. */
export type Fetcher = (url: string, signal: AbortSignal) => Promise<Packed>;

export class WindowLoader {
  detail: Loaded | null = null;
  error: string | null = null; // the last request's failure, until another is made or none is needed
  private requests = new Requests();
  private inFlight: AbortController | null = null;
  private timer: ReturnType<typeof setTimeout> | undefined;

  /** `onChange` hears each change of what is loaded or loading; `signal` ends it all (the view is
   * replaced): pending timers and fetches are dropped. */
  constructor(
    readonly overview: TimelineModel,
    private readonly fetcher: Fetcher,
    private readonly onChange: () => void,
    private readonly signal: AbortSignal,
  ) {
    signal.addEventListener("abort", () => this.stop());
  }

  /** The window on its way, if any. */
  get loading(): Span | null {
    return this.requests.pending;
  }

  /** The view is now [v0, v1] on a canvas `canvasW` css px wide (`plotW` of them the plot's):
   * ask for a window once it has stayed so for SETTLE_MS. */
  viewChanged(v0: number, v1: number, canvasW: number, plotW: number): void {
    clearTimeout(this.timer);
    if (this.signal.aborted) return;
    this.timer = setTimeout(() => void this.check(v0, v1, canvasW, plotW), SETTLE_MS);
  }

  /** Ask for the window the view needs now, unless one held serves it; returns what was asked. */
  check(v0: number, v1: number, canvasW: number, plotW: number): Span | null {
    if (this.signal.aborted) return null;
    const o = this.overview;
    const held: Held[] = [{ t0: 0, t1: o.span, px: OVERVIEW_PX, exact: o.merged === 0 }];
    if (this.detail) held.push(this.detail);
    if (this.requests.pending) held.push(this.requests.pending);
    const ask = o.ref.window ? windowAsk(v0, v1, o.span, canvasW, plotW, held) : null;
    if (!ask) {
      if (this.error) (this.error = null), this.onChange(); // what is held serves the view now
      return null;
    }
    this.inFlight?.abort(); // its answer would be dropped anyway: spare the server
    const abort = (this.inFlight = new AbortController());
    const ticket = this.requests.begin(ask);
    this.error = null;
    this.onChange();
    this.fetcher(windowQuery(o.ref.window ?? "", ask), abort.signal).then(
      (packed) => {
        if (!this.requests.settle(ticket)) return; // a newer request was made since: drop this
        const model = buildTimeline(o.ref, packed, o);
        this.detail = { ...ask, model, exact: model.merged === 0 };
        this.onChange();
      },
      (error: unknown) => {
        if (!this.requests.settle(ticket)) return; // stale or aborted: nothing to say
        this.error = error instanceof Error ? error.message : String(error);
        this.onChange();
      },
    );
    return ask;
  }

  /** Drop the timer and the request in flight; nothing more will be loaded. */
  stop(): void {
    clearTimeout(this.timer);
    this.requests.cancel();
    this.inFlight?.abort();
    this.inFlight = null;
  }
}
