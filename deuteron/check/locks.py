"""Spin locks built from atomics, so the accesses they guard are not reported as races.

A lock here is an integer cell that a program takes with a successful ``atomic_cas(lock, 0, v)``
(v != 0) and gives back with ``atomic_xchg(lock, 0)``, a successful ``atomic_cas(lock, v, 0)`` or a
plain store of 0 (tutorial 05's layer-norm backward, split-K reductions). While a program holds a
lock, its accesses carry that lock's id (the innermost lock held); the race checks leave out cells
every access of which was made under one and the same lock (Eraser's lockset rule, one lock per
access), so an access made without the lock is still a race.

The interpreter runs programs one at a time, so a spin loop whose atomic keeps answering the same
thing can never end: a program waits for a lock that a finished program never released, retakes a
lock it holds, or waits on a flag that only a later (on a GPU: concurrent) program would set. After
``SPIN_LIMIT`` identical attempts a wait on a lock held by a program is a ``lock`` error and the
launch stops (the plain interpreter would hang); a wait on a flag no lock holder owns is let pass
(:mod:`.spins`) and judged at the end of the launch (a hang, or undecided), unless no value ends
it (then the launch stops too). A lock that some program released but another still holds at
the end of the launch is a ``lock`` error too: the next program to take it would hang.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from deuteron.check.findings import Findings
from deuteron.check.shadow_memory import tensor_near
from deuteron.check.spins import Spins, after
from deuteron.model.access import AtomicResult, LaunchInfo, TensorArg, describe_index, element_index
from deuteron.triton.interpreter.sanitizer_protocol import Abort

# Identical attempts of one atomic before a spin counts as endless. Programs run one at a time, so
# two identical failing attempts already prove it; the margin is for loops that retry on purpose.
SPIN_LIMIT = 2000
NO_LOCK = -1


class LockWaitsForever(Abort):
    """A program spins on an atomic that nothing will change while it waits: the launch stops."""


@dataclass
class _Held:
    """Who holds a lock: the lock's id, the holding program, and where it was taken."""

    lock: int  # the lock's id in this launch
    seq: int  # the program holding it
    site: int  # where it was taken


class Locks:
    """The locks of one launch: who holds which, and the id the running program's accesses carry."""

    def __init__(self, findings: Findings, report: bool = True) -> None:
        self.findings = findings
        self.report = report
        self.spins = Spins()
        self._reset(None, ())

    def begin(self, launch: LaunchInfo, pids: Sequence[tuple[int, int, int]]) -> None:
        self._reset(launch, pids)

    def _reset(self, launch: LaunchInfo | None, pids: Sequence[tuple[int, int, int]]) -> None:
        self.launch = launch
        self.pids = pids
        self.seq = -1
        self.ids: dict[int, int] = {}  # lock address -> id
        self.tensors: dict[int, int] = {}  # lock address -> the tensor its pointer came from
        self.held: dict[int, _Held] = {}  # lock address -> holder (the running or a finished program)
        self.mine: list[int] = []  # addresses the running program holds, in the order it took them
        self.released: set[int] = set()  # addresses released at least once (proven to be locks)
        self.current = NO_LOCK
        self.active = False  # some program took a lock this launch
        self._spin: tuple[int, bytes, bytes] | None = None
        self._spins = 0
        self.forced: int | None = None  # the value the last atomic hands back instead (a wait let pass)
        self.spins.begin(pids)

    def program(self, seq: int) -> None:
        self.seq = seq
        self.mine = []
        self.current = NO_LOCK
        self._spin = None
        self._spins = 0
        self.spins.program(seq)

    # --- what the atomics did ----------------------------------------------------------------------

    def atomic(self, result: AtomicResult) -> None:
        """One atomic's active lanes: real addresses, the tensor each pointer came from, its operands
        and the values it found (``old``)."""
        addresses, cmp, val, old = result.addresses, result.cmp, result.val, result.old
        self.forced = None
        tensors = result.tensor if result.tensor is not None else np.full(addresses.size, -1, np.int64)
        if self.spins.watched and addresses.size:
            self.spins.changed(self.seq, addresses, after(result), result.site)
        if old.dtype.kind not in "iub" or addresses.size == 0:
            self._spin = None
            return
        if result.op == "cas" and cmp is not None:
            won = old == cmp
            for i in np.flatnonzero(won & (cmp == 0) & (val != 0)).tolist():
                self._take(int(addresses[i]), int(tensors[i]), result.site)
            for i in np.flatnonzero(won & (cmp != 0) & (val == 0)).tolist():
                self._give(int(addresses[i]))
        elif result.op == "xchg":
            for i in np.flatnonzero(val == 0).tolist():
                self._give(int(addresses[i]))
        self._count_spin(result, tensors)

    def stored(self, addresses: np.ndarray, values: np.ndarray, site: int = -1) -> None:
        """A plain store: storing 0 to a held lock releases it; a store to a waited flag may end a
        wait that was let pass."""
        if self.spins.watched:
            self.spins.changed(self.seq, addresses, values, site)
        if not self.held:
            return
        for i in np.flatnonzero(values == 0).tolist():
            address = int(addresses[i])
            if address in self.held:
                self._give(address)

    def _take(self, address: int, tensor: int, site: int) -> None:
        lock = self.ids.setdefault(address, len(self.ids))
        self.tensors.setdefault(address, tensor)
        self.held[address] = _Held(lock, self.seq, site)
        self.mine.append(address)
        self.current = lock
        self.active = True

    def _give(self, address: int) -> None:
        if self.held.pop(address, None) is None:
            return
        self.released.add(address)
        if address in self.mine:
            self.mine.remove(address)
        self.current = self.held[self.mine[-1]].lock if self.mine else NO_LOCK

    def _count_spin(self, result: AtomicResult, tensors: np.ndarray) -> None:
        """Identical attempts of one atomic in a row: at ``SPIN_LIMIT``, the program waits forever."""
        addresses, cmp, old, site = result.addresses, result.cmp, result.old, result.site
        if result.op == "cas" and cmp is not None and bool((old == cmp).any()):
            self._spin = None  # a CAS that succeeded somewhere made progress
            return
        key = (site, addresses.tobytes(), old.tobytes())
        if key != self._spin:
            self._spin, self._spins = key, 1
            return
        self._spins += 1
        limit = self.spins.limit(key, SPIN_LIMIT)
        if self._spins >= limit:
            address, tensor, value = int(addresses[0]), int(tensors[0]), int(old.reshape(-1)[0])
            if self.held.get(address) is None:  # a flag, not a lock: let the wait pass (see .spins)
                programs = self.launch.programs if self.launch is not None else 1
                self.forced = self.spins.force(self.seq, key, result, tensor, self._spins == limit, programs)
                if self.forced is not None:
                    return
            self._waits_forever(result.op, address, tensor, value, site)

    # --- findings --------------------------------------------------------------------------------

    def _waits_forever(self, op: str, address: int, tensor: int, value: int, site: int) -> None:
        launch = self.launch
        assert launch is not None
        me = self.pids[self.seq] if 0 <= self.seq < len(self.pids) else None
        cell = self._describe(address, tensor)
        holder = self.held.get(address)
        tries = f"after {SPIN_LIMIT} identical atomic_{op} attempts"
        if holder is not None and holder.seq == self.seq:
            why = (
                f"program {me} waits for the lock at {cell}, which it took itself at line "
                f"{self._line(holder.site)}: a spin lock is not re-entrant; on a GPU this hangs"
            )
        elif holder is not None:
            why = (
                f"program {me} waits for the lock at {cell}, which program {self.pids[holder.seq]} "
                f"took at line {self._line(holder.site)} and never released: on a GPU this hangs"
            )
        else:
            left = launch.programs - self.seq - 1
            why = (
                f"program {me} spins on {cell}, which holds {value} and which no program changes while "
                "it waits. Programs run one at a time here, so this waits on a program that has not "
                "started; on a GPU it works only if that program runs at the same time (no guarantee). "
                f"Undecided: whether one of the {left} program(s) not run sets it, and whether what this "
                "program reads after the wait is ordered after what that program wrote, cannot be "
                "told from one schedule"
            )
        if self.report:
            self.findings.add(
                "lock",
                launch,
                site,
                f"{why} ({tries})",
                seq=self.seq,
                program=me,
                tensor=self._tensor(address, tensor).name,
                details={"address": cell, "value": value, "attempts": SPIN_LIMIT},
            )
        raise LockWaitsForever(f"deuteron check: {why}")

    def finish(self, completed: bool = True) -> None:
        """End of launch: a lock that was released somewhere but is still held is never freed; a
        wait let pass is a hang (no program changed its flag) or undecided (a later one did)."""
        launch = self.launch
        if launch is None or not self.report:
            return
        self._waits(completed)
        for address, holder in self.held.items():
            if address not in self.released:
                continue  # taken once and kept: a "done" flag, not a lock
            cell = self._describe(address, self.tensors.get(address, -1))
            program = self.pids[holder.seq]
            self.findings.add(
                "lock",
                launch,
                holder.site,
                f"program {program} takes the lock at {cell} and never releases it (other programs "
                "release it): the next program to take it would wait forever",
                seq=holder.seq,
                program=program,
                tensor=self._tensor(address, self.tensors.get(address, -1)).name,
                details={"address": cell},
            )

    def _waits(self, completed: bool) -> None:
        """The waits let pass (:mod:`.spins`), one ``lock`` finding per wait's line."""
        launch = self.launch
        assert launch is not None
        for wait in self.spins.waits:
            me = self.pids[wait.seq]
            address = wait.addresses[0]
            cell = self._describe(address, wait.tensor)
            spin = f"program {me} spins at line {self._line(wait.site)} on {cell}, which holds {wait.value}"
            if wait.setters:
                setter, site = wait.setters[0]
                why = (
                    f"{spin} and which no program changes while it waits; program {self.pids[setter]}, "
                    f"which runs later here, changes it at line {self._line(site)}. On a GPU the wait "
                    "ends only if that program runs at the same time (no guarantee). Undecided: whether "
                    "what this program reads after the wait is ordered after what that program wrote "
                    "cannot be told from one schedule (here the wait was let pass and it read first); "
                    "races involving this program are not reported"
                )
            elif not completed:
                why = (
                    f"{spin} and which no program changes while it waits. Undecided: not every program "
                    "of the launch ran, so whether one of them sets it cannot be told; races involving "
                    "this program are not reported"
                )
            else:
                why = (
                    f"{spin} and which no program of the launch ever changes (all {len(self.pids)} "
                    "programs ran): on a GPU this waits forever. The check let the wait pass to see "
                    "what follows: only releases its polls read order what the program accesses after it"
                )
            self.findings.add(
                "lock",
                launch,
                wait.site,
                f"{why} (after {SPIN_LIMIT} identical atomic_{wait.op} attempts)",
                seq=wait.seq,
                program=me,
                tensor=self._tensor(address, wait.tensor).name,
                details={
                    "address": cell,
                    "value": wait.value,
                    "attempts": SPIN_LIMIT,
                    "verdict": "undecided" if wait.setters or not completed else "hang",
                },
            )

    def missing(self, waiter: int) -> str:
        """Why program ``waiter``'s accesses after a wait that never ends are ordered by nothing ("" if
        it was let past no such wait)."""
        wait = self.spins.hung(True).get(waiter)
        if wait is None:
            return ""
        cell = self._describe(wait.addresses[0], wait.tensor)
        return (
            f"program {self.pids[waiter]} waits at line {self._line(wait.site)} for {cell} to change from "
            f"{wait.value}, and no program sets it, so no release orders what it accesses after the wait "
            "(on a GPU it waits forever); set the flag it waits on with a release atomic after the write"
        )

    def _line(self, site: int) -> str:
        assert self.launch is not None
        found = self.launch.sites.get(site)
        return str(found.line) if found is not None else "?"

    def _tensor(self, address: int, tensor: int) -> TensorArg:
        launch = self.launch
        assert launch is not None
        if 0 <= tensor < len(launch.tensors):
            return launch.tensors[tensor]
        for area in launch.storages:
            if area.start <= address < area.start + area.nbytes:
                return tensor_near(launch, area, address)
        return launch.tensors[0]

    def _describe(self, address: int, tensor: int) -> str:
        t = self._tensor(address, tensor)
        offset = np.array([(address - t.data_ptr) // t.element_size], dtype=np.int64)
        found = element_index(t, offset)
        if found is None:
            return f"{t.name} (element offset {int(offset[0])})"
        return describe_index(t, found[0][:, 0])
