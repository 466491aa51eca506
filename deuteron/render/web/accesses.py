"""An access record for the web UI: per launch, each tensor as a grid of its last two dims binned
to at most ``MAX_BINS`` cells a side, and per (tensor, slice of the leading dims) the packed cells
``AccessCells`` (``frontend/src/types.ts``): one entry per (program, bin, kind, site) with the
number of element accesses it stands for. The reduction runs here with NumPy so a 4096×4096
tensor touched by 4096 programs (16.7 million element accesses) reaches the browser as a few
hundred thousand entries."""

from __future__ import annotations

import dataclasses
import math
import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from deuteron.formats.check_json import finding_json
from deuteron.model.access import TensorArg
from deuteron.model.access import element_index as model_element_index
from deuteron.model.finding import CheckReport, Finding
from deuteron.render.web.packed import pack

MAX_BINS = 512  # cells a side: about a screen's worth
KINDS = 6  # load, store, atomic, and the masked-off lanes of each (the record's kind codes)
MAX_SLICES = 1024  # more combinations of leading dims than this: they are merged into the rows


@dataclass
class Layout:
    """How a tensor is drawn: rows × cols (its last two dims), leading dims as slices, bins."""

    rows: int
    cols: int
    lead: list[int]
    row_step: int
    col_step: int
    merged: list[int] = dataclasses.field(default_factory=list)  # dims folded into the rows

    @property
    def bin_rows(self) -> int:
        return -(-self.rows // self.row_step)

    @property
    def bin_cols(self) -> int:
        return -(-self.cols // self.col_step)

    @property
    def slices(self) -> int:
        return math.prod(self.lead)


def layout(shape: list[int], max_bins: int = MAX_BINS) -> Layout:
    """The last two dims as the grid, the others as slices; a tensor with more than
    ``MAX_SLICES`` slices (a conv weight of 512×512×3×3) is drawn as one grid, every dim but
    the last folded into the rows."""
    dims = [max(int(n), 1) for n in shape] or [1]
    cols = dims[-1]
    if math.prod(dims[:-2]) > MAX_SLICES:
        rows = math.prod(dims[:-1])
        return Layout(rows, cols, [], -(-rows // max_bins), -(-cols // max_bins), merged=dims[:-1])
    rows = dims[-2] if len(dims) >= 2 else 1
    return Layout(rows, cols, dims[:-2], -(-rows // max_bins), -(-cols // max_bins))


def _lanes_of(rows: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every recorded lane of these rows: (index of its row, its byte offset)."""
    counts = rows["count"].astype(np.int64)
    total = int(counts.sum())
    if not total:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    row_of = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
    first = np.cumsum(counts) - counts
    pos = np.arange(total, dtype=np.int64) - np.repeat(first - rows["start"].astype(np.int64), counts)
    return row_of, offsets[pos]


CHUNK_LANES = 1 << 20


def _chunks(counts: np.ndarray) -> list[tuple[int, int]]:
    """Row ranges of about ``CHUNK_LANES`` lanes each (a row is never split)."""
    ends = np.cumsum(counts.astype(np.int64))
    out, first = [], 0
    while first < len(counts):
        done = int(ends[first - 1]) if first else 0
        last = int(np.searchsorted(ends, done + CHUNK_LANES, side="right"))
        last = max(last, first + 1)
        out.append((first, last))
        first = last
    return out


def element_index(byte_offset: np.ndarray, tensor: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """The N-D index (one column per dim) of each byte offset into the tensor's storage, and
    which offsets are elements of the tensor's view at all: the sanitizer's own
    :func:`deuteron.model.access.element_index` on a record's tensor."""
    shape = tuple(int(n) for n in tensor["shape"])
    strides = tuple(int(s) for s in tensor.get("strides", [])) or (0,) * len(shape)
    size = int(tensor.get("element_size", 1)) or 1
    rel = byte_offset.astype(np.int64, copy=False) - int(tensor.get("offset", 0))
    arg = TensorArg(str(tensor.get("name", "")), shape, strides, str(tensor.get("dtype", "")), size, 0, 0)
    found = model_element_index(arg, rel // size)
    if found is None or 0 in shape:  # strides that overlap or interleave, or an empty view: nothing to draw
        return np.zeros((len(shape), len(rel)), dtype=np.int64), np.zeros(len(rel), dtype=bool)
    index, on_view = found
    return index, on_view & (rel % size == 0)


def cell_runs(lanes_row: np.ndarray, index: np.ndarray, lay: Layout) -> tuple[np.ndarray, ...]:
    """Lanes to runs: neighbouring lanes of one access mostly fall in one cell, so each run of
    lanes of one row in one cell becomes (row, cell, lanes). Cells count slices too:
    ``slice * bins + bin``."""
    if index.shape[0] == 0:  # a 0-D tensor: one element
        index = np.zeros((1, index.shape[1]), dtype=np.float64)
    col = index[-1]
    row = index[-2] if index.shape[0] >= 2 else np.zeros_like(col)
    if lay.merged:  # every dim but the last, row-major, is the row
        row = np.zeros_like(col)
        for d, n in enumerate(lay.merged):
            row = row * n + index[d]
    if lay.row_step > 1:
        row = np.floor(row / lay.row_step)
    if lay.col_step > 1:
        col = np.floor(col / lay.col_step)
    nbins = lay.bin_rows * lay.bin_cols
    flat = row * lay.bin_cols + col
    if lay.lead:
        lead = np.zeros_like(col)
        for d, n in enumerate(lay.lead):
            lead = lead * n + index[d]
        flat += lead * nbins
    cell = flat.astype(np.int64)
    if not len(cell):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    change = np.flatnonzero((np.diff(cell) != 0) | (np.diff(lanes_row) != 0)) + 1
    starts = np.concatenate(([0], change))
    run_len = np.diff(np.concatenate((starts, [len(cell)])))
    return lanes_row[starts], cell[starts], run_len


def pack_cells(
    runs: tuple[np.ndarray, np.ndarray, np.ndarray],
    rows: np.ndarray,
    lay: Layout,
    sites: int,
    programs: int,
) -> dict[int, bytes]:
    """The packed cells of each slice: one entry per (program, bin, kind, site) with its lanes."""
    run_row, run_cell, run_len = runs
    if not len(run_row):
        return {}
    nbins = lay.bin_rows * lay.bin_cols
    slices = max(lay.slices, 1)
    span = [max(programs, 1), sites + 1, KINDS, slices * nbins]
    if math.prod(span) >= 1 << 62:
        raise ValueError("the launch is too large to draw (programs × sites × bins overflow)")
    program = rows["program"].astype(np.int64)[run_row]
    site = rows["site"].astype(np.int64)[run_row] + 1
    kind = rows["kind"].astype(np.int64)[run_row]
    # Slice-major keys, so each slice's entries are one contiguous stretch after sorting.
    lead_of = run_cell // nbins
    key = (((lead_of * span[0] + program) * span[1] + site) * KINDS + kind) * nbins + run_cell % nbins
    unique, inverse = np.unique(key, return_inverse=True)
    lane_counts = np.bincount(inverse, weights=run_len).astype(np.uint32)
    unique_bin = unique % nbins
    rest = unique // nbins
    unique_kind = rest % KINDS
    rest //= KINDS
    unique_site = rest % span[1] - 1
    rest //= span[1]
    unique_program = rest % span[0]
    unique_slice = rest // span[0]
    bounds = np.searchsorted(unique_slice, np.arange(slices + 1))
    out: dict[int, bytes] = {}
    for s in range(slices):
        a, b = int(bounds[s]), int(bounds[s + 1])
        if a == b:
            continue
        out[s] = pack(
            {
                "program": unique_program[a:b].astype("<u4"),
                "bin": unique_bin[a:b].astype("<u4"),
                "site": unique_site[a:b].astype("<i4"),
                "lanes": lane_counts[a:b].astype("<u4"),
                "kind": unique_kind[a:b].astype("u1"),
            }
        )
    return out


def empty_cells() -> bytes:
    """The packed cells of a slice no lane touched."""
    z = np.zeros(0, dtype="<u4")
    return pack({"program": z, "bin": z, "site": z.astype("<i4"), "lanes": z, "kind": z.astype("u1")})


def _in_launch(f: Finding, launch: dict[str, Any], tensor: dict[str, Any]) -> bool:
    """Whether finding ``f``'s example was seen in this record launch: joined by the launch index
    both carry (the kernel's name must agree too, or the report is of another run). A finding from
    a report without launch indices (deuteron-check v1) falls back to the kernel's name and, where
    the finding gives it, the shape of its tensor."""
    if f.kernel != launch.get("kernel"):
        return False
    if f.launch is not None:
        return bool(f.launch == launch.get("index"))
    shape = f.details.get("shape") if isinstance(f.details, dict) else None
    return not (isinstance(shape, list) and shape != list(tensor["shape"]))


# The keys of the one finding JSON (formats.check_json.finding_json) that a finding placed on a
# tensor's grid carries (TypeScript's PlacedFinding), before its place: slice, bin, indices.
PLACED_FINDING_KEYS = ("kind", "severity", "message", "line", "program", "index")

MAX_FINDING_INDICES = 256  # out-of-bounds lanes placed per finding: enough to show their spread


def _lane_indices(f: Finding, rank: int) -> list[list[int]]:
    """The out-of-bounds lanes' indices a finding's details list (the example's alone when it has
    none), as many as ``MAX_FINDING_INDICES``: the record holds no lane that touches no element,
    so these are what the page can draw past the tensor's edge."""
    details = f.details if isinstance(f.details, dict) else {}
    raw = details.get("indices")
    if not isinstance(raw, list) or not raw:
        raw = [f.index] if isinstance(f.index, list) else []
    out: list[list[int]] = []
    for index in raw[:MAX_FINDING_INDICES]:
        if isinstance(index, list) and len(index) == rank and all(isinstance(i, int) for i in index):
            out.append([int(i) for i in index])
    return out


class RecordView:
    """One access record, answered launch by launch (each computed once, on first request, under a
    lock: the server's threads and its warm-up share the cache). Findings of the check reports
    given beside it land on the launch and tensor their example names."""

    def __init__(
        self,
        header: dict[str, Any],
        accesses: np.ndarray,
        offsets: np.ndarray,
        source: str,
        number: int,
        checks: list[CheckReport],
    ) -> None:
        self.header, self.accesses, self.offsets = header, accesses, offsets
        self.source, self.number, self.checks = source, number, checks
        launch_col = accesses["launch"].astype(np.int64)
        order = np.argsort(launch_col, kind="stable")
        self.rows_sorted = accesses[order]
        self.bounds = np.searchsorted(launch_col[order], np.arange(len(header["launches"]) + 1))
        self.cache: dict[int, tuple[dict[str, Any], dict[tuple[int, int], bytes]]] = {}
        self.lock = threading.Lock()  # the server's threads and its warm-up share the cache

    def ref(self) -> dict[str, Any]:
        launches = []
        for i, launch in enumerate(self.header["launches"]):
            rows = self.rows_sorted[self.bounds[i] : self.bounds[i + 1]]
            launches.append(
                {
                    "index": int(launch.get("index", i)),
                    "kernel": str(launch.get("kernel", "?")),
                    "grid": [int(g) for g in launch.get("grid", [1, 1, 1])][:3],
                    "programs": len(launch["programs"]),
                    "accesses": int(len(rows)),
                    # element accesses: masked-off lanes (kinds 3-5) are not accesses
                    "lanes": int(rows["count"][rows["kind"] < 3].astype(np.int64).sum()),
                    "tensors": [t["name"] for t in launch["tensors"]],
                    "url": self.launch_url(i),
                }
            )
        return {
            "name": os.path.basename(self.source),
            "source": self.source,
            "dropped_lanes": int(self.header.get("dropped_lanes", 0)),
            "limit": int(self.header.get("limit", 0)),
            "launches": launches,
        }

    def launch_url(self, launch: int) -> str:
        return f"/api/access/{self.number}/{launch}.json"

    def cells_url(self, launch: int, tensor: int, slice_: int) -> str:
        return f"/api/access/{self.number}/{launch}/{tensor}/{slice_}.bin"

    def launch(self, i: int) -> tuple[dict[str, Any], dict[tuple[int, int], bytes]]:
        """The ``LaunchData`` of launch ``i`` and its packed cells by (tensor, slice)."""
        cached = self.cache.get(i)  # a launch computed already never waits behind the warm-up
        if cached is not None:
            return cached
        with self.lock:
            if i not in self.cache:
                self.cache[i] = self._compute(i)
            return self.cache[i]

    def _compute(self, i: int) -> tuple[dict[str, Any], dict[tuple[int, int], bytes]]:
        """Launch ``i``'s data: each tensor's layout, its packed cells slice by slice (every recorded
        lane placed in its view, in chunks so the temporaries stay small), the lanes in its storage
        that no view covers, and the findings that land on it."""
        launch = self.header["launches"][i]
        rows = self.rows_sorted[self.bounds[i] : self.bounds[i + 1]]
        sites = self.header["sites"]
        programs = launch["programs"]
        tensors_in = launch["tensors"]
        layouts = [layout(t["shape"]) for t in tensors_in]
        runs: list[list[tuple[np.ndarray, ...]]] = [[] for _ in tensors_in]
        outside = {int(t["storage"]): 0 for t in tensors_in}
        # Lanes in chunks of about a million: the temporaries stay small enough for the allocator
        # to reuse (a 16-million-lane launch in one piece spends most of its time page-faulting).
        for first, last in _chunks(rows["count"]):
            row_of, byte_offset = _lanes_of(rows[first:last], self.offsets)
            row_of += first
            storage_of_lane = rows["storage"][row_of]
            seen: dict[int, np.ndarray] = {}
            for t, tensor in enumerate(tensors_in):
                storage = int(tensor["storage"])
                mine = storage_of_lane == storage
                every = bool(mine.all())
                index, inside = element_index(byte_offset if every else byte_offset[mine], tensor)
                lanes_row = row_of if every else row_of[mine]
                seen[storage] = seen.get(storage, np.zeros(len(lanes_row), dtype=bool)) | inside
                if not inside.all():
                    lanes_row, index = lanes_row[inside], index[:, inside]
                runs[t].append(cell_runs(lanes_row, index, layouts[t]))
            for storage, inside_any in seen.items():
                outside[storage] += int((~inside_any).sum())
        tensors, cells = [], {}
        for t, tensor in enumerate(tensors_in):
            lay = layouts[t]
            parts = runs[t] or [(np.zeros(0, np.int64),) * 3]
            joined = (
                np.concatenate([r[0] for r in parts]),
                np.concatenate([r[1] for r in parts]),
                np.concatenate([r[2] for r in parts]),
            )
            for s, blob in pack_cells(joined, rows, lay, len(sites), len(programs)).items():
                cells[(t, s)] = blob
            tensors.append(
                {
                    "name": tensor["name"],
                    "shape": [int(n) for n in tensor["shape"]],
                    "dtype": str(tensor.get("dtype", "")),
                    "rows": lay.rows,
                    "cols": lay.cols,
                    "lead": lay.lead,
                    "merged": lay.merged,
                    "slices": lay.slices,
                    "bin_rows": lay.bin_rows,
                    "bin_cols": lay.bin_cols,
                    "row_step": lay.row_step,
                    "col_step": lay.col_step,
                    # Accesses to its storage that no tensor viewing that storage covers.
                    "outside": outside[int(tensor["storage"])],
                    "findings": self._findings(launch, tensor, lay),
                    "slice_urls": [self.cells_url(i, t, s) for s in range(lay.slices)],
                }
            )
        files = {s["file"] for s in sites} | {launch.get("file", "")}
        sources = self.header.get("sources") or {}
        data: dict[str, Any] = {
            "index": int(launch.get("index", i)),
            "kernel": str(launch.get("kernel", "?")),
            "file": str(launch.get("file", "")),
            "grid": [int(g) for g in launch.get("grid", [1, 1, 1])][:3],
            "programs": programs,
            "sites": sites,
            "sources": {f: sources[f] for f in files if isinstance(sources.get(f), str)},
            "tensors": tensors,
        }
        return data, cells

    def _findings(self, launch: dict[str, Any], tensor: dict[str, Any], lay: Layout) -> list[dict[str, Any]]:
        """The findings whose example lies in this launch's ``tensor``, placed on its grid."""
        out = []
        for report in self.checks:
            for f in report.findings:
                if not _in_launch(f, launch, tensor) or f.tensor != tensor["name"]:
                    continue
                written = finding_json(f)
                slice_, cell = None, None
                index = f.index
                if index is not None and len(index) == len(tensor["shape"]) and index:
                    c = index[-1]
                    r = index[-2] if len(index) >= 2 else 0
                    lead = index[:-2]
                    if lay.merged:
                        inside = all(0 <= i < n for i, n in zip(index[:-1], lay.merged, strict=True))
                        r = 0
                        for i, n in zip(index[:-1], lay.merged, strict=True):
                            r = r * n + i
                        r, lead = (r if inside else -1), []
                    if all(0 <= i < n for i, n in zip(lead, lay.lead, strict=True)):
                        slice_ = 0
                        for i, n in zip(lead, lay.lead, strict=True):
                            slice_ = slice_ * n + i
                        if 0 <= r < lay.rows and 0 <= c < lay.cols:
                            cell = [r // lay.row_step, c // lay.col_step]
                out.append(
                    {
                        **{key: written[key] for key in PLACED_FINDING_KEYS},
                        "slice": slice_,
                        "bin": cell,
                        # Where the page draws the lanes that touch no element: past the edge.
                        "indices": _lane_indices(f, len(tensor["shape"])) if cell is None else [],
                    }
                )
        return out
