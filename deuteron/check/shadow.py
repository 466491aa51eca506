"""Shadow memory: per allocation, who last wrote each element and who read it, in a few int32.

Memory stays bounded by the tensors' sizes, not by how many accesses a launch makes: each
written allocation gets a shadow of a few int32 per element (last writer program, its line;
first and last reader program, the first reader's line). Reads are buffered per allocation and
folded into the shadow only if the allocation is ever written in the launch (inputs that are only
read never get a shadow), or when the buffer outgrows the allocation.

Programs run one after another in the interpreter, so the sequence number of the running program
only grows; that is what lets a min and a max stand in for "the set of readers".

Also here: how shadow cells and addresses read as tensor elements, for the messages.
"""

from __future__ import annotations

import numpy as np

from ..model.access import LaunchInfo, StorageArea, TensorArg

NO_READER = np.iinfo(np.int32).max
SHOWN = 8  # element offsets shown in a message


class Shadow:
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

    def __init__(self, area: StorageArea) -> None:
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

    def read(self, addresses: np.ndarray, seq: int, site: int, span: int) -> None:
        """Buffer a read; fold the buffer into the shadow once it would outgrow it."""
        self.pending.append((addresses, seq, site, span))
        self.pending_lanes += addresses.size
        if self.pending_lanes > 4 * self.cells + 65536:
            self.fold_reads()

    def fold_reads(self) -> None:
        if not self.pending:
            return
        if self.rmin is None:
            n = self.cells
            self.rmin = np.full(n, NO_READER, dtype=np.int32)
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
        fresh = before == NO_READER
        # Assigning in reverse makes the earliest read of a repeated cell the one that sticks.
        self.rmin[idx[::-1]] = np.minimum(before, seqs)[::-1]
        self.rsite[idx[fresh][::-1]] = sites[fresh][::-1]
        self.rmax[idx] = seqs  # sequence numbers only grow, so the last assignment is the max

    def write(self, idx: np.ndarray, seq: int, site: int) -> None:
        if self.writer is None:
            self.writer = np.full(self.cells, -1, dtype=np.int32)
            self.wsite = np.full(self.cells, -1, dtype=np.int32)
        assert self.wsite is not None
        self.writer[idx] = seq
        self.wsite[idx] = site

    def atomic_write(self, idx: np.ndarray) -> None:
        if self.atomic is None:
            self.atomic = np.zeros(self.cells, dtype=bool)
        self.atomic[idx] = True


def show(offsets: np.ndarray) -> str:
    """A list of element offsets as a person reads it: a range when contiguous, else the first few."""
    values = np.unique(offsets)
    if values.size > 2 and values[-1] - values[0] == values.size - 1:
        return f"{values[0]}..{values[-1]}"
    text = ", ".join(str(v) for v in values[:SHOWN])
    return text + (f", ... ({values.size} in all)" if values.size > SHOWN else "")


def tensor_near(launch: LaunchInfo, area: StorageArea, address: int) -> TensorArg:
    """Of the tensors on one allocation, the one that starts closest below ``address``."""
    candidates = [launch.tensors[t] for t in area.tensors]
    below = [t for t in candidates if t.data_ptr <= address]
    return max(below, key=lambda t: t.data_ptr) if below else min(candidates, key=lambda t: t.data_ptr)


def tensor_at(launch: LaunchInfo, area: StorageArea, byte_offset: int) -> TensorArg:
    return tensor_near(launch, area, area.start + byte_offset)


def element_offsets(area: StorageArea, tensor: TensorArg, cells: np.ndarray) -> np.ndarray:
    addresses = area.start + cells.astype(np.int64) * area.granule
    return (addresses - tensor.data_ptr) // tensor.element_size


def view_of(cells: np.ndarray, area: StorageArea, tensor: TensorArg) -> np.ndarray | None:
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
