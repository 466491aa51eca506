"""A kernel the interpreter runs but the compiler rejects: it reads a plain (non-constexpr) global."""

import torch
import triton
import triton.language as tl

SCALE = 2.0


@triton.jit
def bad_kernel(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x * SCALE)


DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

if __name__ == "__main__":
    x = torch.arange(16, dtype=torch.float32, device=DEVICE)
    y = torch.empty_like(x)
    bad_kernel[(1,)](x, y, N=16)
    assert torch.equal(y, x * 2)
    print("ran in the interpreter")
