"""The memory checks of one launch at a time: out-of-bounds, races between programs and store
coverage, fed from one stream of accesses through one shadow per allocation (see :mod:`.shadow`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..model.access import ATOMIC, LOAD, LaunchInfo
from . import bounds
from . import coverage as coverage_check
from . import races as race_check
from .findings import Findings
from .shadow import Shadow


class MemoryChecks:
    """Consumes one launch's accesses at a time; raises findings into ``findings``."""

    def __init__(self, findings: Findings, races: bool = True, coverage: bool = True) -> None:
        self.findings = findings
        self.races = races
        self.coverage = coverage
        self.launch: LaunchInfo | None = None
        self.shadows: list[Shadow] = []
        self.seq = -1
        self.pids: Sequence[tuple[int, int, int]] = ()

    def begin(self, launch: LaunchInfo, pids: Sequence[tuple[int, int, int]]) -> None:
        self.launch = launch
        self.shadows = [Shadow(area) for area in launch.storages]
        self.pids = pids
        self.seq = -1

    def program(self, seq: int) -> None:
        self.seq = seq

    def access(self, kind: int, addresses: np.ndarray, storage: int, element_size: int, site: int) -> None:
        if not (self.races or self.coverage):
            return
        shadow = self.shadows[storage]
        span = max(1, element_size // shadow.area.granule)
        if kind == LOAD:
            if self.races:
                shadow.read(addresses, self.seq, site, span)
            return
        if shadow.first_site < 0:
            shadow.first_site = site
        idx = shadow.index(addresses, span)
        if kind == ATOMIC:  # atomics are never races; they do count as writes for coverage
            shadow.atomic_write(idx)
            return
        if self.races and shadow.writes is not None:
            before = shadow.writers(idx)
            clash = (before >= 0) & (before != self.seq)
            if clash.any():
                assert self.launch is not None
                race_check.store_store(
                    self.findings, self.launch, self.pids, self.seq, shadow, idx[clash], before[clash], site
                )
        shadow.write(idx, self.seq, site)

    def out_of_bounds(
        self, kind: int, addresses: np.ndarray, lanes: np.ndarray, near: int, element_size: int, site: int
    ) -> None:
        launch = self.launch
        assert launch is not None
        program = self.pids[self.seq] if 0 <= self.seq < len(self.pids) else None
        bounds.outside(self.findings, launch, program, self.seq, kind, addresses, lanes, near, site)

    def finish(self, completed: bool = True) -> None:
        """End of launch: read/write races, and coverage unless the launch stopped part way."""
        launch = self.launch
        if launch is None:
            return
        for shadow in self.shadows:
            if shadow.writes is not None and self.races:
                shadow.finish_reads()
                race_check.load_store(self.findings, launch, self.pids, shadow)
            if self.coverage and completed and shadow.written():
                coverage_check.unwritten(self.findings, launch, shadow)
        self.shadows = []
        self.launch = None


__all__ = ["MemoryChecks"]
