"""Kernels for the sanitizer's edge cases, each pinned down by a test in tests/test_check.py."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def ratio_kernel(x_ptr, d_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """Correct: masked-off lanes compute 0/0, which nobody stores."""
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x_ptr + offs, mask=mask, other=0.0)
    b = tl.load(d_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, a / b, mask=mask)


@triton.jit
def shifted_sqrt_kernel(x_ptr, d_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """The 0/0 of masked-off lanes comes first; the NaN that is stored is born in the sqrt."""
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x_ptr + offs, mask=mask, other=0.0)
    b = tl.load(d_ptr + offs, mask=mask, other=0.0)
    q = a / b
    r = tl.sqrt(q - 10.0)  # EDGE: nan
    tl.store(y_ptr + offs, r, mask=mask)


@triton.jit
def to_half_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y = tl.load(x_ptr + offs).to(tl.float16)  # EDGE: cast
    tl.store(y_ptr + offs, y)


@triton.jit
def two_views_kernel(a_ptr, b_ptr):
    """Program 0 stores a float32 to a[0]; program 1 an int8 to byte 1 of the same word."""
    if tl.program_id(0) == 0:
        tl.store(a_ptr, 1.0)
    else:
        tl.store(b_ptr + 1, 7)  # EDGE: race


@triton.jit
def fill_kernel(a_ptr, alias_ptr, BLOCK: tl.constexpr):
    """Writes all of ``a`` as float32; ``alias`` (unused) views the same bytes as int8."""
    offs = tl.arange(0, BLOCK)
    tl.store(a_ptr + offs, tl.full((BLOCK,), 1.0, tl.float32))


def edge_line(tag: str) -> int:
    """The line in this file that ends with ``# EDGE: tag``."""
    with open(__file__) as f:
        return next(i for i, text in enumerate(f, 1) if text.rstrip().endswith(f"# EDGE: {tag}"))
