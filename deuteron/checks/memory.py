"""Out-of-bounds, races between programs, and store coverage, from one launch's accesses.

Memory stays bounded by the tensors' sizes, not by how many accesses a launch makes: each
written allocation gets a shadow of a few int32 per element (last writer program, its line;
first and last reader program, the first reader's line). Reads are buffered per allocation and
folded into the shadow only if the allocation is ever written in the launch (inputs that are only
read never get a shadow), or when the buffer outgrows the allocation.

Programs run one after another in the interpreter, so the sequence number of the running program
only grows; that is what lets a min and a max stand in for "the set of readers".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..backends.interpreter import adapter
from ..backends.interpreter.adapter import ATOMIC, LOAD, LaunchInfo, TensorArg
from .findings import Findings

_NO_READER = np.iinfo(np.int32).max
_SHOWN = 8  # element offsets shown in a message


class _Shadow:
    __slots__ = (
        "area",
        "writer",
        "wsite",
        "atomic",
        "rmin",
        "rmax",
        "rsite",
        "pending",
        "pending_lanes",
        "first_site",
    )

    def __init__(self, area: adapter.StorageArea) -> None:
        self.area = area
        self.writer: np.ndarray | None = None
        self.wsite: np.ndarray | None = None
        self.atomic: np.ndarray | None = None
        self.rmin: np.ndarray | None = None
        self.rmax: np.ndarray | None = None
        self.rsite: np.ndarray | None = None
        self.pending: list[tuple[np.ndarray, int, int, int]] = []  # addresses, program, site, cells each
        self.pending_lanes = 0
        self.first_site = -1

    @property
    def cells(self) -> int:
        return max(1, self.area.nbytes // self.area.granule)

    def index(self, addresses: np.ndarray, span: int = 1) -> np.ndarray:
        """Shadow cells of the accessed elements; an element wider than a cell covers ``span`` cells."""
        offsets = addresses - np.uint64(self.area.start)
        idx = (offsets // np.uint64(self.area.granule)).astype(np.intp)
        if span > 1:
            idx = np.minimum((idx[:, None] + np.arange(span)).reshape(-1), self.cells - 1)
        return idx

    def written(self) -> bool:
        return self.writer is not None or self.atomic is not None

    def fold_reads(self) -> None:
        if not self.pending:
            return
        if self.rmin is None:
            n = self.cells
            self.rmin = np.full(n, _NO_READER, dtype=np.int32)
            self.rmax = np.full(n, -1, dtype=np.int32)
            self.rsite = np.full(n, -1, dtype=np.int32)
        assert self.rmax is not None and self.rsite is not None
        chunks = [self.index(a, span) for a, _, _, span in self.pending]
        counts = [len(c) for c in chunks]
        idx = np.concatenate(chunks)
        seqs = np.repeat(np.array([s for _, s, _, _ in self.pending], dtype=np.int32), counts)
        sites = np.repeat(np.array([s for _, _, s, _ in self.pending], dtype=np.int32), counts)
        self.pending.clear()
        self.pending_lanes = 0
        before = self.rmin[idx]
        fresh = before == _NO_READER
        # Assigning in reverse makes the earliest read of a repeated cell the one that sticks.
        self.rmin[idx[::-1]] = np.minimum(before, seqs)[::-1]
        self.rsite[idx[fresh][::-1]] = sites[fresh][::-1]
        self.rmax[idx] = seqs  # sequence numbers only grow, so the last assignment is the max


class MemoryChecks:
    """Consumes one launch's accesses at a time; raises findings into ``findings``."""

    def __init__(self, findings: Findings, races: bool = True, coverage: bool = True) -> None:
        self.findings = findings
        self.races = races
        self.coverage = coverage
        self.launch: LaunchInfo | None = None
        self.shadows: list[_Shadow] = []
        self.seq = -1
        self.pids: Sequence[tuple[int, int, int]] = ()

    def begin(self, launch: LaunchInfo, pids: Sequence[tuple[int, int, int]]) -> None:
        self.launch = launch
        self.shadows = [_Shadow(area) for area in launch.storages]
        self.pids = pids
        self.seq = -1

    def program(self, seq: int) -> None:
        self.seq = seq

    # -- accesses -------------------------------------------------------------------------

    def access(self, kind: int, addresses: np.ndarray, storage: int, element_size: int, site: int) -> None:
        if not (self.races or self.coverage):
            return
        shadow = self.shadows[storage]
        span = max(1, element_size // shadow.area.granule)
        if kind == LOAD:
            if not self.races:
                return
            shadow.pending.append((addresses, self.seq, site, span))
            shadow.pending_lanes += addresses.size
            if shadow.pending_lanes > 4 * shadow.cells + 65536:  # keep the buffer no bigger than a shadow
                shadow.fold_reads()
            return
        if shadow.first_site < 0:
            shadow.first_site = site
        idx = shadow.index(addresses, span)
        if kind == ATOMIC:  # atomics are never races; they do count as writes for coverage
            if shadow.atomic is None:
                shadow.atomic = np.zeros(shadow.cells, dtype=bool)
            shadow.atomic[idx] = True
            return
        if shadow.writer is None:
            shadow.writer = np.full(shadow.cells, -1, dtype=np.int32)
            shadow.wsite = np.full(shadow.cells, -1, dtype=np.int32)
        assert shadow.wsite is not None
        if self.races:
            before = shadow.writer[idx]
            clash = (before >= 0) & (before != self.seq)
            if clash.any():
                self._write_race(shadow, idx[clash], before[clash], site)
        shadow.writer[idx] = self.seq
        shadow.wsite[idx] = site

    def _write_race(self, shadow: _Shadow, cells: np.ndarray, others: np.ndarray, site: int) -> None:
        assert self.launch is not None and shadow.wsite is not None
        tensor = _tensor_at(self.launch, shadow.area, int(cells[0]) * shadow.area.granule)
        other = int(others[0])
        other_site = adapter.sites[int(shadow.wsite[cells[0]])] if shadow.wsite[cells[0]] >= 0 else None
        offsets = _element_offsets(shadow.area, tensor, cells)
        me = self.pids[self.seq]
        them = self.pids[other]
        where = f" (its store at line {other_site.line})" if other_site is not None else ""
        self.findings.add(
            "race",
            self.launch,
            site,
            f"program {me} stores to {len(cells)} element(s) of {tensor.name} that program {them} "
            f"also stored to{where}: element offsets {_show(offsets)}. Which value survives depends on "
            "the order programs run in on the GPU",
            seq=self.seq,
            program=me,
            tensor=tensor.name,
            details={
                "other_program": list(them),
                "element_offsets": offsets[:_SHOWN].tolist(),
                "access": "store/store",
            },
        )

    # -- end of launch --------------------------------------------------------------------

    def finish(self, completed: bool = True) -> None:
        """End of launch: read/write races, and coverage unless the launch stopped part way."""
        launch = self.launch
        if launch is None:
            return
        for shadow in self.shadows:
            if shadow.writer is not None and self.races:
                shadow.fold_reads()
                self._read_races(shadow)
            if self.coverage and completed and shadow.written():
                self._coverage(shadow)
        self.shadows = []
        self.launch = None

    def _read_races(self, shadow: _Shadow) -> None:
        writer, rmin, rmax = shadow.writer, shadow.rmin, shadow.rmax
        if writer is None or rmin is None or rmax is None or shadow.rsite is None or shadow.wsite is None:
            return
        read_and_written = (writer >= 0) & (rmax >= 0)
        other = read_and_written & ((rmin != writer) | (rmax != writer))
        cells = np.flatnonzero(other)
        if cells.size == 0:
            return
        assert self.launch is not None
        # One finding per (read line, write line) pair, counted over the writing programs.
        pairs = np.stack([shadow.rsite[cells], shadow.wsite[cells]], axis=1)
        _, first, inverse = np.unique(pairs, axis=0, return_index=True, return_inverse=True)
        for group, at in enumerate(first):
            members = cells[inverse.reshape(-1) == group]
            cell = int(cells[at])
            w = int(writer[cell])
            r = int(rmin[cell]) if int(rmin[cell]) != w else int(rmax[cell])
            rsite, wsite = int(shadow.rsite[cell]), int(shadow.wsite[cell])
            tensor = _tensor_at(self.launch, shadow.area, cell * shadow.area.granule)
            offsets = _element_offsets(shadow.area, tensor, members)
            read_line = adapter.sites[rsite].line if rsite >= 0 else "?"
            writer_programs = np.unique(writer[members])
            self.findings.add(
                "race",
                self.launch,
                wsite,
                f"{len(members)} element(s) of {tensor.name} are stored by one program and read by another: "
                f"element {offsets[0]} is stored by program {self.pids[w]} "
                f"and read by program {self.pids[r]} "
                f"(line {read_line}); element offsets {_show(offsets)}. What the reader sees depends on the "
                "order programs run in on the GPU",
                program=self.pids[w],
                tensor=tensor.name,
                programs=int(writer_programs.size),
                details={
                    "other_program": list(self.pids[r]),
                    "read_line": read_line,
                    "element_offsets": offsets[:_SHOWN].tolist(),
                    "access": "load/store",
                },
            )

    def _coverage(self, shadow: _Shadow) -> None:
        assert self.launch is not None
        cells = shadow.cells
        written = np.zeros(cells, dtype=bool)
        if shadow.writer is not None:
            written |= shadow.writer >= 0
        if shadow.atomic is not None:
            written |= shadow.atomic
        for t in shadow.area.tensors:
            tensor = self.launch.tensors[t]
            hit = _view_of(written, shadow.area, tensor)
            if hit is None or hit.size == 0:
                continue
            n_written = int(np.count_nonzero(hit))
            if n_written == 0 or n_written == hit.size:
                continue  # not an output of this launch, or fully written
            missing = hit.size - n_written
            first = int(np.flatnonzero(~hit)[0])
            index = tuple(int(i) for i in np.unravel_index(first, tensor.shape)) if tensor.shape else ()
            self.findings.add(
                "store-coverage",
                self.launch,
                shadow.first_site,
                f"{tensor.name} ({tensor.dtype}, shape {tensor.shape}): {missing} of {hit.size} elements "
                f"({100 * missing / hit.size:.1f}%) were written by no program; "
                f"the first is {tensor.name}{list(index)}",
                tensor=tensor.name,
                details={"unwritten": missing, "elements": int(hit.size), "first_unwritten": list(index)},
                programs=0,
            )

    # -- out of bounds (the adapter already masked these lanes off) ----------------------------

    def out_of_bounds(
        self, kind: int, addresses: np.ndarray, lanes: np.ndarray, near: int, element_size: int, site: int
    ) -> None:
        launch = self.launch
        assert launch is not None
        what = adapter.ACCESS_NAMES[kind]
        program = self.pids[self.seq] if 0 <= self.seq < len(self.pids) else None
        if near < 0:
            self.findings.add(
                "out-of-bounds",
                launch,
                site,
                f"{what} of {addresses.size} lane(s) while the kernel has no tensor arguments",
                seq=self.seq,
                program=program,
            )
            return
        area = launch.storages[near]
        tensor = tensor_near(launch, area, int(addresses[0]))
        offsets = (addresses.astype(np.int64) - np.int64(tensor.data_ptr)) // tensor.element_size
        first = (area.start - tensor.data_ptr) // tensor.element_size
        last = (area.start + area.nbytes - tensor.data_ptr) // tensor.element_size - 1
        numel = int(np.prod(tensor.shape)) if tensor.shape else 1
        span = f"elements {first}..{last}" if (first, last) != (0, numel - 1) else f"{numel} elements"
        self.findings.add(
            "out-of-bounds",
            launch,
            site,
            f"{what} of {addresses.size} unmasked lane(s) outside every tensor argument, nearest "
            f"{tensor.name} ({tensor.dtype}, shape {tensor.shape}, strides {tensor.strides}; its memory "
            f"holds {span}): element offsets from {tensor.name}'s first element {_show(offsets)}",
            seq=self.seq,
            program=program,
            tensor=tensor.name,
            details={
                "access": what,
                "element_offsets": offsets[:_SHOWN].tolist(),
                "lanes": lanes[:_SHOWN].tolist(),
                "valid_offsets": [int(first), int(last)],
                "shape": list(tensor.shape),
                "strides": list(tensor.strides),
            },
        )


def _show(offsets: np.ndarray) -> str:
    values = np.unique(offsets)
    if values.size > 2 and values[-1] - values[0] == values.size - 1:
        return f"{values[0]}..{values[-1]}"
    text = ", ".join(str(v) for v in values[:_SHOWN])
    return text + (f", ... ({values.size} in all)" if values.size > _SHOWN else "")


def tensor_near(launch: LaunchInfo, area: adapter.StorageArea, address: int) -> TensorArg:
    """Of the tensors on one allocation, the one that starts closest below ``address``."""
    candidates = [launch.tensors[t] for t in area.tensors]
    below = [t for t in candidates if t.data_ptr <= address]
    return max(below, key=lambda t: t.data_ptr) if below else min(candidates, key=lambda t: t.data_ptr)


def _tensor_at(launch: LaunchInfo, area: adapter.StorageArea, byte_offset: int) -> TensorArg:
    return tensor_near(launch, area, area.start + byte_offset)


def _element_offsets(area: adapter.StorageArea, tensor: TensorArg, cells: np.ndarray) -> np.ndarray:
    addresses = area.start + cells.astype(np.int64) * area.granule
    return (addresses - tensor.data_ptr) // tensor.element_size


def _view_of(cells: np.ndarray, area: adapter.StorageArea, tensor: TensorArg) -> np.ndarray | None:
    """A per-cell array seen through a tensor view: element i of the result is the view's element i.

    as_strided, so even a large output costs no index array; None if the view leaves its storage.
    """
    scale = tensor.element_size // area.granule
    base = (tensor.data_ptr - area.start) // area.granule
    if scale < 1 or base < 0:
        return None
    strides = [st * scale for st in tensor.strides]
    if any(st < 0 for st in strides):
        return None
    last = base + sum((n - 1) * st for n, st in zip(tensor.shape, strides, strict=True) if n > 0)
    if last >= cells.size:
        return None
    item = cells.itemsize
    view = np.lib.stride_tricks.as_strided(
        cells[base:], shape=tensor.shape, strides=[st * item for st in strides], writeable=False
    )
    return view.reshape(-1)


__all__ = ["MemoryChecks", "tensor_near"]
