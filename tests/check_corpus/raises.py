"""A kernel that cannot be interpreted at all, so `deuteron check` has a failing kernel to report as
such rather than as a finding."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def mismatched_shapes_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + tl.arange(0, 2 * BLOCK))
    # Shapes (BLOCK,) and (2*BLOCK,) do not broadcast: Triton rejects this while tracing, and the
    # interpreter rejects it when it reaches this line. Every access above is in bounds.
    tl.store(out_ptr + offs, x + y)


def run() -> None:
    block = 16
    x = torch.ones(block)
    y = torch.ones(2 * block)
    out = torch.empty(block)
    mismatched_shapes_kernel[(1,)](x, y, out, BLOCK=block)
