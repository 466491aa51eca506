"""A kernel launch as the sanitizer sees it: its tensors and their allocations, the source sites of
its accesses, and the stream of events a checker hears (every program's loads, stores, atomics and
non-finite values). Produced from Triton's interpreter by ``deuteron.triton.interpreter.checking`` and
``deuteron.check.guard``; consumed by the checks and the access recorder. One :class:`Access` record
carries each load, store or atomic the whole way.
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
    column: int | None = None
    end_column: int | None = None


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
    """One checked launch as every check sees it: its tensors and their allocations, its grid, and
    the table its events' site ids index. Mutable because it is described before the launch runs
    (``grid`` and ``index`` are set when it starts) and grows when a pointer read from memory leads
    to a tensor that is not an argument (:meth:`add`)."""

    index: int  # the check's count of launches, from 1; findings and the access record name it
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


@dataclass(frozen=True, slots=True, eq=False)
class Access:
    """One global load, store or atomic of one program: the one record of an access event, from
    the interpreter's hook to the checks and the access recorder.

    Why one record: the event crosses five hops (interpreter -> guard -> checker -> memory checks,
    NaN origins, recorder), and each field keeps this one name and meaning all the way. The
    interpreter makes it once per access, as it saw it (``storage`` and ``tensor`` not known yet,
    ``addresses`` still carrying their provenance tags). The guard judges its lanes and hands on
    *parts* of it, records of the same kind narrowed to some lanes: the lanes inside their tensor's
    allocation (``AccessListener.access``), those out of bounds, those off the view, and the
    masked-off ones a recorder keeps. Frozen, so a part can never be changed behind a check's back;
    ``eq=False`` because its fields are arrays (identity is the only sensible equality).

    - ``kind``: LOAD, STORE or ATOMIC; masked-off lanes are ``kind + MASKED`` (the recorder's codes).
    - ``addresses``: as reported, the tagged pointers in the access's shape; in a part, the real
      addresses of that part's lanes, flat, in lane order.
    - ``element_size``: bytes per lane.
    - ``site``: an id into the launch's ``sites`` (-1: no user frame was found).
    - ``mask``: as reported, the kernel's mask (bool, broadcastable to the access's shape); in a
      part the guard hands on, where that part's lanes sit in the access (bool, the access's
      shape; the checker's split of a part by allocation keeps it whole). None: every lane.
    - ``values``: what a store writes (floats decoded from bf16 bits), in the access's shape or
      broadcastable to it; None for loads and atomics. Parts carry the whole access's values.
    - ``storage``: the allocation the lanes lie in (an index into ``launch.storages``), one int for
      all of them or an array, one per lane; -1 where not known or outside every allocation.
    - ``tensor``: the tensor each lane's pointer came from (an index into ``launch.tensors``), one int
      or an array; -1 where unknown.
    """

    kind: int
    addresses: np.ndarray
    element_size: int
    site: int = -1
    mask: np.ndarray | None = None
    values: np.ndarray | None = None
    storage: int | np.ndarray = -1
    tensor: int | np.ndarray = -1


@dataclass(frozen=True, slots=True, eq=False)
class AtomicResult:
    """What one atomic did, after it ran: the one record of that event, as :class:`Access` is of the
    access itself. One record rather than seven arguments, because it crosses three hops
    (interpreter -> guard -> checker -> lock tracker) with each field keeping its name and meaning.

    As the interpreter reports it, ``addresses`` are the tagged pointers in the atomic's shape and
    ``mask`` the lanes that ran (None: all; broadcastable to that shape); the guard hands each checker
    the active lanes only, flat, as real addresses, with ``tensor`` the tensor each pointer came from
    (an index into ``launch.tensors``, -1 unknown; None before the guard). ``op`` is "cas", "xchg",
    "add", ...; ``cmp`` the compare operand of a CAS (None otherwise); ``val`` the operand;
    ``old`` the values the atomic found in memory; ``site`` its source site."""

    op: str
    addresses: np.ndarray
    cmp: np.ndarray | None
    val: np.ndarray
    old: np.ndarray
    site: int
    mask: np.ndarray | None = None
    tensor: np.ndarray | None = None


class AccessListener(Protocol):
    """What a checker hears, in order: launch_begin, then per program program_begin followed
    by its accesses and non-finite values, then launch_end. Accesses are parts of an
    :class:`Access` the guard has judged: real addresses of active lanes only."""

    def launch_begin(self, launch: LaunchInfo) -> None: ...

    def program_begin(self, seq: int, pid: tuple[int, int, int]) -> None: ...

    def access(self, access: Access) -> None:
        """Lanes inside allocations. ``access.storage`` and ``access.tensor`` are one int for all
        lanes or an array, one per lane; ``access.mask`` marks them in the access."""
        ...

    def out_of_bounds(self, access: Access) -> None:
        """Lanes outside the allocation of the tensor their pointer came from (``access.tensor``, one
        int), or, for a pointer of no known origin (-1), outside every live allocation. Masked off
        already."""
        ...

    def outside_view(self, access: Access) -> None:
        """Lanes inside their tensor's allocation (``access.tensor``, one int) but not on the view's
        elements (padding, another row of a slice). Memory-safe, so not masked; usually a wrong
        stride or mask."""
        ...

    def atomic_result(self, result: AtomicResult) -> None:
        """An atomic's active lanes after it ran (heard after its ``access``): real addresses, the
        tensor each pointer came from, the operands and the values it found (:class:`AtomicResult`)."""
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
