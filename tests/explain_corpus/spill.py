"""A tile far too big for one thread's registers: every program holds 64K floats in 4 warps."""

import torch
import triton
import triton.language as tl


@triton.jit
def big_tile_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    s = tl.sum(x * x, axis=0)
    y = x / tl.sqrt(s) + tl.cumsum(x, axis=0)
    tl.store(y_ptr + offs, y)


DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

if __name__ == "__main__":
    n = 1 << 14
    x = torch.rand(n, device=DEVICE)
    y = torch.empty(n, device=DEVICE)
    big_tile_kernel[(1,)](x, y, BLOCK=n)
    print("normalized", n)
