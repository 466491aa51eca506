"""Small real Triton kernels whose exact byte and flop counts the tests know in advance."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from examples.vector_add import add_kernel, matmul_kernel


@triton.jit
def unmasked_copy_kernel(src_ptr, dst_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs))


@triton.jit
def scalar_kernel(src_ptr, dst_ptr):
    tl.store(dst_ptr, tl.load(src_ptr) * 2)


def _flops_metadata(grid, metadata, args):
    n = args["n"]
    return {"name": f"add_{n}", "flops": n, "bytes": 12 * n}


@triton.jit(launch_metadata=_flops_metadata)
def hooked_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def add(x: torch.Tensor, y: torch.Tensor, block: int = 256) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    return out


def matmul(a: torch.Tensor, b: torch.Tensor, bm: int = 32, bn: int = 32, bk: int = 32) -> torch.Tensor:
    m, k = a.shape
    _, n = b.shape
    c = torch.empty((m, n), dtype=torch.float32)
    matmul_kernel[(triton.cdiv(m, bm), triton.cdiv(n, bn))](a, b, c, m, n, k, BM=bm, BN=bn, BK=bk)
    return c
