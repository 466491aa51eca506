"""Happens-before between the programs of one launch, as Triton's memory model defines it.

Two accesses of different programs are ordered only through an atomic: a release atomic (``sem=
"release"`` or ``"acq_rel"``, Triton's default) by program A, whose value an acquire atomic
(``"acquire"`` or ``"acq_rel"``) of program B reads, orders A's accesses before that release before
B's accesses after that acquire, and transitively whatever A had itself acquired. The order in
which the interpreter runs programs is never taken as an order: the GPU gives none.

Vector clocks, kept sparse: each program counts its releases (its epoch); a release records, for
the address it writes, the releasing program, its epoch and the clock it had; an acquire that reads
an address another program released joins that clock. A write is stamped with its program's epoch
(in the shadow, only from the first write made after a release: before that every stamp is 0),
and a later access by program B is ordered after it when B's clock for the writer exceeds the stamp.

The acquire must be a wait (a read-only poll, or a CAS that took its value): a value-changing
atomic (a ticket) reads whatever the interpreter's schedule put there first, which a GPU does not
promise, so it orders nothing.

``scope="cta"`` orders only the threads of one program, so a CTA-scope release or acquire orders no
other program. Atomics of more than ``FLAG_LANES`` lanes are reductions, not flags: they are not
followed as synchronisation (their cost would follow every lane).

Each program also remembers why it is *not* ordered, for the race messages: a flag released by
another program that it read with a relaxed atomic or a plain load, or acquired from a write that
was not a release.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from deuteron.model.access import AtomicResult, LaunchInfo

FLAG_LANES = 64
_ACQUIRES = ("acquire", "acquire_release", "acq_rel")
_RELEASES = ("release", "acquire_release", "acq_rel")
_SHOWN_OPS = {"fadd": "add", "umax": "max", "umin": "min"}


def op_shown(op: str) -> str:
    """An atomic's name as the kernel spells it (``fadd`` is ``tl.atomic_add`` on floats)."""
    return _SHOWN_OPS.get(op, op)


@dataclass
class _Published:
    """The last synchronising write of one address: by whom, at which epoch, with what clock."""

    seq: int
    epoch: int
    clock: dict[int, int]
    site: int
    release: bool
    op: str
    readers: set[int] = field(default_factory=set)


class HappensBefore:
    """One launch's synchronisation: each program's clock, and what each flag address published."""

    def __init__(self) -> None:
        self.launch: LaunchInfo | None = None
        self.pids: Sequence[tuple[int, int, int]] = ()
        self.seq = -1
        self.epoch = 0
        self.clock: dict[int, int] = {}
        self.sem = "acq_rel"
        self.scope = "gpu"
        self.published: dict[int, _Published] = {}
        self.hints: dict[int, str] = {}  # program seq -> why it is not ordered after a flag
        self.synced = False  # some program acquired from another's release

    def begin(self, launch: LaunchInfo, pids: Sequence[tuple[int, int, int]]) -> None:
        self.launch, self.pids = launch, pids
        self.seq, self.epoch, self.clock = -1, 0, {}
        self.published, self.hints, self.synced = {}, {}, False

    def program(self, seq: int) -> None:
        self.seq, self.epoch, self.clock = seq, 0, {}

    @property
    def active(self) -> bool:
        """Some program released: writes carry their epoch from now on."""
        return bool(self.published)

    def order(self, sem: str, scope: str) -> None:
        self.sem, self.scope = sem, scope

    # --- atomics and loads -----------------------------------------------------------------------

    def atomic(self, result: AtomicResult) -> None:
        sem, scope = self.sem, self.scope
        self.sem, self.scope = "acq_rel", "gpu"  # an order is told for one atomic only
        if result.addresses.size == 0 or result.addresses.size > FLAG_LANES:
            return
        crosses = scope != "cta"
        acquire = crosses and sem in _ACQUIRES
        release = crosses and sem in _RELEASES
        op = op_shown(result.op)
        writes = self._writes(result)
        waits = self._waits(result, writes)
        addresses = result.addresses.tolist()
        for address, waited in zip(addresses, waits, strict=True):
            found = self.published.get(address)
            if found is None or found.seq == self.seq:
                continue
            found.readers.add(self.seq)
            if acquire and found.release:
                if waited:
                    self._join(found)
            elif not acquire:
                self.hints[self.seq] = (
                    f"the flag's atomic_{op} at line {self._line(result.site)} is "
                    f"{'relaxed' if crosses else 'CTA-scoped'}; use sem='acquire' (scope='gpu')"
                )
            else:
                self.hints[self.seq] = (
                    f"the flag's atomic_{found.op} at line {self._line(found.site)} (program "
                    f"{self.pids[found.seq]}) is relaxed; use sem='release'"
                )
        if release:
            self.epoch += 1
        for address, wrote in zip(addresses, writes, strict=True):
            if not wrote:
                continue
            found = self.published.get(address)
            if release or found is None:
                self.published[address] = _Published(
                    self.seq, self.epoch, dict(self.clock), result.site, release, op
                )
            # a relaxed read-modify-write of a released value continues its release sequence

    def load(self, addresses: np.ndarray, site: int) -> None:
        """A plain (relaxed) load: reading a flag another program released orders nothing."""
        if not self.published or addresses.size > FLAG_LANES:
            return
        for address in np.unique(addresses).tolist():
            found = self.published.get(address)
            if found is not None and found.seq != self.seq and self.seq not in self.hints:
                self.hints[self.seq] = (
                    f"the flag's load at line {self._line(site)} is relaxed; "
                    "use tl.atomic_add(flag, 0, sem='acquire') or another acquire atomic"
                )

    @staticmethod
    def _writes(result: AtomicResult) -> list[bool]:
        """Lanes that wrote memory: a CAS only where it swapped."""
        if result.op == "cas" and result.cmp is not None:
            return (result.old == result.cmp).reshape(-1).tolist()
        return [True] * result.addresses.size

    @staticmethod
    def _waits(result: AtomicResult, writes: list[bool]) -> list[bool]:
        """Lanes whose acquire is a wait: a read-only poll (``atomic_add(flag, 0)``, ``or``/``xor``
        0, ``and`` -1, a CAS that leaves the value) or a CAS that took its value (a lock, a flag
        claimed). A value-changing read-modify-write (a ticket, ``atomic_add(count, 1)``) reads
        whatever the schedule put there first: on a GPU another program may come first, so it
        orders nothing here."""
        op, val = result.op, np.broadcast_to(result.val, result.addresses.shape).reshape(-1)
        if op == "cas":
            return writes
        if op in ("add", "fadd", "or", "xor"):
            return (val == 0).tolist()
        if op == "and":
            return (np.invert(val) == 0).tolist()  # every bit set
        return [False] * val.size

    def _join(self, found: _Published) -> None:
        self.synced = True
        clock = self.clock
        if clock.get(found.seq, 0) < found.epoch:
            clock[found.seq] = found.epoch
        for seq, epoch in found.clock.items():
            if seq != self.seq and clock.get(seq, 0) < epoch:
                clock[seq] = epoch

    # --- ordering queries ------------------------------------------------------------------------

    def ordered(self, others: np.ndarray, stamps: np.ndarray) -> np.ndarray:
        """Which accesses (by programs ``others`` at epochs ``stamps``) happen before the running
        program's next access."""
        if not self.clock:
            return np.zeros(others.shape, dtype=bool)
        unique, inverse = np.unique(others, return_inverse=True)
        seen = np.array([self.clock.get(int(s), 0) for s in unique], dtype=np.int64)
        return seen[inverse.reshape(others.shape)] > stamps

    def missing(self, later: int, earlier: int) -> str:
        """Why program ``later``'s access is not ordered after program ``earlier``'s (for a message),
        or "" where no program synchronised through a flag (the plain message then says enough)."""
        hint = self.hints.get(later) or self.hints.get(earlier)
        if hint:
            return hint
        if not self.synced and not self.published:
            return ""
        return "no acquire in the later program reads a value the other released after its access"

    def _line(self, site: int) -> str:
        launch = self.launch
        found = launch.sites.get(site) if launch is not None else None
        return str(found.line) if found is not None else "?"
