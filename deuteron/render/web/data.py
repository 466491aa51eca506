"""What the web UI is given: the files named on the command line (or objects from a notebook),
read with the format readers, and every answer the page can ask for (``frontend/src/types.ts``).
The server answers from here; ``--html`` and notebooks embed the same answers in one page.

Nothing here touches the filesystem after :meth:`WebData.add`: requests name answers by path
(``/api/...``), never files."""

from __future__ import annotations

import base64
import gzip
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from deuteron.formats import FormatError, access_record, check_json, chrome_trace, explain_json, trace_store
from deuteron.formats.files import regular_file
from deuteron.formats.profile_stream import read_profile
from deuteron.model.finding import CheckReport
from deuteron.model.tree import Profile
from deuteron.process import parallel
from deuteron.render.web import trace_window
from deuteron.render.web.accesses import RecordView, empty_cells
from deuteron.render.web.advice import LazyAdvice
from deuteron.render.web.explain import explain_data
from deuteron.render.web.profile import profile_data
from deuteron.render.web.timeline import trace_events, trace_ref
from deuteron.view import rank_traces

KINDS = ("profile", "trace", "record", "check", "explain")
JSON_TYPE = "application/json"
PACKED_TYPE = "application/octet-stream"


def sniff(path: str) -> str:
    """Which kind of file this is, from its first bytes (the reader then checks all of it)."""
    if not regular_file(path, "file"):
        raise FormatError(f"{path}: the file is empty")
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
        if head[:2] == b"\x1f\x8b":  # gzip (PyTorch's and Proton's traces often are): its start
            with gzip.open(path, "rb") as f:
                head = f.read(4096)
    except (OSError, EOFError) as exc:
        raise FormatError(f"{path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    if head[:2] == b"PK":
        return "record"
    text = head.lstrip()
    if text[:1] == b"[":  # hatchet's [tree, devices], or a trace that is a bare list of events
        return "trace" if b'"ph"' in head and b'"frame"' not in head else "profile"
    if b'"deuteron-check"' in head:
        return "check"
    if b'"deuteron-explain"' in head:
        return "explain"
    if b'"traceEvents"' in head or b'"ph"' in head:
        return "trace"
    if text[:1] != b"{":
        return "profile"  # msgpack or damage: the profile reader says which
    raise FormatError(
        f"{path}: not a file deuteron serve shows (a profile, a Chrome trace, an access record, "
        "a check or an explain report)"
    )


_ANSWER = re.compile(r"^/api/(trace|access)/((?:\d{1,9}/){0,3}\d{1,9})\.(json|bin)$")
_WINDOW = re.compile(r"^/api/trace/(\d{1,9})/window\.bin$")


def _numbers(path: str) -> tuple[str, list[int]] | None:
    """``/api/access/0/3.json`` -> ("access", [0, 3]); None for any other shape."""
    match = _ANSWER.match(path)
    if match is None:
        return None
    return match.group(1), [int(part) for part in match.group(2).split("/")]


def _n(count: int, one: str, many: str = "") -> str:
    return f"{count:,} {one if count == 1 else many or one + 's'}"


def _trace_line(events: int, lanes: int) -> str:
    return f"trace, {_n(events, 'event')} on {_n(lanes, 'lane')}"


def _said(path: str, columns: chrome_trace.TraceColumns) -> dict[str, Any]:
    """What a store keeps of one source, to describe it when opened without reading it."""
    return {"path": path, "events": len(columns.start), "lanes": len(columns.lanes)}


def _job_line(job: dict[str, Any]) -> str:
    return f"one timeline: {job['clock']}; {_n(job['links'], 'link')} between the ranks' collectives"


class WebData:
    """The inputs of one page and its answers by request path."""

    def __init__(self, title: str = "", threshold: float | None = None) -> None:
        self.title = title
        self.threshold = threshold
        self.profiles: list[dict[str, Any]] = []
        self.traces: list[tuple[dict[str, Any], Callable[[], bytes]]] = []
        self.windows: dict[int, trace_window.LodTrace] = {}  # traces shown with level of detail, by number
        self.records: list[RecordView] = []
        self.checks: list[tuple[CheckReport, dict[str, Any]]] = []
        self.explains: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.advice = LazyAdvice()  # each profile's findings, computed after the first paint
        self._pending_records: list[tuple[str, tuple[Any, Any, Any]]] = []
        self._records_lock = threading.Lock()  # the server's threads and its warm-up
        self.added: list[tuple[str, Any]] = []  # (kind, what was read), for describe()

    # --- inputs -------------------------------------------------------------------------------
    def add_file(self, path: str, base: str | None = None) -> str:
        """Read one file (FormatError, one line, if it is not one we show); returns its kind."""
        kind = sniff(path)
        if kind == "profile":
            self.add_profile(read_profile(path), path, read_profile(base) if base else None, base or "")
        elif kind == "trace":
            self.add_trace(chrome_trace.read_columns(path), path)
        elif kind == "record":
            self._pending_records.append((path, access_record.read(path)))
            self.added.append(("record", self._pending_records[-1][1]))
        elif kind == "check":
            self.add_check(check_json.read(path), path)
        else:
            self.add_explain(explain_json.read(path), path)
        return kind

    def add_profile(
        self, profile: Profile, source: str, base: Profile | None = None, base_source: str = ""
    ) -> None:
        self.profiles.append(profile_data(profile, source, base, base_source, self.threshold))
        self.added.append(("profile", self.profiles[-1]))
        shown = self.profiles[-1]
        if base is None:  # the advice panel's findings, asked for after the first paint
            shown["advice_url"] = self.advice.add(len(self.profiles) - 1, profile, source, shown)
        if shown["pruned_nodes"]:
            self.notes.append(
                f"{os.path.basename(source)}: {shown['pruned_nodes']:,} of {shown['total_nodes']:,} "
                f"nodes are below {shown['threshold']:.3%} of the total and are left out "
                "(--threshold 0 keeps all)"
            )

    def add_files(
        self,
        paths: Sequence[str],
        base: str | None = None,
        lod: bool | None = None,
        progress: parallel.Progress | None = None,
    ) -> Iterator[tuple[str, str]]:
        """Read the files in order, yielding each one's path and one line on it; several ranks'
        traces of one job become one trace on one clock (:mod:`deuteron.view.rank_traces`),
        described after the last of them. The traces are read together, in parallel
        (``progress`` hears of each), when the first of them is reached.

        Past :data:`~deuteron.render.web.trace_window.LOD_EVENTS` events in all (``lod``: True
        whatever the size, False never), they are shown with level of detail: kept in a store
        (:mod:`deuteron.formats.trace_store`), which a second serve of the same files opens
        without reading them."""
        kinds = [sniff(path) for path in paths]
        sources = [path for path, kind in zip(paths, kinds, strict=True) if kind == "trace"]
        traces: list[chrome_trace.TraceColumns] = []
        store: trace_store.TraceStore | None = None
        for path, kind in zip(paths, kinds, strict=True):
            if kind != "trace":
                self.add_file(path, base)
                yield path, self.describe(-1)
                continue
            if not traces and store is None:
                store = self._cached_store(sources, lod)
                if store is None:
                    traces = parallel.map_files(chrome_trace.read_columns, sources, progress)
                    if len(sources) > 1:
                        size = sum(os.path.getsize(s) for s in sources)
                        yield f"{len(sources)} traces", f"read, {size / 1e6:,.1f} MB"
                lines = [_trace_line(len(c.start), len(c.lanes)) for c in traces]
                if store is not None:
                    lines = [_trace_line(s["events"], s["lanes"]) for s in store.meta["sources"]]
            yield path, lines.pop(0)
        if store is not None:
            yield from self._add_stored(store, "the cache")
        elif traces:
            yield from self._add_read(traces, sources, lod)

    def _cached_store(self, sources: list[str], lod: bool | None) -> trace_store.TraceStore | None:
        """The store these traces were kept in by an earlier serve, when level of detail is wanted
        and one is there (whatever its size with ``lod``; past LOD_EVENTS without)."""
        if lod is False or not trace_store.available():
            return None
        store = trace_store.open_store(trace_store.store_path(sources))
        if store is not None and lod is None and int(store.meta["ref"]["count"]) <= trace_window.LOD_EVENTS:
            store.close()
            return None
        return store

    def _lod(self, events: int, lod: bool | None) -> tuple[bool, str]:
        """Whether traces of ``events`` events in all are shown with level of detail; without
        DuckDB they are shown whole, and the note returned says how to get it."""
        if lod is False or (lod is None and events <= trace_window.LOD_EVENTS):
            return False, ""
        if trace_store.available():
            return True, ""
        note = (
            f"{events:,} events: install deuteron[traces] (DuckDB) to open traces of this size "
            "with level of detail"
        )
        self.notes.append(note)
        return False, note

    def _add_read(
        self, traces: list[chrome_trace.TraceColumns], sources: list[str], lod: bool | None
    ) -> Iterator[tuple[str, str]]:
        """The traces read: each alone, or a job's joined; with level of detail, each kept in a store."""
        lod, note = self._lod(sum(len(c.start) for c in traces), lod)
        if note:
            yield _n(len(traces), "trace"), note
        ranked = rank_traces.is_job(traces, sources)
        apart = rank_traces.not_one_job(traces, sources) if ranked else ""
        if apart is not None:
            for columns, path in zip(traces, sources, strict=True):
                if not lod:
                    self.add_trace(columns, path)
                    continue
                kept = {"sources": [_said(path, columns)], "notes": list(columns.notes)}
                yield from self._add_stored(trace_window.build(columns, path, [path], meta=kept), "")
            if apart:  # ranks of two jobs, or a rank twice: each trace alone, never on one clock
                said = f"shown one at a time, not on one clock: {apart}"
                self.notes.append(said)
                yield f"{len(traces)} traces", said
            return
        job = rank_traces.join(traces, sources)
        name = f"{len(traces)} ranks"
        shown = {"clock": job.clock, "ranks": job.ranks, "links": job.links}
        if lod:
            kept = {
                "sources": [_said(p, c) for p, c in zip(sources, traces, strict=True)],
                "notes": job.columns.notes + job.notes,
            }
            store = trace_window.build(job.columns, name, sources, job.lane_ranks, {"job": shown}, kept)
            yield from self._add_stored(store, "")
            return
        self.add_trace(job.columns, name, job.lane_ranks)
        self.traces[-1][0]["job"] = shown
        self.notes.extend(job.notes)
        yield name, _job_line(shown)

    def _add_stored(self, store: trace_store.TraceStore, found_in: str) -> Iterator[tuple[str, str]]:
        """A trace kept in a store, shown with level of detail (``found_in``: where it was found
        when it was not built now)."""
        shown = trace_window.LodTrace(store, len(self.traces))
        self.windows[len(self.traces)] = shown
        self.traces.append((shown.ref, shown.overview))
        self.added.append(("trace", shown.ref))
        self.notes.extend(store.meta.get("notes", []))
        name = shown.ref["name"]
        if "job" in shown.ref:
            yield name, _job_line(shown.ref["job"])
        how = f"opened from {found_in}" if found_in else "kept"
        yield name, f"level of detail: {_n(shown.ref['count'], 'event')} {how} in {store.path}"

    def add_trace(
        self, columns: chrome_trace.TraceColumns, source: str, lane_ranks: list[str] | None = None
    ) -> None:
        self.notes.extend(columns.notes)  # args left out of a trace past the budget: said
        url = f"/api/trace/{len(self.traces)}.bin"
        ref, order = trace_ref(columns, source, url, lane_ranks)
        cached: list[bytes] = []

        def events() -> bytes:
            if not cached:
                cached.append(trace_events(columns, order))
            return cached[0]

        self.traces.append((ref, events))
        self.added.append(("trace", ref))

    def add_check(self, report: CheckReport, source: str) -> None:
        body = check_json.to_json(report)
        self.checks.append(
            (
                report,
                {
                    "name": os.path.basename(source),
                    "source": source,
                    "findings": body["findings"],
                    "launches": body["launches"],
                    "programs": body["programs"],
                    "summary": body["summary"],
                },
            )
        )
        self.added.append(("check", self.checks[-1][1]))

    def add_explain(self, document: dict[str, Any], source: str) -> None:
        self.explains.append(explain_data(document, source))
        self.added.append(("explain", self.explains[-1]))

    def _records(self) -> list[RecordView]:
        """Records see every check report given, wherever it came on the command line."""
        with self._records_lock:
            self._resolve_records()
        return self.records

    def _resolve_records(self) -> None:
        for path, (header, accesses, offsets) in self._pending_records:
            reports = [report for report, _ in self.checks]
            self.records.append(RecordView(header, accesses, offsets, path, len(self.records), reports))
            dropped_masked = int(header.get("dropped_masked_lanes", 0))
            if dropped_masked:
                self.notes.append(
                    f"{os.path.basename(path)}: {dropped_masked:,} masked-off lanes past the record's "
                    "limit are not drawn"
                )
            dropped = int(header.get("dropped_lanes", 0))
            if dropped:
                limit = int(header.get("limit", 0))
                self.notes.append(
                    f"{os.path.basename(path)}: the record reached its limit of {limit:,} "
                    f"element accesses; {dropped:,} later ones are not drawn "
                    "(record again with deuteron check --record-limit N)"
                )
        self._pending_records.clear()

    def describe(self, which: int = -1) -> str:
        """One line on a file added (``which``: its position, -1 the last): its kind and size."""
        kind, item = self.added[which]
        if kind == "profile":
            shown = item["total_nodes"] - item["pruned_nodes"]
            return f"profile, {shown:,} nodes" + (", a diff" if "base" in item else "")
        if kind == "trace":
            return f"trace, {_n(item['count'], 'event')} on {_n(len(item['lanes']), 'lane')}"
        if kind == "record":
            header = item[0]  # its lanes count the masked-off ones kept too: those are not accesses
            launches = len(header["launches"])
            lanes = int(header.get("lanes", 0)) - int(header.get("masked_lanes", 0))
            accesses = _n(lanes, "element access", "element accesses")
            return f"access record, {_n(launches, 'launch', 'launches')}, {accesses}"
        if kind == "check":
            return f"check report, {_n(len(item['findings']), 'finding')}"
        return f"explain report, {_n(len(item['kernels']), 'kernel')}"

    # --- answers ------------------------------------------------------------------------------
    def index(self) -> dict[str, Any]:
        """``/api/index.json``: everything small, and where the rest is."""
        return {
            "format": "deuteron-web",
            "version": 1,
            "title": self.title or self._default_title(),
            "profiles": self.profiles,
            "traces": [ref for ref, _ in self.traces],
            "records": [r.ref() for r in self._records()],
            "checks": [body for _, body in self.checks],
            "explains": self.explains,
            "notes": self.notes,
        }

    def _default_title(self) -> str:
        self._records()
        names = [p["name"] for p in self.profiles] + [r["name"] for r, _ in self.traces]
        names += [r.source for r in self.records] + [b["name"] for _, b in self.checks]
        names += [e["name"] for e in self.explains]
        return ", ".join(os.path.basename(n) for n in names[:4]) or "deuteron"

    def answer(self, path: str, query: str = "") -> tuple[str, Any] | None:
        """(content type, JSON value or bytes) for a request path, None if there is no such answer.

        A path names an answer by small whole numbers only; anything else is no answer. Only a
        trace's window reads ``query`` (the URL's query string: ``t0``, ``t1``, ``px``), and a bad
        one raises :class:`~deuteron.render.web.trace_window.BadWindow`, one line. Other errors
        while computing an answer are not caught here: they are bugs or damage, and the server
        says so."""
        if path == "/api/index.json":
            return JSON_TYPE, self.index()
        findings = self.advice.answer(path)
        if findings is not None:
            return JSON_TYPE, findings
        lod = _WINDOW.match(path)
        if lod is not None:
            shown = self.windows.get(int(lod.group(1)))
            return None if shown is None else (PACKED_TYPE, shown.answer(query))
        numbers = _numbers(path)
        if numbers is None:
            return None
        kind, ids = numbers
        if kind == "trace" and len(ids) == 1 and path.endswith(".bin") and ids[0] < len(self.traces):
            return PACKED_TYPE, self.traces[ids[0]][1]()
        records = self._records()
        if kind != "access" or not ids or ids[0] >= len(records):
            return None
        record = records[ids[0]]
        if len(ids) < 2 or ids[1] >= len(record.header["launches"]):
            return None
        data, cells = record.launch(ids[1])
        if len(ids) == 2 and path.endswith(".json"):
            return JSON_TYPE, data
        if len(ids) == 4 and path.endswith(".bin") and ids[2] < len(data["tensors"]):
            if ids[3] >= max(data["tensors"][ids[2]]["slices"], 1):
                return None
            return PACKED_TYPE, cells.get((ids[2], ids[3])) or empty_cells()
        return None

    def warm(self) -> None:
        """Compute every launch's answers ahead of the first click (the server runs this in the
        background: a launch of 16 million element accesses takes about a second)."""
        for record in self._records():
            for launch in range(len(record.header["launches"])):
                record.launch(launch)
        for _ref, events in self.traces:
            events()
        self.advice.warm()

    def embedded(self, max_cell_bytes: int = 64 << 20) -> dict[str, Any]:
        """Every answer, for a page with no server: packed answers in base64. Access cells past
        ``max_cell_bytes`` are left out (their slice shows how to see them)."""
        index = self.index()
        out: dict[str, Any] = {"/api/index.json": index}
        out.update(self.advice.every())
        for ref, events in self.traces:
            out[ref["events"]] = base64.b64encode(events()).decode()
        # A page without a server cannot ask for windows: a stored trace shows its overview.
        index["traces"] = [{k: v for k, v in ref.items() if k != "window"} for ref in index["traces"]]
        for ref in (r for r, _ in self.traces if "window" in r):
            index["notes"] = index["notes"] + [
                f"{ref['name']}: {ref['count']:,} events: this page holds their overview (an event per "
                "pixel where they are dense); deuteron serve zooms into every event"
            ]
        budget = max_cell_bytes
        left_out = 0
        for record in self._records():
            for launch in range(len(record.header["launches"])):
                data, cells = record.launch(launch)
                data = dict(
                    data, tensors=[dict(t, slice_urls=list(t["slice_urls"])) for t in data["tensors"]]
                )
                for t, tensor in enumerate(data["tensors"]):
                    for s, url in enumerate(tensor["slice_urls"]):
                        blob = cells.get((t, s)) or empty_cells()
                        if len(blob) > budget:
                            tensor["slice_urls"][s] = None
                            left_out += 1
                            continue
                        budget -= len(blob)
                        out[url] = base64.b64encode(blob).decode()
                out[record.launch_url(launch)] = data
        if left_out:
            index["notes"] = index["notes"] + [
                f"{left_out:,} tensor slices are too large for one file and are left out; "
                "open the record with deuteron serve to see them"
            ]
        return out
