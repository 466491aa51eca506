"""A tiled fp16 matmul with a K loop: tensor cores on sm_80 (HMMA) and sm_90 (HGMMA)."""

import sys

import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_bk,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc)


DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

if __name__ == "__main__":
    stages = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    M = N = K = 128
    a = torch.randn(M, K, dtype=torch.float16, device=DEVICE)
    b = torch.randn(K, N, dtype=torch.float16, device=DEVICE)
    c = torch.empty(M, N, dtype=torch.float32, device=DEVICE)
    grid = (M // 64, N // 64)
    matmul_kernel[grid](
        a,
        b,
        c,
        M,
        N,
        K,
        a.stride(0),
        b.stride(0),
        c.stride(0),
        BLOCK_M=64,
        BLOCK_N=64,
        BLOCK_K=32,
        num_stages=stages,
    )
    assert torch.allclose(c, a.float() @ b.float(), atol=1e-2, rtol=1e-2)
    print("matmul ok")
