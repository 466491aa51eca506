"""One fp32 IEEE dot inside a helper the kernel calls twice: two dots in TTIR, one source line."""

import torch
import triton
import triton.language as tl


@triton.jit
def _mm(a, b):
    # the dot below is line 11
    return tl.dot(a, b, input_precision="ieee")


@triton.jit
def twice_kernel(a_ptr, b_ptr, c_ptr):
    r = tl.arange(0, 32)
    a = tl.load(a_ptr + r[:, None] * 32 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 32 + r[None, :])
    c = _mm(_mm(a, b), b)
    tl.store(c_ptr + r[:, None] * 32 + r[None, :], c)


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    a, b = torch.randn(32, 32, device=device), torch.randn(32, 32, device=device)
    c = torch.empty_like(a)
    twice_kernel[(1,)](a, b, c)
