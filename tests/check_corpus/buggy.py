"""Kernels with exactly one planted bug each, and where the sanitizer must point.

The line a finding must name carries a trailing `# BUG: <kind>` comment; `bug_lines` reads those
comments back out of the kernel's source, so the expected line numbers never drift when this file is
edited. An in-place read/write race marks both the load and the store, because either access is a
fair place to report it.

Several `run` functions access memory out of bounds on purpose. Without the sanitizer masking those
lanes off, Triton's interpreter would really read or write past the tensors, so the bugs named in
`UNSAFE_WITHOUT_SANITIZER` must only ever run under `deuteron check`.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

KINDS = frozenset({"out-of-bounds", "race", "nan", "store-coverage"})

_BUG_COMMENT = re.compile(r"#\s*BUG:\s*(\S+)\s*$")


@dataclass(frozen=True)
class Bug:
    name: str
    kind: str
    kernel: str
    run: Callable[[], None]
    tensor: str | None = None


# --- missing_mask_load -----------------------------------------------------------------------------


@triton.jit
def add_unmasked_load_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs)  # BUG: out-of-bounds
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def run_missing_mask_load() -> None:
    torch.manual_seed(0)
    n, block = 1000, 256
    x, y, out = torch.randn(n), torch.randn(n), torch.empty(n)
    add_unmasked_load_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)


# --- missing_mask_store ----------------------------------------------------------------------------


@triton.jit
def add_unmasked_store_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x + y)  # BUG: out-of-bounds


def run_missing_mask_store() -> None:
    torch.manual_seed(0)
    n, block = 1000, 256
    # Exactly n elements: the unmasked lanes 1000..1023 of the last program fall past the end.
    x, y, out = torch.randn(n), torch.randn(n), torch.empty(n)
    add_unmasked_store_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)


# --- off_by_one_mask -------------------------------------------------------------------------------


@triton.jit
def block_sum_kernel(x_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs <= n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)  # BUG: out-of-bounds
    tl.store(partial_ptr + pid, tl.sum(x, axis=0))


def run_off_by_one_mask() -> None:
    torch.manual_seed(0)
    n, block = 1000, 256  # lane 1000 of the last program slips through `<=`
    grid = triton.cdiv(n, block)
    x, partial = torch.randn(n), torch.empty(grid)
    block_sum_kernel[(grid,)](x, partial, n, BLOCK=block)


# --- wrong_stride ----------------------------------------------------------------------------------


@triton.jit
def strided_copy_kernel(
    src_ptr, dst_ptr, R, C, stride_sr, stride_sc, stride_dr, stride_dc, BR: tl.constexpr, BC: tl.constexpr
):
    rows = tl.program_id(0) * BR + tl.arange(0, BR)
    cols = tl.program_id(1) * BC + tl.arange(0, BC)
    mask = (rows[:, None] < R) & (cols[None, :] < C)
    # The source strides are swapped: columns step by the padded row pitch, rows by one element.
    src = src_ptr + rows[:, None] * stride_sc + cols[None, :] * stride_sr
    x = tl.load(src, mask=mask)  # BUG: out-of-bounds
    tl.store(dst_ptr + rows[:, None] * stride_dr + cols[None, :] * stride_dc, x, mask=mask)


def run_wrong_stride() -> None:
    torch.manual_seed(0)
    r, c, pitch, br, bc = 5, 12, 16, 4, 8
    # A padded source: 5 rows of 12 valid columns in a 5 x 16 buffer. With the strides swapped the
    # highest address is (r-1) + (c-1)*pitch = 180, far past the buffer's 80 elements.
    src = torch.randn(r, pitch)[:, :c]
    dst = torch.empty(r, c)
    grid = (triton.cdiv(r, br), triton.cdiv(c, bc))
    strided_copy_kernel[grid](src, dst, r, c, *src.stride(), *dst.stride(), BR=br, BC=bc)


# --- negative_offset -------------------------------------------------------------------------------


@triton.jit
def shift_right_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    src = offs - 1
    # Only the upper bound is checked, so program 0, lane 0 reads element -1.
    x = tl.load(x_ptr + src, mask=src < n, other=0.0)  # BUG: out-of-bounds
    tl.store(out_ptr + offs, x, mask=offs < n)


def run_negative_offset() -> None:
    torch.manual_seed(0)
    n, block = 1000, 256
    x, out = torch.randn(n), torch.empty(n)
    shift_right_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block)


# --- overlapping_stores ----------------------------------------------------------------------------


@triton.jit
def chunked_cumsum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Chunks start BLOCK-1 apart, so each chunk's last element is also the next chunk's first, and the
    # two programs store different partial sums there.
    offs = tl.program_id(0) * (BLOCK - 1) + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.cumsum(x, axis=0), mask=mask)  # BUG: race


def run_overlapping_stores() -> None:
    torch.manual_seed(0)
    n, block = 1000, 128
    x, out = torch.randn(n), torch.empty(n)
    chunked_cumsum_kernel[(triton.cdiv(n, block - 1),)](x, out, n, BLOCK=block)


# --- inplace_shift_race ----------------------------------------------------------------------------


@triton.jit
def inplace_shift_left_kernel(x_ptr, n, BLOCK: tl.constexpr):
    # x[i] = x[i + 1] in place: a program's last lane reads the element the next program overwrites.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n - 1
    x = tl.load(x_ptr + offs + 1, mask=mask)  # BUG: race
    tl.store(x_ptr + offs, x, mask=mask)  # BUG: race


def run_inplace_shift_race() -> None:
    torch.manual_seed(0)
    n, block = 1000, 256
    x = torch.randn(n)
    inplace_shift_left_kernel[(triton.cdiv(n, block),)](x, n, BLOCK=block)


# --- nan_origin ------------------------------------------------------------------------------------


@triton.jit
def log_scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    y = tl.log(x)  # BUG: nan
    tl.store(out_ptr + offs, y * scale, mask=mask)


def run_nan_origin() -> None:
    torch.manual_seed(0)
    n, block = 1000, 256
    # Finite inputs, some of them negative or zero: the log is where NaN and -inf first appear.
    x = torch.randn(n)
    x[::97] = 0.0
    out = torch.empty(n)
    log_scale_kernel[(triton.cdiv(n, block),)](x, out, n, 0.5, BLOCK=block)


# --- unwritten_tail --------------------------------------------------------------------------------


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2.0, mask=mask)  # BUG: store-coverage


def run_unwritten_tail() -> None:
    torch.manual_seed(0)
    n, block = 1000, 256
    x, out = torch.randn(n), torch.empty(n)
    # Floor division launches 3 programs, not 4: elements 768..999 of `out` are never written.
    scale_kernel[(n // block,)](x, out, n, BLOCK=block)


BUGS: list[Bug] = [
    Bug("missing_mask_load", "out-of-bounds", "add_unmasked_load_kernel", run_missing_mask_load, "x_ptr"),
    Bug(
        "missing_mask_store", "out-of-bounds", "add_unmasked_store_kernel", run_missing_mask_store, "out_ptr"
    ),
    Bug("off_by_one_mask", "out-of-bounds", "block_sum_kernel", run_off_by_one_mask, "x_ptr"),
    Bug("wrong_stride", "out-of-bounds", "strided_copy_kernel", run_wrong_stride, "src_ptr"),
    Bug("negative_offset", "out-of-bounds", "shift_right_kernel", run_negative_offset, "x_ptr"),
    Bug("overlapping_stores", "race", "chunked_cumsum_kernel", run_overlapping_stores),
    Bug("inplace_shift_race", "race", "inplace_shift_left_kernel", run_inplace_shift_race),
    Bug("nan_origin", "nan", "log_scale_kernel", run_nan_origin),
    Bug("unwritten_tail", "store-coverage", "scale_kernel", run_unwritten_tail),
]

# Bugs whose kernels really touch memory past their tensors unless the sanitizer masks those lanes.
UNSAFE_WITHOUT_SANITIZER = frozenset(b.name for b in BUGS if b.kind == "out-of-bounds")


def kernel_function(bug: Bug) -> Callable[..., object]:
    """The plain Python function behind the bug's kernel: both the interpreter's wrapper and the real
    JIT keep it as `.fn`, and only the plain function has source that inspect can find."""
    kernel = getattr(sys.modules[__name__], bug.kernel)
    return kernel.fn


def bug_lines(bug: Bug) -> set[int]:
    """Line numbers in this file of the kernel's `# BUG: <bug.kind>` comments."""
    source, first = inspect.getsourcelines(kernel_function(bug))
    lines = set()
    for i, text in enumerate(source):
        match = _BUG_COMMENT.search(text)
        if match and match.group(1) == bug.kind:
            lines.add(first + i)
    return lines
