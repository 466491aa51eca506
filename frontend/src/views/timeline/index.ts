// The Timeline view: lanes (threads, GPU streams, and the CTAs' warps inside kernels under a
// folding header per kernel) of nested events on one canvas, zoomed with the wheel around the
// cursor or the buttons, panned by dragging. Frames are drawn on demand (one per animation frame
// at most), from the per-row indexes built in model.ts. Lane names and kernel headers are elements
// over the canvas' gutter; below, a table of the scopes inside kernels when the trace has any.
// A search box finds events by name and steps through them in time order; the launch arrows can be
// turned off; a clicked event's details show its call stack and args. It opens on the training's
// steady steps (the server's step_window; marks.ts), with a "steps" and a "backward" lane on top,
// the whole run a click away; threads are named by their roles. The window, the selected
// event, the search and the arrows toggle live in the address (hashstate.ts), so a link reopens them,
// also when it is set on the open page (pasted into its address bar, Back, Forward).
// This file picks the trace and loads it (a big one's overview only: view.ts and lod.ts fetch
// windows of it as the view moves); view.ts is one trace's view.
import "./timeline.css";
import { getPacked } from "../../data";
import { h, picker } from "../../dom";
import { fmt } from "../../format";
import { readState, writeState } from "../../hashstate";
import { viewOfHash } from "../../route";
import type { Index } from "../../types";
import { buildTimeline } from "./model";
import { parseState, stateParams, type TimelineState } from "./search";
import { TimelineView } from "./view";

export async function mountTimeline(root: HTMLElement, index: Index): Promise<void> {
  const slot = h("div", { class: "timeline-slot" });
  const traces = index.traces;
  // The shown view's window listeners; aborted when another trace replaces it, so the old view
  // (and its arrays of a million events) can be freed.
  let listening: AbortController | null = null;
  // The state the address opened with applies to the trace it names, once.
  const opened = parseState(readState("timeline"));
  if (opened.trace >= traces.length) opened.trace = 0;
  let current = -1;
  let view: TimelineView | null = null; // the trace shown, once loaded
  const show = async (k: number): Promise<void> => {
    const state: TimelineState = k === opened.trace ? { ...opened } : { trace: k, t0: null, t1: null, selected: -1, query: "", arrows: true };
    opened.trace = -1;
    current = k;
    view = null;
    listening?.abort();
    listening = new AbortController();
    const signal = listening.signal;
    const choose = traces.length > 1 ? picker(traces.map((t) => t.name), k, (j) => void show(j), { name: "trace", title: "trace" }) : null;
    writeState("timeline", stateParams(state));
    if (traces[k].count === 0) {
      slot.replaceChildren(...(choose ? [choose] : []), h("p", { class: "empty", "data-empty": "trace" }, `${traces[k].name} holds no complete events ("ph": "X") to draw.`));
      return;
    }
    const lod = traces[k].lod; // a big trace: its overview first, windows of it as the view moves
    slot.replaceChildren(h("p", { class: "empty" }, lod ? `Loading ${traces[k].name}'s overview (${fmt(lod.events)} events)…` : `Loading ${traces[k].name} (${fmt(traces[k].count)} events)…`));
    try {
      const model = buildTimeline(traces[k], await getPacked(traces[k].events));
      if (signal.aborted) return; // another trace was asked for meanwhile
      slot.replaceChildren();
      view = new TimelineView(slot, model, choose, signal, state);
    } catch (error) {
      slot.replaceChildren(h("div", { class: "error", role: "alert" }, error instanceof Error ? error.message : String(error)));
    }
  };
  root.append(slot);
  // The address changed under the open page (a link pasted into this tab's address bar,
  // `location.hash = …`, Back, Forward): show the trace, window, selection and search it names.
  const follow = (): void => {
    if (viewOfHash(location.hash) !== "timeline") return;
    const want = parseState(readState("timeline"));
    if (want.trace >= traces.length) want.trace = 0;
    if (want.trace === current) return view?.apply(want);
    Object.assign(opened, want);
    void show(want.trace);
  };
  window.addEventListener("hashchange", follow);
  window.addEventListener("popstate", follow);
  await show(Math.max(0, opened.trace));
}
