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
- a persistent kernel taking tiles from a work queue (the racy twin takes them with a load and a store).

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
    out = torch.zeros(PROGRAMS * BLOCK)
    late_producer_kernel[(PROGRAMS,)](data, flag, out, BLOCK=BLOCK)


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
}
