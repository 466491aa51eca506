"""A kernel launch as the sanitizer sees it: its tensors and their allocations, the source sites of
its accesses, and the stream of events a checker hears (every program's loads, stores, atomics and
non-finite values). Produced from Triton's interpreter by ``deuteron.triton.interpreter.adapter`` and
``deuteron.check.guard``; consumed by the checks and the access recorder.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

LOAD, STORE, ATOMIC = 0, 1, 2
ACCESS_NAMES = ("load", "store", "atomic")
# Masked-off lanes, as the access record keeps them: the kind of the access plus MASKED.
MASKED = 3

# Pointer provenance: while a launch is checked, the pointer of tensor argument i is given to the
# kernel as its address with i + 1 in the top bits, so every pointer derived from it (by offsets,
# tl.where, broadcasts, casts, block pointers, descriptors) says which tensor it came from. User
# space addresses fit in 47 bits; tag 0 is a pointer with no known origin (read from memory).
TAG_SHIFT = 48
ADDRESS_MASK = (1 << TAG_SHIFT) - 1


@dataclass(frozen=True)
class Site:
    """A place in the user's kernel source; columns are 0-based, None where Python cannot tell."""

    file: str
    line: int
    function: str
    col: int | None = None
    end_col: int | None = None


class SiteTable:
    """Source sites interned to small ints: every access carries an int, reports resolve it.

    One table lives as long as the checks that use it (not the process), so it grows with the
    code that was checked, not with how long the process runs.
    """

    __slots__ = ("ids", "sites")

    def __init__(self) -> None:
        self.sites: list[Site] = []
        self.ids: dict[Hashable, int] = {}  # read directly on the hot path

    def intern(self, key: Hashable, make: Callable[[], Site]) -> int:
        sid = self.ids.get(key)
        if sid is None:
            sid = self.ids[key] = len(self.sites)
            self.sites.append(make())
        return sid

    def get(self, sid: int) -> Site | None:
        return self.sites[sid] if 0 <= sid < len(self.sites) else None

    def __getitem__(self, sid: int) -> Site:
        return self.sites[sid]

    def __len__(self) -> int:
        return len(self.sites)


@dataclass(frozen=True)
class TensorArg:
    """A tensor a launch addresses as the programs see it (the host copy, on a GPU machine): an
    argument, or a tensor reached through a pointer read from memory (``argument`` False)."""

    name: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str
    element_size: int
    data_ptr: int
    storage: int  # index into LaunchInfo.storages

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def contiguous(self) -> bool:
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides), strict=True):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True


@dataclass(frozen=True)
class StorageArea:
    """One allocation: every tensor argument that views it may address all of it."""

    start: int
    nbytes: int
    granule: int  # bytes per shadow cell: the gcd of the element sizes of its tensors
    tensors: tuple[int, ...]


@dataclass
class LaunchInfo:
    index: int
    kernel: str
    file: str
    grid: tuple[int, int, int]
    tensors: list[TensorArg]
    storages: list[StorageArea]
    starts: np.ndarray  # uint64, sorted: storages[i] spans [starts[i], ends[i])
    ends: np.ndarray
    sites: SiteTable = field(default_factory=SiteTable)  # what the events' site ids mean

    @property
    def programs(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def add(self, tensor: TensorArg, start: int, nbytes: int, granule: int) -> int:
        """A tensor found during the launch (through a pointer read from memory), with its own
        allocation at ``start``; returns its index. ``starts``/``ends`` keep describing the
        arguments' storages."""
        storage = len(self.storages)
        self.storages.append(StorageArea(start, nbytes, granule, (len(self.tensors),)))
        self.tensors.append(dataclasses.replace(tensor, storage=storage))
        return len(self.tensors) - 1


class AccessListener(Protocol):
    """What a checker hears, in order: launch_begin, then per program program_begin followed
    by its accesses and non-finite values, then launch_end. Addresses are the active lanes only;
    ``site`` is an id into ``launch.sites`` (-1: unknown)."""

    def launch_begin(self, launch: LaunchInfo) -> None: ...

    def program_begin(self, seq: int, pid: tuple[int, int, int]) -> None: ...

    def access(
        self,
        kind: int,
        addresses: np.ndarray,
        storage: int | np.ndarray,
        element_size: int,
        site: int,
        values: np.ndarray | None,
        lanes: np.ndarray | None,
        tensor: int | np.ndarray = -1,
    ) -> None:
        """Lanes inside allocations. ``storage`` and ``tensor`` (the tensor each lane's pointer came
        from, -1 unknown) are one int for all lanes or an array, one per lane."""
        ...

    def out_of_bounds(
        self,
        kind: int,
        addresses: np.ndarray,
        lanes: np.ndarray,
        tensor: int,
        element_size: int,
        site: int,
    ) -> None:
        """Lanes outside the allocation of the tensor their pointer came from (``tensor``), or, for
        a pointer of no known origin (-1), outside every live allocation. Masked off already."""
        ...

    def outside_view(
        self, kind: int, addresses: np.ndarray, lanes: np.ndarray, tensor: int, element_size: int, site: int
    ) -> None:
        """Lanes inside their tensor's allocation but not on the view's elements (padding, another
        row of a slice). Memory-safe, so not masked; usually a wrong stride or mask."""
        ...

    def atomic_result(
        self,
        op: str,
        addresses: np.ndarray,
        tensors: np.ndarray,
        cmp: np.ndarray | None,
        val: np.ndarray,
        old: np.ndarray,
        site: int,
    ) -> None:
        """An atomic's active lanes after it ran (heard after its ``access``): ``op`` ("cas",
        "xchg", "add", ...), real addresses, the tensor each pointer came from (-1 unknown), the
        operands, and the values it found in memory."""
        ...

    def nonfinite(self, op: str, inputs: tuple[np.ndarray, ...], output: np.ndarray, site: int) -> None: ...

    def assert_failed(self, message: str, failing: np.ndarray, site: int) -> None: ...

    def launch_end(self, launch: LaunchInfo, error: BaseException | None) -> None: ...


def element_index(tensor: TensorArg, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Element offsets (from the tensor's first element, in elements) as indices into its view.

    Returns (index, on_view): ``index`` is (ndim, n) int64, ``on_view`` (n,) bool. Off the view the
    index still says where the lane fell: the outermost dimension takes what is left (``shape[0]``
    or more past the end, negative before the start), an inner one may pass its size (the padding
    of a slice: column 62 of a 60-column view). None for views whose strides overlap or interleave:
    their elements cannot be found by dividing through the strides.
    """
    shape, strides = tensor.shape, tensor.strides
    ndim = len(shape)
    offsets = offsets.astype(np.int64, copy=False)
    index = np.zeros((ndim, offsets.size), dtype=np.int64)
    if ndim == 0:
        return index, offsets == 0
    dims = [d for d in range(ndim) if shape[d] > 1]
    if any(strides[d] <= 0 for d in dims):
        return None
    dims.sort(key=lambda d: -strides[d])
    for outer, inner in zip(dims, dims[1:], strict=False):
        if strides[outer] < strides[inner] * shape[inner]:
            return None
    if not dims:  # every dimension has size 1: only offset 0 is on the view
        index[0] = offsets
        return index, offsets == 0
    rem = offsets.copy()
    for d in dims:
        q = rem // strides[d]
        index[d] = q
        rem = rem - q * strides[d]
    on = rem == 0
    for d in dims:
        on &= (index[d] >= 0) & (index[d] < shape[d])
    return index, on


def describe_index(tensor: TensorArg, index: np.ndarray) -> str:
    """``x[3, 62]`` for one lane's index (a column of ``element_index``'s result)."""
    return f"{tensor.name}[{', '.join(str(int(i)) for i in index)}]"
