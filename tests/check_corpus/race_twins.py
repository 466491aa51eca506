"""Racy and race-free twins of the synchronisation patterns of real kernels, each written here from
scratch: one kernel per pattern, a ``constexpr`` switch makes the racy twin. The racy twin marks its
racing line with ``# BUG: race`` (read back by :func:`tests.check_corpus.patterns.bug_line`); the
race-free twin must give no finding at all.

- a flag published with release and polled with acquire (the racy twin publishes relaxed);
- a flag polled with a plain load (relaxed poll) or a relaxed atomic (release without acquire);
- a role that skips the wait (one consumer reads without polling);
- atomics with ``scope="cta"`` from several programs to one address;
- stores masked off in all programs but one (the racy twin: every program stores);
- a spin lock (the racy twin reads the guarded sum after giving the lock back);
- an atomic reduction (the racy twin: a load and a store);
- split-K with atomics (the racy twin stores its partial tile);
- a persistent kernel taking tiles from a work queue (the racy twin takes them with a load and a store);
- the last block: every program stores a partial and takes a ticket with acq_rel, the one whose
  ticket completes the count reads every partial (the racy twins: a relaxed counter, and the
  reader chosen by its id instead of its ticket);
- a buffer handed over by a flag: one program reads it and releases, the next acquires and
  overwrites it (the racy twin releases relaxed);
- one acquire poll whose value nothing depends on (the race-free twins wait in a loop, or spin on a
  plain load and then make the one acquire, which reads the release the loop saw).

``MANY`` holds twins whose racy half gives more than one finding, each at its own ``# BUG:`` line:
a spin on a flag the producer never sets (a ``lock`` hang and the race it was to prevent), a
semaphore waiting for one count more than there are producers (the hang alone: the acquire read
every release), and a scratch buffer reused across ``tl.debug_barrier`` phases (race-free in one
program; the racy twin shares it between programs). Beside them, two undecided cases: a consumer
waiting on a later program (``late_producer``) and a last block whose ticket is handed to a helper
(``last_block_helper``: a race of severity warning, said to be undecided).

Programs that publish run first in the interpreter (program 0), so every consumer finds its flag set:
what is judged is the order the memory model gives, not whether the interpreter hangs.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import triton
import triton.language as tl

BLOCK = 16
PROGRAMS = 4

# --- a flag: data, then a release; consumers acquire, then read ------------------------------------


@triton.jit
def flag_kernel(
    data, flag, out, PUBLISH: tl.constexpr, POLL: tl.constexpr, SKIP: tl.constexpr, BLOCK: tl.constexpr
):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if pid == 0:
        tl.store(data + offs, offs.to(tl.float32))  # BUG: race
        tl.atomic_xchg(flag, 1, sem=PUBLISH)
    else:
        if pid != SKIP:
            if POLL == 0:
                while tl.atomic_add(flag, 0, sem="acquire") == 0:
                    pass
            elif POLL == 1:
                while tl.atomic_add(flag, 0, sem="relaxed") == 0:
                    pass
            elif POLL == 2:
                while tl.load(flag, volatile=True) == 0:
                    pass
            else:
                while tl.atomic_cas(flag, 1, 1, sem="acquire") == 0:
                    pass
        x = tl.load(data + offs)
        tl.store(out + (pid - 1) * BLOCK + offs, x + 1.0)


def _flag(publish: str, poll: int, skip: int = -1) -> None:
    data, flag = torch.zeros(BLOCK), torch.zeros(1, dtype=torch.int32)
    out = torch.zeros((PROGRAMS - 1) * BLOCK)
    flag_kernel[(PROGRAMS,)](data, flag, out, PUBLISH=publish, POLL=poll, SKIP=skip, BLOCK=BLOCK)
    assert torch.equal(out, (torch.arange(BLOCK, dtype=torch.float32) + 1).repeat(PROGRAMS - 1))


@triton.jit
def late_producer_kernel(data, flag, out, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if pid == tl.num_programs(0) - 1:
        tl.store(data + offs, offs.to(tl.float32))
        tl.atomic_xchg(flag, 1, sem="release")
    else:
        while tl.atomic_add(flag, 0, sem="acquire") == 0:  # BUG: lock
            pass
        tl.store(out + pid * BLOCK + offs, tl.load(data + offs))


def late_producer() -> None:
    """The producer is the last program: the first consumer waits on a program the interpreter has
    not run, so the check stops there (a hang here) and says the ordering is undecided."""
    data, flag = torch.zeros(BLOCK), torch.zeros(1, dtype=torch.int32)
    out = torch.zeros((PROGRAMS - 1) * BLOCK)
    late_producer_kernel[(PROGRAMS,)](data, flag, out, BLOCK=BLOCK)


@triton.jit
def exact_value_kernel(flag, out):
    while tl.atomic_add(flag, 0, sem="acquire") != 12345:  # BUG: lock
        pass
    tl.store(out + tl.program_id(0), 1.0)


def exact_value() -> None:
    """A wait for one exact value nobody writes and no value the check tries (1, the value plus
    one, the grid's size, the type's extremes) ends: the launch stops there, as before."""
    flag, out = torch.zeros(1, dtype=torch.int32), torch.zeros(2)
    exact_value_kernel[(2,)](flag, out)


@triton.jit
def ticket_kernel(data, count, out, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if pid == 0:
        tl.store(data + offs, offs.to(tl.float32))  # BUG: race
    tl.atomic_add(count, 1)  # acq_rel, but a ticket: which program's value it reads is the schedule's
    if pid != 0:
        tl.store(out + (pid - 1) * BLOCK + offs, tl.load(data + offs))


def ticket() -> None:
    """No wait, only a counter: program 1 finds program 0's increment here, but on a GPU it may
    come first. A value-changing atomic orders nothing, so the read races with the write."""
    data, count = torch.zeros(BLOCK), torch.zeros(1, dtype=torch.int32)
    out = torch.zeros((PROGRAMS - 1) * BLOCK)
    ticket_kernel[(PROGRAMS,)](data, count, out, BLOCK=BLOCK)


# --- atomics with a scope ----------------------------------------------------------------------------


@triton.jit
def scoped_sum_kernel(x, total, SCOPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(total, tl.sum(tl.load(x + offs), 0), scope=SCOPE)  # BUG: race


def _scoped(scope: str) -> None:
    x, total = torch.ones(PROGRAMS * BLOCK), torch.zeros(1)
    scoped_sum_kernel[(PROGRAMS,)](x, total, SCOPE=scope, BLOCK=BLOCK)
    assert total.item() == PROGRAMS * BLOCK


# --- stores masked off in all programs but the owner ---------------------------------------------


@triton.jit
def owner_store_kernel(owner, out, EVERYONE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    limit = tl.where(tl.load(owner) == pid, BLOCK, 0)  # data-dependent, broadcast over the block
    if EVERYONE:
        limit = BLOCK
    tl.store(out + offs, offs.to(tl.float32), mask=offs < limit)  # BUG: race


@triton.jit
def scalar_mask_kernel(out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, offs.to(tl.float32), mask=tl.program_id(0) == 0)


def _owner(everyone: bool) -> None:
    owner, out = torch.tensor([2], dtype=torch.int32), torch.zeros(BLOCK)
    owner_store_kernel[(PROGRAMS,)](owner, out, EVERYONE=everyone, BLOCK=BLOCK)
    assert torch.equal(out, torch.arange(BLOCK, dtype=torch.float32))


def scalar_mask() -> torch.Tensor:
    """A scalar mask (``mask=pid == 0``): Triton broadcasts it over the block. Triton 3.9's
    interpreter refuses it ('mask has unsupported dtype'); 3.6's runs it."""
    out = torch.zeros(BLOCK)
    scalar_mask_kernel[(PROGRAMS,)](out, BLOCK=BLOCK)
    return out


# --- a spin lock ----------------------------------------------------------------------------------


@triton.jit
def locked_sum_kernel(x, acc, lock, seen, READ_OUTSIDE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    s = tl.sum(tl.load(x + pid * BLOCK + tl.arange(0, BLOCK)), 0)
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    total = tl.load(acc) + s
    tl.store(acc, total)  # BUG: race
    if READ_OUTSIDE:
        tl.atomic_xchg(lock, 0)
        tl.store(seen + pid, tl.load(acc))
    else:
        tl.store(seen + pid, tl.load(acc))
        tl.atomic_xchg(lock, 0)


def _locked(read_outside: bool) -> None:
    x, acc = torch.ones(PROGRAMS * BLOCK), torch.zeros(1)
    lock, seen = torch.zeros(1, dtype=torch.int32), torch.zeros(PROGRAMS)
    locked_sum_kernel[(PROGRAMS,)](x, acc, lock, seen, READ_OUTSIDE=read_outside, BLOCK=BLOCK)
    assert acc.item() == PROGRAMS * BLOCK


# --- an atomic reduction ------------------------------------------------------------------------------


@triton.jit
def reduce_kernel(x, total, ATOMIC: tl.constexpr, BLOCK: tl.constexpr):
    s = tl.sum(tl.load(x + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)), 0)
    if ATOMIC:
        tl.atomic_add(total, s)
    else:
        tl.store(total, tl.load(total) + s)  # BUG: race


def _reduce(atomic: bool) -> None:
    x, total = torch.ones(PROGRAMS * BLOCK), torch.zeros(1)
    reduce_kernel[(PROGRAMS,)](x, total, ATOMIC=atomic, BLOCK=BLOCK)
    assert total.item() == PROGRAMS * BLOCK


# --- split-K ----------------------------------------------------------------------------------------


@triton.jit
def split_k_kernel(a, b, c, K: tl.constexpr, SPLIT: tl.constexpr, ATOMIC: tl.constexpr, BLOCK: tl.constexpr):
    pid_k = tl.program_id(0)
    rows = tl.arange(0, BLOCK)
    ks = pid_k * (K // SPLIT) + tl.arange(0, K // SPLIT)
    tile_a = tl.load(a + rows[:, None] * K + ks[None, :])
    tile_b = tl.load(b + ks[:, None] * BLOCK + rows[None, :])
    partial = tl.dot(tile_a, tile_b)
    c_ptrs = c + rows[:, None] * BLOCK + rows[None, :]
    if ATOMIC:
        tl.atomic_add(c_ptrs, partial)
    else:
        tl.store(c_ptrs, partial)  # BUG: race


def _split_k(atomic: bool) -> None:
    k = 64
    a, b, c = torch.randn(BLOCK, k), torch.randn(k, BLOCK), torch.zeros(BLOCK, BLOCK)
    split_k_kernel[(PROGRAMS,)](a, b, c, K=k, SPLIT=PROGRAMS, ATOMIC=atomic, BLOCK=BLOCK)
    if atomic:
        torch.testing.assert_close(c, a @ b, atol=1e-4, rtol=1e-4)


# --- a persistent kernel with a work queue --------------------------------------------------------------


@triton.jit
def queue_kernel(x, out, counter, n_tiles, ATOMIC: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if ATOMIC:
        tile = tl.atomic_add(counter, 1)
    else:
        tile = tl.load(counter)
        tl.store(counter, tile + 1)  # BUG: race
    while tile < n_tiles:
        tl.store(out + tile * BLOCK + offs, tl.load(x + tile * BLOCK + offs) * 2.0)
        if ATOMIC:
            tile = tl.atomic_add(counter, 1)
        else:
            tile = tl.load(counter)
            tl.store(counter, tile + 1)


def _queue(atomic: bool) -> None:
    tiles = 10
    x, out = torch.randn(tiles * BLOCK), torch.zeros(tiles * BLOCK)
    counter = torch.zeros(1, dtype=torch.int32)
    queue_kernel[(PROGRAMS,)](x, out, counter, tiles, ATOMIC=atomic, BLOCK=BLOCK)
    assert torch.equal(out, x * 2.0)


# --- a spin on a value no program writes: a hang, and the race it was to prevent ---------------------


@triton.jit
def unpublished_kernel(data, flag, out, PUBLISH: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if pid == 0:
        tl.store(data + offs, offs.to(tl.float32))  # BUG: race
        if PUBLISH:
            tl.atomic_xchg(flag, 1, sem="release")
    else:
        while tl.atomic_add(flag, 0, sem="acquire") == 0:  # BUG: lock
            pass
        tl.store(out + (pid - 1) * BLOCK + offs, tl.load(data + offs) + 1.0)


def _unpublished(publish: bool) -> None:
    """The producer writes the data; the racy twin forgets the release that ends the consumers'
    wait. On a GPU the consumers hang, and nothing orders the read they would make after the wait
    after the write: both are reported, each at its line."""
    data, flag = torch.zeros(BLOCK), torch.zeros(1, dtype=torch.int32)
    out = torch.zeros((PROGRAMS - 1) * BLOCK)
    unpublished_kernel[(PROGRAMS,)](data, flag, out, PUBLISH=publish, BLOCK=BLOCK)
    assert torch.equal(out, (torch.arange(BLOCK, dtype=torch.float32) + 1).repeat(PROGRAMS - 1))


@triton.jit
def semaphore_kernel(partials, count, out, EXTRA: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    producers = tl.num_programs(0) - 1
    if pid < producers:
        tl.store(partials + pid * BLOCK + offs, (offs + pid).to(tl.float32))  # BUG: race
        tl.atomic_add(count, 1, sem="release")
    else:
        while tl.atomic_add(count, 0, sem="acquire") < producers + EXTRA:  # BUG: lock
            pass
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for p in range(0, producers):
            acc += tl.load(partials + p * BLOCK + offs)
        tl.store(out + offs, acc)


def _semaphore(extra: int) -> None:
    """The consumer waits until every producer has counted up; the racy twin waits for one count
    more than there are producers (it counts itself), which no program ever writes."""
    partials, count = torch.zeros((PROGRAMS - 1) * BLOCK), torch.zeros(1, dtype=torch.int32)
    out = torch.zeros(BLOCK)
    semaphore_kernel[(PROGRAMS,)](partials, count, out, EXTRA=extra, BLOCK=BLOCK)
    expected = sum(torch.arange(BLOCK, dtype=torch.float32) + p for p in range(PROGRAMS - 1))
    assert torch.equal(out, expected)


# --- the last block: a counter taken with acq_rel; the program that completes it reads every partial ---


@triton.jit
def _reduce_if_last(ticket, partials, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if ticket == n - 1:
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for p in range(0, n):
            acc += tl.load(partials + p * BLOCK + offs)
        tl.store(out + offs, acc)


@triton.jit
def last_block_kernel(x, partials, count, out, SEM: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    n = tl.num_programs(0)
    offs = tl.arange(0, BLOCK)
    tl.store(partials + pid * BLOCK + offs, tl.load(x + pid * BLOCK + offs) * 2.0)  # BUG: race
    ticket = tl.atomic_add(count, 1, sem=SEM)
    if ticket == n - 1:  # the program whose ticket completes the count reads every partial
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for p in range(0, n):
            acc += tl.load(partials + p * BLOCK + offs)
        tl.store(out + offs, acc)


@triton.jit
def last_by_pid_kernel(x, partials, count, out, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    n = tl.num_programs(0)
    offs = tl.arange(0, BLOCK)
    tl.store(partials + pid * BLOCK + offs, tl.load(x + pid * BLOCK + offs) * 2.0)  # BUG: race
    tl.atomic_add(count, 1)
    if pid == n - 1:  # the last program by its id, which on a GPU need not be the last to count
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for p in range(0, n):
            acc += tl.load(partials + p * BLOCK + offs)
        tl.store(out + offs, acc)


@triton.jit
def last_block_helper_kernel(x, partials, count, out, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    tl.store(partials + pid * BLOCK + offs, tl.load(x + pid * BLOCK + offs) * 2.0)  # BUG: undecided
    ticket = tl.atomic_add(count, 1)
    _reduce_if_last(ticket, partials, out, tl.num_programs(0), BLOCK)  # the branch is in the helper


def _last_block(kernel: Callable[..., object] | None = None, sem: str = "acq_rel") -> None:
    """The last-block reduction: each program stores its partial, then takes a ticket with acq_rel;
    the one whose ticket completes the count is ordered after every program's release (a count
    carries the release sequences it continues) and reads every partial."""
    x, partials = torch.randn(PROGRAMS * BLOCK), torch.zeros(PROGRAMS * BLOCK)
    count, out = torch.zeros(1, dtype=torch.int32), torch.zeros(BLOCK)
    if kernel is None:
        last_block_kernel[(PROGRAMS,)](x, partials, count, out, SEM=sem, BLOCK=BLOCK)
    else:
        kernel[(PROGRAMS,)](x, partials, count, out, BLOCK=BLOCK)  # type: ignore[index]
    torch.testing.assert_close(out, (x * 2.0).reshape(PROGRAMS, BLOCK).sum(0))
    assert count.item() == PROGRAMS


def last_by_pid() -> None:
    """The racy kin of the last block: the reader is chosen by its id, not by its ticket."""
    _last_block(last_by_pid_kernel)


def last_block_helper() -> None:
    """The last block with the ticket handed to a helper that branches on it: the check does not
    follow the value into the helper, so the order is undecided (a warning, not an error)."""
    _last_block(last_block_helper_kernel)


# --- buffer reuse: one scratch buffer, several phases ---------------------------------------------------


@triton.jit
def phases_kernel(x, scratch, out, SHARED: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    base = scratch + (0 if SHARED else pid * BLOCK)  # the racy twin: one scratch row for every program
    tl.store(base + offs, tl.load(x + pid * BLOCK + offs) * 2.0)  # BUG: race
    tl.debug_barrier()
    y = tl.load(base + (BLOCK - 1 - offs))  # phase 2 reads what phase 1 wrote, reversed
    tl.debug_barrier()
    tl.store(base + offs, y + 1.0)  # BUG: race-reuse
    tl.debug_barrier()
    tl.store(out + pid * BLOCK + offs, tl.load(base + offs))


def _phases(shared: bool) -> None:
    """One program writes its scratch row, reads it back and overwrites it, phases separated by
    tl.debug_barrier: no race (a program's own accesses never race). The racy twin shares one row
    between programs: one program's first store races with another's reuse store, and the reuse
    stores with the other programs' reads."""
    x, out = torch.randn(PROGRAMS * BLOCK), torch.zeros(PROGRAMS * BLOCK)
    scratch = torch.zeros(BLOCK if shared else PROGRAMS * BLOCK)
    phases_kernel[(PROGRAMS,)](x, scratch, out, SHARED=shared, BLOCK=BLOCK)
    if not shared:
        assert torch.equal(out, (x * 2.0).reshape(PROGRAMS, BLOCK).flip(1).reshape(-1) + 1.0)


@triton.jit
def handoff_kernel(scratch, flag, out, DONE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if pid == 0:
        tl.store(out + offs, tl.load(scratch + offs))  # phase 1: program 0 consumes the scratch
        tl.atomic_xchg(flag, 1, sem=DONE)  # and says it is done with it
    else:
        while tl.atomic_add(flag, 0, sem="acquire") == 0:
            pass
        tl.store(scratch + offs, offs.to(tl.float32))  # BUG: race
        tl.store(out + BLOCK + offs, tl.load(scratch + offs) * 2.0)


def _handoff(done: str) -> None:
    """Program 1 reuses the scratch buffer program 0 has finished reading: program 0's release
    orders its read before program 1's overwrite (a write ordered after another program's read). The
    racy twin says it is done with a relaxed exchange: the overwrite may land before the read."""
    scratch, flag = torch.arange(BLOCK, dtype=torch.float32) + 100.0, torch.zeros(1, dtype=torch.int32)
    out = torch.zeros(2 * BLOCK)
    handoff_kernel[(2,)](scratch, flag, out, DONE=done, BLOCK=BLOCK)
    assert torch.equal(out[:BLOCK], torch.arange(BLOCK, dtype=torch.float32) + 100.0)


# --- one poll, not a wait -------------------------------------------------------------------------------


@triton.jit
def one_poll_kernel(data, flag, out, WAIT: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if pid == 0:
        tl.store(data + offs, offs.to(tl.float32))  # BUG: race
        tl.atomic_xchg(flag, 1, sem="release")
    else:
        if WAIT == 1:
            while tl.atomic_add(flag, 0, sem="acquire") == 0:
                pass
        elif WAIT == 2:  # spin on a cheap load, then one acquire: it reads the release the loop saw
            while tl.load(flag, volatile=True) == 0:
                pass
            tl.atomic_add(flag, 0, sem="acquire")
        else:
            tl.atomic_add(flag, 0, sem="acquire")  # one poll: its value decides nothing
        tl.store(out + (pid - 1) * BLOCK + offs, tl.load(data + offs))


def _one_poll(wait: int) -> None:
    """An acquire that reads the flag once and throws the value away: here the producer ran first,
    so the poll reads its release, but on a GPU it may read the flag first and nothing waits. Only
    an acquire whose value decides what follows (a loop, a branch, a mask) orders it."""
    data, flag = torch.zeros(BLOCK), torch.zeros(1, dtype=torch.int32)
    out = torch.zeros((PROGRAMS - 1) * BLOCK)
    one_poll_kernel[(PROGRAMS,)](data, flag, out, WAIT=wait, BLOCK=BLOCK)
    assert torch.equal(out, torch.arange(BLOCK, dtype=torch.float32).repeat(PROGRAMS - 1))


# --- the twins: (kernel, race-free run, racy run) --------------------------------------------------------

Twin = tuple[Callable[..., object], Callable[[], None], Callable[[], None]]

TWINS: dict[str, Twin] = {
    "flag acquire/release": (flag_kernel, lambda: _flag("release", 0), lambda: _flag("relaxed", 0)),
    "relaxed poll": (flag_kernel, lambda: _flag("release", 3), lambda: _flag("release", 2)),
    "release without acquire": (flag_kernel, lambda: _flag("acq_rel", 0), lambda: _flag("release", 1)),
    "role skipping the wait": (flag_kernel, lambda: _flag("release", 0), lambda: _flag("release", 0, skip=3)),
    "cta-scope atomics": (scoped_sum_kernel, lambda: _scoped("gpu"), lambda: _scoped("cta")),
    "masked-off stores": (owner_store_kernel, lambda: _owner(False), lambda: _owner(True)),
    "lock": (locked_sum_kernel, lambda: _locked(False), lambda: _locked(True)),
    "atomic reduction": (reduce_kernel, lambda: _reduce(True), lambda: _reduce(False)),
    "split-K with atomics": (split_k_kernel, lambda: _split_k(True), lambda: _split_k(False)),
    "persistent work queue": (queue_kernel, lambda: _queue(True), lambda: _queue(False)),
    "last block": (last_block_kernel, _last_block, lambda: _last_block(sem="relaxed")),
    "last block chosen by its id": (last_by_pid_kernel, _last_block, last_by_pid),
    "buffer handed over by a flag": (
        handoff_kernel,
        lambda: _handoff("release"),
        lambda: _handoff("relaxed"),
    ),
    "one poll, not a wait": (one_poll_kernel, lambda: _one_poll(1), lambda: _one_poll(0)),
    "a load spin, then one acquire": (one_poll_kernel, lambda: _one_poll(2), lambda: _one_poll(0)),
}

# Twins whose racy half gives more than one finding: (kernel, race-free run, racy run, the expected
# findings as (kind, the ``# BUG:`` marker of its line)).
Many = tuple[Callable[..., object], Callable[[], None], Callable[[], None], list[tuple[str, str]]]

MANY: dict[str, Many] = {
    "spin on a flag no program sets": (
        unpublished_kernel,
        lambda: _unpublished(True),
        lambda: _unpublished(False),
        [("race", "race"), ("lock", "lock")],
    ),
    "semaphore waiting for a count no program reaches": (
        semaphore_kernel,
        lambda: _semaphore(0),
        lambda: _semaphore(1),
        [("lock", "lock")],  # a hang only: the acquire read every producer's release
    ),
    "scratch buffer across debug_barrier phases": (
        phases_kernel,
        lambda: _phases(False),
        lambda: _phases(True),
        [("race", "race"), ("race", "race-reuse")],
    ),
}
