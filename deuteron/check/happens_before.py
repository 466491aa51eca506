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

The acquire must be a wait (a read-only poll, or a CAS that took its value) whose value decides what
the program does next (a loop's or a branch's test, a mask: :mod:`.branches` reads the source); a
poll whose value is thrown away orders nothing. A value-changing atomic (a ticket) reads whatever
the interpreter's schedule put there first, which a GPU does not promise, so it orders nothing,
except the ticket that completes the count (every other program of the launch changed the address
before it) when its value decides a branch: the last-block pattern. Its value handed where the
source cannot be followed makes that program's order *undecided* (``undecided``, and a race it
would hide is a warning). Every atomic is a read-modify-write: a release carries the clocks of the
release sequences it continues, so an acquire of a count is ordered after every release that
counted it.

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

from deuteron.check.branches import Use, atomic_use
from deuteron.model.access import AtomicResult, LaunchInfo

FLAG_LANES = 64
UNDECIDED = "undecided: "  # starts a missing order that cannot be told (the race is then a warning)
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
        self.undecided: dict[int, str] = {}  # program seq -> why its order cannot be told
        self.counted: dict[int, set[int]] = {}  # address -> programs that changed it with an atomic
        self.uses: dict[int, Use] = {}  # site -> how its atomic's value is used (.branches)
        self.polled: set[tuple[int, int]] = set()  # (program, flag) it read a release of with a load
        self.unions: dict[int, dict[int, int]] = {}  # address -> the releases its value carries
        self.synced = False  # some program acquired from another's release

    def begin(self, launch: LaunchInfo, pids: Sequence[tuple[int, int, int]]) -> None:
        self.launch, self.pids = launch, pids
        self.seq, self.epoch, self.clock = -1, 0, {}
        self.published, self.hints, self.synced = {}, {}, False
        self.undecided, self.counted, self.uses, self.polled, self.unions = {}, {}, {}, set(), {}

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
        changes = self._changes(result)
        for address, waited, changed in zip(addresses, waits, changes, strict=True):
            found = self.published.get(address)
            counted = self.counted.get(address)
            others = len(counted) - (self.seq in counted) if counted is not None else 0
            if changed:
                self.counted.setdefault(address, set()).add(self.seq)
            if found is None or found.seq == self.seq:
                continue
            found.readers.add(self.seq)
            if acquire and found.release:
                polled = (self.seq, address) in self.polled  # spun on a load first: a fence
                if waited and (result.op == "cas" or polled or self._use(result.site) != Use.DISCARDED):
                    self._join(found)
                elif waited:
                    self.hints.setdefault(
                        self.seq,
                        f"the flag's atomic_{op} at line {self._line(result.site)} is one poll whose value "
                        "nothing depends on: on a GPU it may read the flag before the release, and the "
                        "program goes on; wait in a loop (while tl.atomic_add(flag, 0, sem='acquire') == 0)",
                    )
                elif changed:
                    self._ticket(found, others, op, result.site)
            elif not acquire:
                wanted = "acq_rel" if any(changes) else "acquire"
                self.hints[self.seq] = (
                    f"the flag's atomic_{op} at line {self._line(result.site)} is "
                    f"{'relaxed' if crosses else 'CTA-scoped'}; use sem='{wanted}' (scope='gpu')"
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
            if release:
                # every atomic is a read-modify-write: it continues the release sequences it read
                # from, so an acquire of its value is ordered after those releases too (a semaphore
                # counted up by several programs orders all of them before the one that waits). One
                # union per address, grown in place: an acquire reads the latest value, so the union
                # as it stands then is what it joins
                union = self.unions.setdefault(address, {})
                for seq, epoch in self.clock.items():
                    if union.get(seq, 0) < epoch:
                        union[seq] = epoch
                if union.get(self.seq, 0) < self.epoch:
                    union[self.seq] = self.epoch
                self.published[address] = _Published(self.seq, self.epoch, union, result.site, True, op)
            elif found is None:
                self.published[address] = _Published(self.seq, self.epoch, {}, result.site, False, op)
            # a relaxed read-modify-write of a released value continues its release sequence

    def load(self, addresses: np.ndarray, site: int) -> None:
        """A plain (relaxed) load: reading a flag another program released orders nothing."""
        if not self.published or addresses.size > FLAG_LANES:
            return
        for address in np.unique(addresses).tolist():
            found = self.published.get(address)
            if found is not None and found.seq != self.seq:
                self.polled.add((self.seq, address))
            if found is not None and found.seq != self.seq and self.seq not in self.hints:
                self.hints[self.seq] = (
                    f"the flag's load at line {self._line(site)} is relaxed; "
                    "use tl.atomic_add(flag, 0, sem='acquire') or another acquire atomic"
                )

    def _ticket(self, found: _Published, others: int, op: str, site: int) -> None:
        """A value-changing acquire (a ticket): which programs came before it is the schedule's, so it
        orders nothing, unless every other program of the launch had already changed the address
        (the count is complete: on any schedule the program that completes it is ordered after all
        of them) and the value decides what the program does (the last-block pattern)."""
        launch = self.launch
        line = self._line(site)
        complete = launch is not None and others == launch.programs - 1
        use = self._use(site) if complete else Use.DISCARDED
        if use == Use.DECIDES:
            self._join(found)
            return
        if use == Use.UNKNOWN:
            self.undecided[self.seq] = (
                f"the atomic_{op} at line {line} completes the count (every other program changed it "
                "first), which orders this program after all of them if what it does next depends on the "
                "value; its value goes where the check cannot follow (another function's call), so "
                "whether the accesses after it wait for the count cannot be told"
            )
            return
        self.hints.setdefault(
            self.seq,
            f"the atomic_{op} at line {line} is a ticket (it changes the value it reads): which programs "
            "came before it is the schedule's, so it orders nothing; branch on its value (the last "
            "program, whose ticket completes the count, may read every program's results)",
        )

    def _use(self, site: int) -> Use:
        use = self.uses.get(site)
        if use is None:
            launch = self.launch
            found = launch.sites.get(site) if launch is not None else None
            use = self.uses[site] = atomic_use(found.file, found.line) if found is not None else Use.UNKNOWN
        return use

    @staticmethod
    def _changes(result: AtomicResult) -> list[bool]:
        """Lanes whose atomic changed the value (a ticket, a count): not a read-only poll."""
        op, val = result.op, np.broadcast_to(result.val, result.addresses.shape).reshape(-1)
        if op == "cas":
            return [False] * val.size
        if op in ("add", "fadd", "or", "xor"):
            return (val != 0).tolist()
        if op == "and":
            return (np.invert(val) != 0).tolist()
        return [True] * val.size

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
        undecided = self.undecided.get(later) or self.undecided.get(earlier)
        if undecided:
            return f"{UNDECIDED}{undecided}"
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
