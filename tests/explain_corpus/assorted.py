"""Kernels that exercise the capture's edge cases: autotuning, a tuple argument, an argument equal
to 1 (which Triton turns into a constexpr) before the offset to blame, and a gather."""

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK": 256}, num_warps=2), triton.Config({"BLOCK": 512}, num_warps=4)],
    key=["n"],
)
@triton.jit
def tuned_scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)


@triton.jit
def pair_add_kernel(ptrs, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(ptrs[0] + offs) + tl.load(ptrs[1] + offs))


@triton.jit
def shifted_copy_kernel(src, one, dst, off, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(src + off + offs * one)
    tl.store(dst + offs, x)


@triton.jit
def gather_kernel(x_ptr, idx_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    i = tl.load(idx_ptr + offs)
    tl.store(out_ptr + offs, tl.load(x_ptr + i))


DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

if __name__ == "__main__":
    n = 2048
    x = torch.randn(n + 16, device=DEVICE)
    y = torch.empty(n, device=DEVICE)
    tuned_scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
    assert torch.allclose(y, x[:n] * 2, rtol=1.3e-6, atol=1e-5)
    pair_add_kernel[(n // 1024,)]((x, x), y, BLOCK=1024)
    assert torch.allclose(y, x[:n] * 2, rtol=1.3e-6, atol=1e-5)
    shifted_copy_kernel[(n // 1024,)](x, 1, y, 3, BLOCK=1024)
    assert torch.allclose(y, x[3 : n + 3], rtol=1.3e-6, atol=1e-5)
    idx = torch.randint(0, n, (n,), dtype=torch.int32, device=DEVICE)
    gather_kernel[(n // 1024,)](x, idx, y, BLOCK=1024)
    assert torch.allclose(y, x[idx.long()], rtol=1.3e-6, atol=1e-5)
    print("assorted ok")
