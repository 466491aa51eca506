"""The inner loop of an attention backward pass (dK/dV for one block of keys), written the usual way:
dots inside a @jit helper called from the loop, so ptxas tags the tensor-core instructions with
the helper's or the loop's lines rather than each dot's."""

import torch
import triton
import triton.language as tl


@triton.jit
def _dkdv_step(q, do, k, v, dk, dv, sm_scale):
    qk = tl.dot(k, tl.trans(q))
    p = tl.math.exp2(qk * sm_scale)
    dv += tl.dot(p.to(tl.float16), do)
    dp = tl.dot(v, tl.trans(do))
    ds = p * dp
    dk += tl.dot(ds.to(tl.float16), q)
    return dk, dv


@triton.jit
def attn_bwd_dkdv_kernel(Q, K, V, DO, DK, DV, N_CTX, sm_scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         HEAD_DIM: tl.constexpr):
    start_n = tl.program_id(0) * BLOCK_N
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    k = tl.load(K + offs_n[:, None] * HEAD_DIM + offs_d[None, :])
    v = tl.load(V + offs_n[:, None] * HEAD_DIM + offs_d[None, :])
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    for start_m in range(0, N_CTX, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        q = tl.load(Q + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
        do = tl.load(DO + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
        dk, dv = _dkdv_step(q, do, k, v, dk, dv, sm_scale)
    tl.store(DK + offs_n[:, None] * HEAD_DIM + offs_d[None, :], dk.to(tl.float16))
    tl.store(DV + offs_n[:, None] * HEAD_DIM + offs_d[None, :], dv.to(tl.float16))


if __name__ == "__main__":
    device = triton.runtime.driver.active.get_active_torch_device()  # as Triton's tutorials ask
    n_ctx, d = 256, 64
    q, k, v, do = (torch.randn(n_ctx, d, dtype=torch.float16, device=device) for _ in range(4))
    dk, dv = torch.empty_like(k), torch.empty_like(v)
    grid = (n_ctx // 64,)
    attn_bwd_dkdv_kernel[grid](
        q, k, v, do, dk, dv, n_ctx, 0.125, BLOCK_M=64, BLOCK_N=64, HEAD_DIM=d, num_warps=4, num_stages=2
    )
