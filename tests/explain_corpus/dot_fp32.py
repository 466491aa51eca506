"""An fp32 tl.dot with input_precision="ieee": exact fp32, so no tensor cores."""

import torch
import triton
import triton.language as tl


@triton.jit
def dot_ieee_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
    b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :])
    c = tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], c)


DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

if __name__ == "__main__":
    n = 32
    a, b = torch.randn(n, n, device=DEVICE), torch.randn(n, n, device=DEVICE)
    c = torch.empty(n, n, device=DEVICE)
    dot_ieee_kernel[(1,)](a, b, c, BLOCK=n)
    assert torch.allclose(c, a @ b, atol=1e-4, rtol=1e-4)
    print("dot ok")
