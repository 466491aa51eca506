"""A tile transposed with tl.trans in a loop: its layout is converted through shared memory each time."""

import torch
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(x_ptr, y_ptr, steps, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for i in range(steps):
        x = tl.load(x_ptr + i * BLOCK * BLOCK + r[:, None] * BLOCK + r[None, :])
        acc += tl.trans(x)
    tl.store(y_ptr + r[:, None] * BLOCK + r[None, :], acc)


DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

if __name__ == "__main__":
    n, steps = 64, 4
    x = torch.randn(steps, n, n, device=DEVICE)
    y = torch.empty(n, n, device=DEVICE)
    transpose_kernel[(1,)](x, y, steps, BLOCK=n)
    assert torch.allclose(y, x.transpose(1, 2).sum(0), rtol=1.3e-6, atol=1e-5)
    print("transposed")
