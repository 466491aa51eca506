"""Integer arithmetic bugs (``deuteron check``'s int-overflow and div-by-zero), each a script:
``python tests/check_corpus/int_arith.py CASE``. Lines the checks must blame end in ``# BUG: <kind>``.

- ``add32``: the classic vector add with int32 offsets; correct at the size it runs here, wrong
  past 2**31 elements (``--at-size n_elements=3e9`` finds it without running that size);
- ``add64``: its twin, offsets in int64: clean at every size;
- ``add32_tuple_grid``: ``add32`` launched with a grid given as a tuple, not a callable;
- ``rows``: ``row * stride`` in int32 (a 2-D grid), wrong once rows * stride passes 2**31;
- ``scale``: values multiplied in int32 at the size it runs: the wrap really happens here;
- ``groups``: ``offs // group`` with ``group`` a zero argument;
- ``clean``: a kernel with integer division and int32 index arithmetic, all in range.
"""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl


@triton.jit
def add32_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)  # BUG: int-overflow
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def add64_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def rows_kernel(x_ptr, out_ptr, n_rows, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    base = row * stride  # BUG: int-overflow
    x = tl.load(x_ptr + base + cols, mask=mask)
    tl.store(out_ptr + base + cols, x * 2, mask=mask)


@triton.jit
def scale_kernel(x_ptr, out_ptr, factor, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * factor, mask=mask)  # BUG: int-overflow


@triton.jit
def groups_kernel(x_ptr, out_ptr, n, group, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = offs // group  # BUG: div-by-zero
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + g, mask=mask)


def _add(kernel, tuple_grid: bool = False) -> None:  # type: ignore[no-untyped-def]
    n = 1000
    x, y = torch.arange(n, dtype=torch.float32), torch.ones(n)
    out = torch.empty(n)
    if tuple_grid:
        kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    else:
        grid = lambda meta: (triton.cdiv(meta["n_elements"], meta["BLOCK"]),)  # noqa: E731
        kernel[grid](x, y, out, n, BLOCK=256)
    torch.testing.assert_close(out, x + y)


def add32() -> None:
    _add(add32_kernel)


def add64() -> None:
    _add(add64_kernel)


def add32_tuple_grid() -> None:
    _add(add32_kernel, tuple_grid=True)


def rows() -> None:
    n_rows, n_cols = 6, 100
    x = torch.randn(n_rows, n_cols)
    out = torch.empty_like(x)
    rows_kernel[(n_rows, triton.cdiv(n_cols, 64))](x, out, n_rows, n_cols, x.stride(0), BLOCK=64)
    torch.testing.assert_close(out, x * 2)


def scale() -> None:
    n = 300
    x = torch.full((n,), 70_000, dtype=torch.int32)
    x[:10] = 1
    out = torch.empty_like(x)
    scale_kernel[(triton.cdiv(n, 128),)](x, out, 40_000, n, BLOCK=128)


def groups() -> None:
    n = 100
    x = torch.zeros(n, dtype=torch.int32)
    out = torch.empty_like(x)
    groups_kernel[(triton.cdiv(n, 64),)](x, out, n, 0, BLOCK=64)


def clean() -> None:
    n = 500
    x = torch.arange(n, dtype=torch.int32)
    out = torch.empty_like(x)
    groups_kernel[(triton.cdiv(n, 64),)](x, out, n, 7, BLOCK=64)
    torch.testing.assert_close(out, x + torch.arange(n, dtype=torch.int32) // 7)
    add32()


CASES = {f.__name__: f for f in (add32, add64, add32_tuple_grid, rows, scale, groups, clean)}

if __name__ == "__main__":
    for name in sys.argv[1:]:
        CASES[name]()
