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
from deuteron.check.shadow_memory import NO_READER, Shadow
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
        # store/store races of a program let past a wait (see .spins): (seq, shadow, cells, others,
        # site, the other store's site), judged at the end of the launch
        self.deferred: list[tuple[int, Shadow, np.ndarray, np.ndarray, int, int]] = []
        # allocation -> program -> its epoch at its last read there, once some program released
        self.read_epochs: dict[int, dict[int, int]] = {}
        self.seq = -1
        self.pids: Sequence[tuple[int, int, int]] = ()

    def begin(self, launch: LaunchInfo, pids: Sequence[tuple[int, int, int]]) -> None:
        self.launch = launch
        self.deferred = []
        self.read_epochs = {}
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
                if order.active:  # the epoch of this program's last read here (see _reads_ordered)
                    self.read_epochs.setdefault(storage, {})[self.seq] = order.epoch
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
                    cells, others = idx[clash], before[clash]
                    forced = locks.spins.forced
                    if forced and (self.seq in forced or bool(np.isin(others, list(forced)).any())):
                        # a program let past a wait: reported at the end, unless its order is undecided
                        other_write = shadow.write_site(int(cells[0]))
                        self.deferred.append((self.seq, shadow, cells, others, site, other_write))
                    else:
                        race_check.store_store(
                            self.findings,
                            self.launch,
                            self.pids,
                            self.seq,
                            shadow,
                            cells,
                            others,
                            site,
                            order.missing,
                        )
        if self.races and order.clock and (shadow.reads is not None or shadow.pending or shadow.runs):
            self._reads_ordered(shadow, idx, storage)
        shadow.commit(pos, self.seq, site)
        if order.epoch or shadow.stamps is not None:  # no stamps yet: every write so far at epoch 0
            shadow.stamp(idx, order.epoch)
        if shadow.guards is not None:
            shadow.guard(idx, locks.current)

    def _reads_ordered(self, shadow: Shadow, idx: np.ndarray, storage: int) -> None:
        """A store by a program that acquired: cells whose one other reader read them before a
        release this program acquired (buffer reuse: a program done with a buffer says so, the next
        one overwrites it) forget that read, so it is not taken for a race with this write. A read
        is judged by the epoch of its program's last read of the allocation (conservative: a later
        read keeps it), and only where one other program read the cell."""
        if shadow.pending or shadow.runs:
            shadow.fold_reads(only_written=True)
        reads = shadow.reads
        epochs = self.read_epochs.get(storage)
        if reads is None:
            return
        rmin, rmax = reads.get("rmin", idx), reads.get("rmax", idx)
        single = (rmin == rmax) & (rmax >= 0) & (rmin != self.seq)
        if not single.any():
            return
        clock = self.order.clock
        clear = np.zeros(idx.shape, dtype=bool)
        for reader in np.unique(rmin[single]).tolist():
            read_epoch = epochs.get(reader, 0) if epochs is not None else 0
            if clock.get(int(reader), 0) > read_epoch:
                clear |= single & (rmin == reader)
        if clear.any():
            pos = reads.locate(idx[clear])
            reads.pools["rmin"][pos] = NO_READER
            reads.pools["rmax"][pos] = -1
            reads.pools["rsite"][pos] = -1

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

    def _missing(self, later: int, earlier: int) -> str:
        """Why two programs' accesses are not ordered: a wait that never ends first (:mod:`.spins`)."""
        if self.locks.spins.forced:
            why = self.locks.missing(later) or self.locks.missing(earlier)
            if why:
                return why
        return self.order.missing(later, earlier)

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
        self.locks.finish(completed)
        every = len(self.pids) == launch.programs
        undecided = frozenset(self.locks.spins.undecided(completed and every))
        missing = self._missing
        if self.races:
            for seq, shadow, cells, others, site, other_write in self.deferred:
                if seq not in undecided and not np.isin(others, list(undecided)).any():
                    race_check.store_store(
                        self.findings,
                        launch,
                        self.pids,
                        seq,
                        shadow,
                        cells,
                        others,
                        site,
                        missing,
                        other_write,
                    )
        self.deferred = []
        for shadow in self.shadows:
            if shadow.writes is not None and self.races:
                shadow.finish_reads()
                race_check.load_store(self.findings, launch, self.pids, shadow, missing, undecided)
            if self.coverage and completed and shadow.written():
                coverage_check.unwritten(self.findings, launch, shadow)
        self.shadows = []
        self.launch = None


__all__ = ["MemoryChecks"]
