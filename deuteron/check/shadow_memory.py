"""Shadow memory: per allocation, who last wrote each element and who read it.

Memory follows the elements a launch touches, not the tensors' sizes: every field lives in pages
allocated on first touch (:mod:`.paged`). Writes record the last writer program and its line;
atomics a flag. Reads are buffered, then folded into a read shadow (first and last reader, the
first reader's line) only where the launch writes: reads of cells nobody writes cannot race, so
an input that is only read never gets a shadow. A buffer that piles up before the allocation is
written is kept compactly, as runs of consecutive cells.

Programs run one after another in the interpreter, so the sequence number of the running program
only grows; that is what lets a min and a max stand in for "the set of readers".

Once a launch takes a lock (:mod:`.locks`), each cell also remembers the lock its accesses held:
``UNGUARDED_YET`` before any access, the lock's id while every access held that one lock, and
``NO_LOCK`` once one did not.

Also here: how shadow cells and addresses read as tensor elements, for the messages.
"""

from __future__ import annotations

import numpy as np

from deuteron.check.paged import Paged
from deuteron.model.access import LaunchInfo, StorageArea, TensorArg, element_index

NO_READER = np.iinfo(np.int32).max
UNGUARDED_YET = -3  # a cell no access has touched since locks were first seen
NO_LOCK = -1
SHOWN = 8  # element offsets shown in a message
# Pending read lanes kept per allocation before they are folded or compacted (8 bytes each).
PENDING_BUDGET = 1 << 22

# (cells, program, site, lock held): a read as shadow-cell indices (int64)
_Read = tuple[np.ndarray, int, int, int]
# (addresses, program, site, cells per element, lock held): a read as it came, indexed only if kept
_Raw = tuple[np.ndarray, int, int, int, int]
# (first cells, run lengths, program, site, lock held): a buffered read compacted into runs
_Runs = tuple[np.ndarray, np.ndarray, int, int, int]


def _runs(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique cells as runs of consecutive cells: (first cell of each run, its length)."""
    u = np.unique(cells)
    breaks = np.flatnonzero(np.diff(u) != 1) + 1
    starts = u[np.concatenate(([0], breaks))]
    ends = np.concatenate((breaks, [u.size]))
    return starts, np.diff(np.concatenate(([0], ends)))


def _expand(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    if not len(starts):
        return np.zeros(0, np.int64)
    total = int(lengths.sum())
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.repeat(starts, lengths) + offsets


class Shadow:
    """One allocation's shadow for one launch: last writer and its line per cell, atomics, the
    first and last reader (buffered until the allocation is written) and, once locks are seen, the
    lock each cell's accesses held. Slots: it is touched on every access."""

    __slots__ = (
        "area",
        "cells",
        "writes",
        "atomics",
        "reads",
        "guards",
        "stamps",
        "pending",
        "pending_lanes",
        "runs",
        "run_count",
        "first_site",
    )

    def __init__(self, area: StorageArea) -> None:
        self.area = area
        self.cells = max(1, area.nbytes // area.granule)
        self.writes: Paged | None = None  # writer (program seq), wsite
        self.atomics: Paged | None = None  # atomic (bool)
        self.reads: Paged | None = None  # rmin, rmax, rsite
        self.guards: Paged | None = None  # guard: the lock every access held (see the module doc)
        self.stamps: Paged | None = None  # the writer's epoch (:mod:`.happens_before`), once one released
        self.pending: list[_Raw] = []
        self.pending_lanes = 0
        self.runs: list[_Runs] = []
        self.run_count = 0
        self.first_site = -1

    @property
    def rmin(self) -> Paged | None:
        """The read shadow (first reader, last reader, first reader's line); None until reads fold."""
        return self.reads

    def index(self, addresses: np.ndarray, span: int = 1) -> np.ndarray:
        """Shadow cells of the accessed elements; an element wider than a cell covers ``span`` cells."""
        offsets = addresses - np.uint64(self.area.start)
        granule = self.area.granule
        if granule & (granule - 1) == 0:  # the usual: a shift, and a view (offsets < 2**63)
            idx = (offsets >> np.uint64(granule.bit_length() - 1)).view(np.int64)
        else:
            idx = (offsets // np.uint64(granule)).astype(np.int64)
        if span > 1:
            idx = np.minimum((idx[:, None] + np.arange(span)).reshape(-1), self.cells - 1)
        return idx

    def written(self) -> bool:
        return self.writes is not None or self.atomics is not None

    # --- reads -----------------------------------------------------------------------------------

    def read(self, addresses: np.ndarray, seq: int, site: int, span: int, lock: int = NO_LOCK) -> None:
        """Buffer a read as it came (most are dropped unread at the end of the launch: inputs that
        are never written); fold or compact the buffer once it would outgrow its budget."""
        self.pending.append((addresses, seq, site, span, lock))
        self.pending_lanes += addresses.size * span
        if self.pending_lanes > 4 * self.cells + 65536:  # never bigger than a dense shadow would be
            self.fold_reads()
        elif self.pending_lanes > PENDING_BUDGET:
            self._compact()

    def _compact(self) -> None:
        """Fold what lands on written pages now; keep the rest as runs of cells (most reads are
        contiguous blocks, so a run per read instead of a lane per element)."""
        if self.writes is not None:
            self.fold_reads(only_written=True)
        for addresses, seq, site, span, lock in self.pending:
            starts, lengths = _runs(self.index(addresses, span))
            self.runs.append((starts, lengths, seq, site, lock))
            self.run_count += len(starts)
        self.pending.clear()
        self.pending_lanes = 0
        if self.run_count > PENDING_BUDGET:  # scattered reads do not compact: fold them all
            self.fold_reads()

    def fold_reads(self, only_written: bool = False) -> None:
        """Fold buffered reads into the read shadow; with ``only_written``, only those on pages
        the launch writes (the others stay buffered). At the end of a launch the rest is dropped."""
        entries: list[_Read] = [
            (self.index(a, span), seq, site, lock) for a, seq, site, span, lock in self.pending
        ]
        entries += [
            (_expand(starts, lengths), seq, site, lock) for starts, lengths, seq, site, lock in self.runs
        ]
        keep: list[_Raw] = []
        if only_written:
            writes = self.writes
            folded: list[_Read] = []
            for cells, seq, site, lock in entries:
                on = writes.has_page(cells) if writes is not None else np.zeros(cells.size, bool)
                if on.any():
                    folded.append((cells[on], seq, site, lock))
                if not on.all():  # kept as addresses of whole cells (one cell per element)
                    off = cells[~on].astype(np.uint64) * np.uint64(self.area.granule)
                    keep.append((off + np.uint64(self.area.start), seq, site, 1, lock))
            entries = folded
        self.pending = keep
        self.pending_lanes = sum(a.size for a, _, _, _, _ in keep)
        self.runs.clear()
        self.run_count = 0
        entries = [e for e in entries if e[0].size]
        if not entries:
            return
        if self.guards is not None:
            for cells, _, _, lock in entries:
                self.guard(cells, lock)
        if self.reads is None:
            self.reads = Paged(
                self.cells, {"rmin": (np.int32, NO_READER), "rmax": (np.int32, -1), "rsite": (np.int32, -1)}
            )
        counts = [c.size for c, _, _, _ in entries]
        idx = np.concatenate([c for c, _, _, _ in entries])
        seqs = np.repeat(np.array([s for _, s, _, _ in entries], dtype=np.int32), counts)
        sites = np.repeat(np.array([s for _, _, s, _ in entries], dtype=np.int32), counts)
        pos = self.reads.locate(idx)
        rmin, rmax, rsite = (self.reads.pools[k] for k in ("rmin", "rmax", "rsite"))
        before = rmin[pos]
        fresh = before == NO_READER
        # Assigning in reverse makes the earliest read of a repeated cell the one that sticks.
        rmin[pos[::-1]] = np.minimum(before, seqs)[::-1]
        rsite[pos[fresh][::-1]] = sites[fresh][::-1]
        rmax[pos] = seqs  # sequence numbers only grow, so the last assignment is the max

    def finish_reads(self) -> None:
        """End of launch: fold the reads of written cells' pages; drop the rest (they cannot race)."""
        if self.writes is not None and (self.pending or self.runs):
            self.fold_reads(only_written=True)
        self.pending.clear()
        self.runs.clear()
        self.pending_lanes = self.run_count = 0

    # --- writes ----------------------------------------------------------------------------------

    def write_site(self, cell: int) -> int:
        if self.writes is None:
            return -1
        return int(self.writes.get("wsite", np.array([cell], dtype=np.int64))[0])

    def write(self, idx: np.ndarray, seq: int, site: int) -> None:
        self.commit(self.locate_writes(idx), seq, site)

    def locate_writes(self, idx: np.ndarray) -> np.ndarray:
        """Where cells ``idx`` live in the write shadow (allocating their pages): read the writers
        there (``writer_at``) before ``commit`` overwrites them, in one lookup."""
        if self.writes is None:
            self.writes = Paged(self.cells, {"writer": (np.int32, -1), "wsite": (np.int32, -1)})
        return self.writes.locate(idx)

    def writer_at(self, pos: np.ndarray) -> np.ndarray:
        assert self.writes is not None
        return self.writes.pools["writer"][pos]

    def commit(self, pos: np.ndarray, seq: int, site: int) -> None:
        assert self.writes is not None
        self.writes.pools["writer"][pos] = seq
        self.writes.pools["wsite"][pos] = site

    def stamp(self, idx: np.ndarray, epoch: int) -> None:
        """Cells ``idx`` were written at the writer's ``epoch`` (its releases so far). Made on the
        first write by a program that had released: every write before that was at epoch 0."""
        if self.stamps is None:
            self.stamps = Paged(self.cells, {"stamp": (np.int32, 0)})
        pos = self.stamps.locate(idx)
        self.stamps.pools["stamp"][pos] = epoch

    def stamp_at(self, idx: np.ndarray) -> np.ndarray:
        if self.stamps is None:
            return np.zeros(idx.shape, dtype=np.int32)
        return self.stamps.get("stamp", idx)

    def writers(self, idx: np.ndarray) -> np.ndarray:
        """The last writer of each cell (-1: none) without allocating pages."""
        if self.writes is None:
            return np.full(idx.shape, -1, dtype=np.int32)
        return self.writes.get("writer", idx)

    # --- locks ------------------------------------------------------------------------------------

    def start_guards(self) -> None:
        """Locks appeared mid-launch: what was accessed before held none."""
        self.guards = Paged(self.cells, {"guard": (np.int32, UNGUARDED_YET)})
        if self.writes is not None:
            cells, writer, _ = self.written_cells()
            self.guard(cells[writer >= 0], NO_LOCK)
        if self.reads is not None:
            starts, slots = self.reads.touched()
            size = self.reads.size
            for start, slot in zip(starts.tolist(), slots.tolist(), strict=True):
                hit = np.flatnonzero(self.reads.pools["rmax"][slot * size : (slot + 1) * size] >= 0)
                self.guard(hit + start, NO_LOCK)

    def guard(self, idx: np.ndarray, lock: int) -> None:
        """Cells ``idx`` were accessed holding ``lock`` (NO_LOCK: none)."""
        if self.guards is None or idx.size == 0:
            return
        pos = self.guards.locate(idx)
        pool = self.guards.pools["guard"]
        before = pool[pos]
        pool[pos] = np.where((before == UNGUARDED_YET) | (before == lock), lock, NO_LOCK)

    def guarded(self, idx: np.ndarray) -> np.ndarray:
        """The lock every access so far to each cell held (NO_LOCK: not one lock; UNGUARDED_YET)."""
        if self.guards is None:
            return np.full(idx.shape, NO_LOCK, dtype=np.int32)
        return self.guards.get("guard", idx)

    def atomic_write(self, idx: np.ndarray) -> None:
        if self.atomics is None:
            self.atomics = Paged(self.cells, {"atomic": (np.bool_, False)})
        pos = self.atomics.locate(idx)  # first: locating may grow (replace) the pools
        self.atomics.pools["atomic"][pos] = True

    def written_cells(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every written cell (sorted), its last writer (-1 for atomics only) and that write's site."""
        cells: list[np.ndarray] = []
        writer: list[np.ndarray] = []
        wsite: list[np.ndarray] = []
        if self.writes is not None:
            size = self.writes.size
            for start, slot in zip(*self.writes.touched(), strict=True):
                w = self.writes.pools["writer"][slot * size : (slot + 1) * size]
                hit = np.flatnonzero(w >= 0)
                cells.append(hit + start)
                writer.append(w[hit])
                wsite.append(self.writes.pools["wsite"][slot * size + hit])
        if self.atomics is not None:
            size = self.atomics.size
            for start, slot in zip(*self.atomics.touched(), strict=True):
                hit = np.flatnonzero(self.atomics.pools["atomic"][slot * size : (slot + 1) * size])
                cells.append(hit + start)
                writer.append(np.full(hit.size, -1, np.int32))
                wsite.append(np.full(hit.size, -1, np.int32))
        if not cells:
            empty = np.zeros(0, np.int64)
            return empty, empty.astype(np.int32), empty.astype(np.int32)
        c, w, s = np.concatenate(cells), np.concatenate(writer), np.concatenate(wsite)
        order = np.argsort(c, kind="stable")
        c, w, s = c[order], w[order], s[order]
        # a cell both stored and atomically written counts once, with its store's writer
        first = np.concatenate(([True], c[1:] != c[:-1]))
        return c[first], w[first], s[first]

    def memory(self) -> int:
        """Bytes the shadow holds now (for the benchmarks)."""
        fields = (self.writes, self.atomics, self.reads, self.guards, self.stamps)
        total = sum(p.nbytes() for p in fields if p is not None)
        total += sum(a.nbytes for a, _, _, _, _ in self.pending)
        return total + sum(s.nbytes + n.nbytes for s, n, _, _, _ in self.runs)


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


def first_index(tensor: TensorArg, offsets: np.ndarray) -> list[int] | None:
    """The first element offset as an index into the tensor's view ([row, col]), None if it has none."""
    if offsets.size == 0:
        return None
    found = element_index(tensor, offsets[:1])
    if found is None or not bool(found[1][0]):
        return None
    return [int(i) for i in found[0][:, 0]]


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
