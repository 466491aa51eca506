"""Spin-waits on a flag that nothing changes while the program waits: let the wait pass, then judge.

Programs run one at a time in the interpreter, so a program that polls a flag (``while
tl.atomic_add(flag, 0, sem="acquire") == 0``) which no program has set yet can never see it change.
Rather than stopping the launch there, the spin is *let pass*: after ``SPIN_LIMIT`` identical
attempts (:mod:`.locks` counts them) the value the atomic hands back to the kernel (not memory) is
replaced by a value that ends the loop (the CAS's compare value, 1, the value plus one, the grid's
size, the type's maximum, -1: the next one at each further attempt; when none ends the loop the
launch stops as before). The program then makes the accesses it would make after the wait, and the
rest of the launch runs, so the end of the launch can tell two cases apart:

- **no program changes the flag** after the waiter started (every program ran): on a GPU the wait
  never ends. A ``lock`` finding at the spin, and the data the waiter reads after it (or the
  producer writes without a release the waiter observes) is checked as unordered: the race is
  reported too, at its own line, saying the release that should order it never comes;
- **a later program changes it**: on a GPU the wait ends only if that program runs at the same time
  (no guarantee), and whether what the waiter read after the wait is ordered after what that
  program wrote cannot be told from this schedule (the waiter read first here). A ``lock`` finding
  says so (undecided); races involving the waiter are not reported.

The forced value orders nothing (it is no release): the memory model's checks see the value memory
held.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from deuteron.model.access import AtomicResult

# Identical attempts before a known-stuck spin (same line, flag and value) is let pass again: the
# first waiter proved, with the full SPIN_LIMIT, that nothing changes it while a program waits.
KNOWN_LIMIT = 2


@dataclass
class Wait:
    """One wait let pass: by whom, where, on which addresses, the value it kept reading."""

    seq: int
    site: int
    op: str
    addresses: tuple[int, ...]
    tensor: int
    value: int
    setters: list[tuple[int, int]] = field(default_factory=list)  # (program seq, site) changing it later


class Spins:
    """The waits of one launch that were let pass, and who changed their flags afterwards."""

    def __init__(self) -> None:
        self.begin(())

    def begin(self, pids: Sequence[tuple[int, int, int]]) -> None:
        self.pids = pids
        self.waits: list[Wait] = []
        self.watched: dict[int, list[Wait]] = {}  # address -> the waits on it
        self.known: set[tuple[int, bytes, bytes]] = set()  # spins proven stuck: (site, addresses, old)
        self.forced: set[int] = set()  # programs let past a wait
        self._forcing: tuple[tuple[int, bytes, bytes], list[int], int] | None = None

    def program(self, seq: int) -> None:
        self._forcing = None

    def limit(self, key: tuple[int, bytes, bytes], spin_limit: int) -> int:
        return KNOWN_LIMIT if key in self.known else spin_limit

    def force(
        self,
        seq: int,
        key: tuple[int, bytes, bytes],
        result: AtomicResult,
        tensor: int,
        fresh: bool,
        programs: int,
    ) -> int | None:
        """The value to hand back for this attempt of a stuck spin (None: every candidate was tried
        and the loop still spins: the launch must stop). ``fresh``: the first attempt past the limit
        (a new wait, or the same loop polled again later: the candidates start over); ``programs``: the
        grid's size, a likely count to wait for."""
        forcing = self._forcing
        if fresh or forcing is None or forcing[0] != key:
            old = result.old.reshape(-1)
            value = int(old[0])
            candidates = _candidates(result, value, programs)
            forcing = (key, candidates, 0)
            self.known.add(key)
            if seq not in self.forced or not any(w.seq == seq and w.site == result.site for w in self.waits):
                wait = Wait(
                    seq,
                    result.site,
                    result.op,
                    tuple(int(a) for a in result.addresses.tolist()),
                    tensor,
                    value,
                )
                self.waits.append(wait)
                for address in wait.addresses:
                    self.watched.setdefault(address, []).append(wait)
            self.forced.add(seq)
        _, candidates, at = forcing
        if at >= len(candidates):
            return None
        self._forcing = (key, candidates, at + 1)
        return candidates[at]

    def changed(self, seq: int, addresses: np.ndarray, new: np.ndarray, site: int) -> None:
        """Program ``seq`` wrote ``new`` to ``addresses``: a later program changing a waited flag."""
        for address, value in zip(addresses.tolist(), new.reshape(-1).tolist(), strict=False):
            for wait in self.watched.get(int(address), ()):
                if seq > wait.seq and value != wait.value and not wait.setters:
                    wait.setters.append((seq, site))

    def undecided(self, completed: bool) -> set[int]:
        """Programs let past a wait that a later program (or one not run) may have ended."""
        return {w.seq for w in self.waits if w.setters or not completed}

    def hung(self, completed: bool) -> dict[int, Wait]:
        """Programs let past a wait that no program ends: program seq -> its (first) such wait."""
        found: dict[int, Wait] = {}
        if not completed:
            return found
        for wait in self.waits:
            if not wait.setters:
                found.setdefault(wait.seq, wait)
        return found


def _candidates(result: AtomicResult, value: int, programs: int) -> list[int]:
    """Values that may end a spin on ``value``, the likeliest first."""
    dtype = result.old.dtype
    info = np.iinfo(dtype) if dtype.kind in "iu" else None
    found: list[int] = []
    if result.op == "cas" and result.cmp is not None:
        found.append(int(np.asarray(result.cmp).reshape(-1)[0]))
    found += [1, value + 1, programs, programs - 1]
    if info is not None:
        found.append(int(info.max))
        if info.min < 0:
            found.append(-1)
    out: list[int] = []
    for c in found:
        if c != value and c not in out and (info is None or info.min <= c <= info.max):
            out.append(c)
    return out


def after(result: AtomicResult) -> np.ndarray:
    """What an atomic left in memory, lane by lane (its active lanes, flat)."""
    op, old = result.op, result.old.reshape(-1)
    val = np.broadcast_to(result.val, result.old.shape).reshape(-1)
    if op == "cas" and result.cmp is not None:
        cmp = np.broadcast_to(result.cmp, result.old.shape).reshape(-1)
        return np.where(old == cmp, val, old)
    if op in ("add", "fadd"):
        return old + val
    if op == "xchg":
        return val
    if op == "or":
        return old | val
    if op == "and":
        return old & val
    if op == "xor":
        return old ^ val
    if op in ("max", "umax"):
        return np.maximum(old, val)
    if op in ("min", "umin"):
        return np.minimum(old, val)
    return old
