"""Arrays over an allocation's cells, stored in pages allocated on first touch.

A 16-byte store into a 256 MiB tensor must not cost a shadow of 256 Mi cells: pages of ``PAGE``
cells are made only where the kernel touches, so memory follows the elements touched. An
allocation smaller than a page gets one page of its own size (dense, as a plain array would be).
The common access (a block of lanes inside one page) takes a fast path with one scalar lookup.
Small allocations (up to ``EAGER_CELLS``) take all their pages at once, as a dense array would.
"""

from __future__ import annotations

import numpy as np

PAGE_BITS = 16
PAGE = 1 << PAGE_BITS
# Up to this many cells an allocation gets all its pages at its first touch: exactly the memory a
# dense array would take, without the copies of growing a pool page by page.
EAGER_CELLS = 1 << 22


class Paged:
    """Named fields (dtype, fill value) over ``cells`` cells; untouched cells read as the fill."""

    __slots__ = ("cells", "bits", "size", "table", "pools", "fills", "used")

    def __init__(self, cells: int, fields: dict[str, tuple[type | np.dtype, int | bool]]) -> None:
        self.cells = cells
        self.bits = min(PAGE_BITS, max(0, (cells - 1).bit_length()))
        self.size = 1 << self.bits
        pages = -(-cells // self.size)
        self.table = np.full(pages, -1, dtype=np.int64)  # page -> slot in the pools, -1 untouched
        self.fills = {name: fill for name, (_, fill) in fields.items()}
        self.pools = {name: np.empty(0, dtype=dtype) for name, (dtype, _) in fields.items()}
        self.used = 0  # slots in use

    @property
    def touched_pages(self) -> int:
        return self.used

    @property
    def pages(self) -> int:
        return len(self.table)

    def nbytes(self) -> int:
        return sum(p.nbytes for p in self.pools.values()) + self.table.nbytes

    def _grow(self, wanted: int) -> None:
        have = len(next(iter(self.pools.values()))) // self.size
        if wanted <= have:
            return
        slots = max(wanted, have + have // 2 + 1)
        for name, pool in self.pools.items():
            grown = np.full(slots * self.size, self.fills[name], dtype=pool.dtype)
            grown[: len(pool)] = pool
            self.pools[name] = grown

    def _allocate(self, pages: np.ndarray) -> None:
        if self.used == 0 and self.cells <= EAGER_CELLS:
            pages = np.arange(len(self.table))
        new = pages[self.table[pages] < 0]
        if new.size:
            self._grow(self.used + new.size)
            self.table[new] = np.arange(self.used, self.used + new.size)
            self.used += new.size

    def locate(self, idx: np.ndarray) -> np.ndarray:
        """Positions in the pools of cells ``idx``, allocating their pages."""
        if idx.size == 0:
            return idx
        bits = self.bits
        lo, hi = int(idx.min()) >> bits, int(idx.max()) >> bits
        if lo == hi:  # the usual access: one page, one scalar lookup
            slot = int(self.table[lo])
            if slot < 0:
                self._allocate(np.array([lo]))
                slot = int(self.table[lo])
            return idx + ((slot - lo) << bits)
        pages = idx >> bits
        self._allocate(np.unique(pages))
        return (self.table[pages] << bits) | (idx & (self.size - 1))

    def find(self, idx: np.ndarray) -> np.ndarray:
        """Positions of cells ``idx`` in the pools; -1 for cells on untouched pages (nothing allocated)."""
        slots = self.table[idx >> self.bits]
        return np.where(slots >= 0, (slots << self.bits) | (idx & (self.size - 1)), -1)

    def get(self, name: str, idx: np.ndarray) -> np.ndarray:
        """Values of field ``name`` at cells ``idx`` (the fill where untouched), without allocating."""
        if idx.size:
            bits = self.bits
            lo, hi = int(idx.min()) >> bits, int(idx.max()) >> bits
            if lo == hi:  # the usual access: one page, one scalar lookup
                slot = int(self.table[lo])
                if slot < 0:
                    return np.full(idx.shape, self.fills[name], dtype=self.pools[name].dtype)
                return self.pools[name][idx + ((slot - lo) << bits)]
        where = self.find(idx)
        pool = self.pools[name]
        out = np.full(idx.shape, self.fills[name], dtype=pool.dtype)
        hit = where >= 0
        out[hit] = pool[where[hit]]
        return out

    def touched(self) -> tuple[np.ndarray, np.ndarray]:
        """(first cell of each touched page, its slot), in cell order."""
        pages = np.flatnonzero(self.table >= 0)
        return pages << self.bits, self.table[pages]

    def has_page(self, idx: np.ndarray) -> np.ndarray:
        return self.table[idx >> self.bits] >= 0

    def dense(self, name: str) -> np.ndarray:
        """The whole field as one array over every cell (only for allocations touched all over).

        A view of the pool when every page is there in order (an eagerly paged allocation), else
        a copy."""
        pool = self.pools[name]
        if self.used == len(self.table) and np.array_equal(self.table, np.arange(self.used)):
            return pool[: self.cells]
        out = np.full(self.cells, self.fills[name], dtype=self.pools[name].dtype)
        starts, slots = self.touched()
        pool = self.pools[name]
        for start, slot in zip(starts.tolist(), slots.tolist(), strict=True):
            end = min(start + self.size, self.cells)
            out[start:end] = pool[slot * self.size : slot * self.size + (end - start)]
        return out
