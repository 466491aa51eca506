"""The memory checks of one launch at a time: out-of-bounds, races between programs and store
coverage, fed from one stream of accesses through one shadow per allocation (see :mod:`.shadow_memory`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from deuteron.check import bounds
from deuteron.check import coverage as coverage_check
from deuteron.check import races as race_check
from deuteron.check.atomic_scopes import AtomicScopes
from deuteron.check.findings import Findings
from deuteron.check.happens_before import HappensBefore
from deuteron.check.locks import Locks
from deuteron.check.shadow_memory import Shadow
from deuteron.model.access import ATOMIC, LOAD, Access, LaunchInfo


class MemoryChecks:
    """Consumes one launch's accesses at a time; raises findings into ``findings``. The three
    memory checks live together because they read one shadow per allocation, filled once."""

    def __init__(
        self, findings: Findings, races: bool = True, coverage: bool = True, locks: bool = True
    ) -> None:
        self.findings = findings
        self.races = races
        self.coverage = coverage
        self.locks = Locks(findings, report=locks)
        self.scopes = AtomicScopes(findings, report=races)
        self.order = HappensBefore()
        self.launch: LaunchInfo | None = None
        self.shadows: list[Shadow] = []
        self.seq = -1
        self.pids: Sequence[tuple[int, int, int]] = ()

    def begin(self, launch: LaunchInfo, pids: Sequence[tuple[int, int, int]]) -> None:
        self.launch = launch
        self.shadows = [Shadow(area) for area in launch.storages]
        self.pids = pids
        self.seq = -1
        self.locks.begin(launch, pids)
        self.scopes.begin(launch, pids)
        self.order.begin(launch, pids)

    def program(self, seq: int) -> None:
        self.seq = seq
        self.locks.program(seq)
        self.scopes.program(seq)
        self.order.program(seq)

    def access(self, access: Access) -> None:
        """Lanes of one allocation (``access.storage``, one int): reads buffered for the race
        check, writes checked against earlier writers of this launch and recorded for coverage."""
        if not (self.races or self.coverage):
            return
        kind, addresses, site = access.kind, access.addresses, access.site
        storage = int(access.storage)
        if storage >= len(self.shadows):  # an allocation reached through a pointer array, mid-launch
            assert self.launch is not None
            self.shadows.extend(Shadow(area) for area in self.launch.storages[len(self.shadows) :])
        shadow = self.shadows[storage]
        span = max(1, access.element_size // shadow.area.granule)
        locks = self.locks
        if locks.active and shadow.guards is None and self.races:
            shadow.start_guards()  # from now on each cell remembers the lock its accesses held
        order = self.order
        if kind == LOAD:
            if self.races:
                if order.published:
                    order.load(addresses, site)
                if order.clock and shadow.writes is not None:
                    addresses = self._unordered(shadow, addresses, span)
                    if addresses.size == 0:
                        return
                shadow.read(addresses, self.seq, site, span, locks.current)
            return
        if shadow.first_site < 0:
            shadow.first_site = site
        idx = shadow.index(addresses, span)
        if kind == ATOMIC:  # GPU-scope atomics never race (CTA-scope: .atomic_scopes); they count as writes
            shadow.atomic_write(idx)
            return
        pos = shadow.locate_writes(idx)
        if self.races:
            before = shadow.writer_at(pos)
            if int(before.max()) >= 0:  # written before in this launch: by whom?
                clash = (before >= 0) & (before != self.seq)
                if shadow.guards is not None and locks.current >= 0 and clash.any():
                    clash &= shadow.guarded(idx) != locks.current  # both stores under one lock: ordered
                if order.clock and clash.any():  # an acquire ordered this program after the writer
                    clash[clash] = ~order.ordered(before[clash], shadow.stamp_at(idx[clash]))
                if clash.any():
                    assert self.launch is not None
                    race_check.store_store(
                        self.findings,
                        self.launch,
                        self.pids,
                        self.seq,
                        shadow,
                        idx[clash],
                        before[clash],
                        site,
                        order.missing,
                    )
        shadow.commit(pos, self.seq, site)
        if order.epoch or shadow.stamps is not None:  # no stamps yet: every write so far at epoch 0
            shadow.stamp(idx, order.epoch)
        if shadow.guards is not None:
            shadow.guard(idx, locks.current)

    def _unordered(self, shadow: Shadow, addresses: np.ndarray, span: int) -> np.ndarray:
        """The lanes of a read that no acquire orders after their cell's last write by another
        program: only those can race with it (an ordered read is not kept for later writes either)."""
        idx = shadow.index(addresses, span)[::span] if span > 1 else shadow.index(addresses)
        writer = shadow.writers(idx)
        other = (writer >= 0) & (writer != self.seq)
        if not other.any():
            return addresses
        ordered = np.zeros(idx.shape, dtype=bool)
        ordered[other] = self.order.ordered(writer[other], shadow.stamp_at(idx[other]))
        return addresses[~ordered] if ordered.any() else addresses

    def out_of_bounds(self, access: Access) -> None:
        launch = self.launch
        assert launch is not None
        bounds.outside(self.findings, launch, self._program(), self.seq, access)

    def outside_view(self, access: Access) -> None:
        launch = self.launch
        assert launch is not None
        bounds.off_view(self.findings, launch, self._program(), self.seq, access)

    def _program(self) -> tuple[int, int, int] | None:
        return self.pids[self.seq] if 0 <= self.seq < len(self.pids) else None

    def finish(self, completed: bool = True) -> None:
        """End of launch: read/write races, and coverage unless the launch stopped part way."""
        launch = self.launch
        if launch is None:
            return
        self.locks.finish()
        for shadow in self.shadows:
            if shadow.writes is not None and self.races:
                shadow.finish_reads()
                race_check.load_store(self.findings, launch, self.pids, shadow, self.order.missing)
            if self.coverage and completed and shadow.written():
                coverage_check.unwritten(self.findings, launch, shadow)
        self.shadows = []
        self.launch = None


__all__ = ["MemoryChecks"]
