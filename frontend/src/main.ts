// The page's shell: load the index, show one tab per kind of data present, mount the views.
import "./style.css";
import { getJSON, standalone } from "./data";
import { h } from "./dom";
import { viewOfHash } from "./route";
import { hashFor } from "./hashstate";
import type { Index } from "./types";
import { mountProfile } from "./views/profile";
import { mountTimeline } from "./views/timeline";
import { mountAccesses } from "./views/accesses";
import { mountExplain } from "./views/explain";

type Mount = (root: HTMLElement, index: Index) => void | Promise<void>;

const VIEWS: { id: string; label: string; present: (i: Index) => boolean; mount: Mount }[] = [
  { id: "profile", label: "Profile", present: (i) => i.profiles.length > 0, mount: mountProfile },
  { id: "timeline", label: "Timeline", present: (i) => i.traces.length > 0, mount: mountTimeline },
  {
    id: "accesses",
    label: "Accesses",
    present: (i) => i.records.length > 0 || i.checks.length > 0,
    mount: mountAccesses,
  },
  { id: "explain", label: "Explain", present: (i) => i.explains.length > 0, mount: mountExplain },
];

function showError(where: HTMLElement, error: unknown): void {
  const text = error instanceof Error ? error.message : String(error);
  where.append(h("div", { class: "error", role: "alert" }, text));
}

async function start(): Promise<void> {
  const app = document.getElementById("app") ?? document.body.appendChild(h("div", { id: "app" }));
  let index: Index;
  try {
    index = await getJSON<Index>("/api/index.json");
  } catch (error) {
    showError(app, error);
    return;
  }
  document.title = `${index.title} — Deuteron`;
  const views = VIEWS.filter((v) => v.present(index));
  const tabs = h("nav", { class: "tabs", role: "tablist" });
  const body = h("main", { class: "body" });
  const header = h(
    "header",
    { class: "top" },
    h("span", { class: "brand" }, "Deuteron"),
    h("span", { class: "title", title: index.title }, index.title),
    tabs,
    h("span", { class: "mode" }, standalone() ? "standalone file" : "local server"),
  );
  app.replaceChildren(header);
  for (const note of index.notes) app.append(h("div", { class: "note" }, note));
  app.append(body);
  if (!views.length) {
    body.append(h("p", { class: "empty" }, "Nothing to show: no profile, trace, access record, check or explain report was given."));
    return;
  }
  const panes = new Map<string, HTMLElement>();
  const mounted = new Set<string>();
  /** Show a view and make the address say so: a tab clicked adds a history entry (`push`), so
   * Back returns to the tab before; a view shown because of the address (load, Back, Forward)
   * only corrects the address when it named no view. */
  const select = async (id: string, push = false): Promise<void> => {
    const view = views.find((v) => v.id === id) ?? views[0];
    for (const button of tabs.querySelectorAll("button")) {
      button.setAttribute("aria-selected", String(button.dataset.view === view.id));
    }
    for (const [key, pane] of panes) pane.hidden = key !== view.id;
    document.body.dataset.view = view.id;
    // The hash may carry the view's own state after a `?` (hashstate.ts): keep it when the
    // address already names this view, else bring back the state the view was left in.
    if (viewOfHash(location.hash) !== view.id) {
      try {
        if (push) history.pushState(null, "", hashFor(view.id));
        else history.replaceState(null, "", hashFor(view.id));
      } catch {
        // A page inside a notebook's srcdoc frame has no URL of its own to change.
      }
    }
    if (!mounted.has(view.id)) {
      mounted.add(view.id);
      const pane = panes.get(view.id)!;
      try {
        await view.mount(pane, index);
      } catch (error) {
        showError(pane, error);
      }
    }
  };
  const fromAddress = (): void => void select(viewOfHash(location.hash));
  window.addEventListener("popstate", fromAddress);
  window.addEventListener("hashchange", fromAddress);
  for (const view of views) {
    tabs.append(
      h("button", { role: "tab", "data-view": view.id, onclick: () => void select(view.id, true) }, view.label),
    );
    const pane = h("section", { class: "pane", id: `view-${view.id}`, "data-view": view.id, hidden: true });
    panes.set(view.id, pane);
    body.append(pane);
  }
  await select(viewOfHash(location.hash));
}

void start();
