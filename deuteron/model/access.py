"""A kernel launch as the sanitizer sees it: its tensors and their allocations, the source sites of
its accesses, and the stream of events a checker hears (every program's loads, stores, atomics and
non-finite values). Produced from Triton's interpreter by ``deuteron.triton.interpreter`` and
``deuteron.check.guard``; consumed by the checks and the access recorder.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

LOAD, STORE, ATOMIC = 0, 1, 2
ACCESS_NAMES = ("load", "store", "atomic")


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
    """A tensor argument of a launch as the programs see it (the host copy, on a GPU machine)."""

    name: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str
    element_size: int
    data_ptr: int
    storage: int  # index into LaunchInfo.storages


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
    ) -> None: ...

    def out_of_bounds(
        self, kind: int, addresses: np.ndarray, lanes: np.ndarray, near: int, element_size: int, site: int
    ) -> None: ...

    def nonfinite(self, op: str, inputs: tuple[np.ndarray, ...], output: np.ndarray, site: int) -> None: ...

    def assert_failed(self, message: str, failing: np.ndarray, site: int) -> None: ...

    def launch_end(self, launch: LaunchInfo, error: BaseException | None) -> None: ...
