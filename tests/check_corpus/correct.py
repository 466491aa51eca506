"""Correct kernels: the sanitizer must report nothing for any of them.

Each case also checks its output against torch, so a kernel that silently computed garbage (and so
might hide an access pattern the sanitizer should have seen) fails loudly instead. Sizes are never
multiples of the block sizes, so every kernel leans on its masks to stay in bounds; a sanitizer that
ignored masks would report false positives here.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import triton
import triton.language as tl

from examples.vector_add import add_kernel

# --- softmax ---------------------------------------------------------------------------------------


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=float("-inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    y = num / tl.sum(num, axis=0)
    tl.store(y_ptr + row * y_row_stride + cols, y, mask=mask)


def softmax() -> None:
    torch.manual_seed(0)
    n_rows, n_cols = 9, 45
    x = torch.randn(n_rows, n_cols)
    y = torch.empty_like(x)
    block = triton.next_power_of_2(n_cols)
    assert block > n_cols
    softmax_kernel[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK=block)
    assert torch.allclose(y, torch.softmax(x, dim=1), rtol=1.3e-6, atol=1e-5)


# --- layernorm -------------------------------------------------------------------------------------


@triton.jit
def layernorm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, row_stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    y_row = y_ptr + row * row_stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_row + cols, mask=cols < N, other=0.0)
    mean = tl.sum(acc, axis=0) / N
    acc_var = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=0.0)
        d = tl.where(mask, x - mean, 0.0)
        acc_var += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc_var, axis=0) / N + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=0.0)
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        tl.store(y_row + cols, (x - mean) * rstd * w + b, mask=mask)


def layernorm() -> None:
    torch.manual_seed(0)
    m, n, eps = 7, 50, 1e-5
    block = 16  # smaller than the row, so each loop runs four times with a ragged last step
    x = torch.randn(m, n)
    w = torch.randn(n)
    b = torch.randn(n)
    y = torch.empty_like(x)
    mean = torch.empty(m)
    rstd = torch.empty(m)
    layernorm_kernel[(m,)](x, y, w, b, mean, rstd, x.stride(0), n, eps, BLOCK=block)
    assert torch.allclose(y, torch.nn.functional.layer_norm(x, (n,), w, b, eps), rtol=1.3e-6, atol=1e-5)
    assert torch.allclose(mean, x.mean(dim=1), rtol=1.3e-6, atol=1e-5)
    assert torch.allclose(rstd, torch.rsqrt(x.var(dim=1, unbiased=False) + eps), rtol=1.3e-6, atol=1e-5)


# --- matmul ----------------------------------------------------------------------------------------


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(
            a_ptr + rm[:, None] * stride_am + ks[None, :] * stride_ak,
            mask=(rm[:, None] < M) & (ks[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + ks[:, None] * stride_bk + rn[None, :] * stride_bn,
            mask=(ks[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(
        c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn,
        acc,
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


def matmul() -> None:
    torch.manual_seed(0)
    m, n, k = 45, 37, 70
    bm = bn = bk = 16
    a = torch.randn(m, k)
    b = torch.randn(k, n)
    c = torch.empty(m, n)
    grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
    matmul_kernel[grid](a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(), BM=bm, BN=bn, BK=bk)
    assert torch.allclose(c, a @ b, atol=1e-4, rtol=1e-4)


# --- histogram -------------------------------------------------------------------------------------


@triton.jit
def histogram_kernel(x_ptr, bins_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    idx = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.atomic_add(bins_ptr + idx, 1, mask=mask)


def histogram() -> None:
    torch.manual_seed(0)
    n_bins, n, block = 37, 1000, 128
    # Every bin value appears at least once, spread over all programs, so every bin is written and
    # several programs contend on the same bins.
    values = torch.cat([torch.arange(n_bins), torch.randint(0, n_bins, (n - n_bins,))])
    x = values[torch.randperm(n)].to(torch.int32)
    bins = torch.zeros(n_bins, dtype=torch.int32)
    histogram_kernel[(triton.cdiv(n, block),)](x, bins, n, BLOCK=block)
    assert torch.allclose(bins, torch.bincount(x.long(), minlength=n_bins).to(torch.int32))
    assert bool((bins > 0).all())


# --- masked_tail -----------------------------------------------------------------------------------


@triton.jit
def scale_shift_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 3.0 + 1.0, mask=mask)


@triton.jit
def copy_2d_kernel(
    x_ptr, out_ptr, R, C, stride_xr, stride_xc, stride_or, stride_oc, BR: tl.constexpr, BC: tl.constexpr
):
    rows = tl.program_id(0) * BR + tl.arange(0, BR)
    cols = tl.program_id(1) * BC + tl.arange(0, BC)
    mask = (rows[:, None] < R) & (cols[None, :] < C)
    x = tl.load(x_ptr + rows[:, None] * stride_xr + cols[None, :] * stride_xc, mask=mask)
    tl.store(out_ptr + rows[:, None] * stride_or + cols[None, :] * stride_oc, x, mask=mask)


def masked_tail() -> None:
    torch.manual_seed(0)
    n, block = 1000, 256  # the last program's lanes 1000..1023 would be past the end unmasked
    x = torch.randn(n)
    out = torch.empty(n)
    scale_shift_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block)
    assert torch.allclose(out, x * 3.0 + 1.0, rtol=1.3e-6, atol=1e-5)

    # A transposed view: strides (1, R), so a row-major walk of it jumps around its storage, and
    # masked-off lanes of the ragged edge blocks would land far outside it.
    r, c, br, bc = 19, 23, 8, 16
    base = torch.randn(c, r)
    xt = base.t()
    assert not xt.is_contiguous()
    out2 = torch.empty(r, c)
    grid = (triton.cdiv(r, br), triton.cdiv(c, bc))
    copy_2d_kernel[grid](xt, out2, r, c, *xt.stride(), *out2.stride(), BR=br, BC=bc)
    assert torch.allclose(out2, xt.contiguous(), rtol=1.3e-6, atol=1e-5)


# --- attention -------------------------------------------------------------------------------------


@triton.jit
def attention_fwd_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    seq_len,
    scale,
    stride_b,
    stride_s,
    stride_d,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # q, k, v and o share one (batch*heads, seq, head_dim) layout, hence one set of strides.
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    base = bh * stride_b
    row_mask = offs_m < seq_len
    q = tl.load(
        q_ptr + base + offs_m[:, None] * stride_s + offs_d[None, :] * stride_d,
        mask=row_mask[:, None],
        other=0.0,
    )
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, seq_len, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        col_mask = offs_n < seq_len
        kt = tl.load(
            k_ptr + base + offs_n[None, :] * stride_s + offs_d[:, None] * stride_d,
            mask=col_mask[None, :],
            other=0.0,
        )
        qk = tl.dot(q, kt, input_precision="ieee") * scale
        qk = tl.where(col_mask[None, :], qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(qk - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(
            v_ptr + base + offs_n[:, None] * stride_s + offs_d[None, :] * stride_d,
            mask=col_mask[:, None],
            other=0.0,
        )
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(
        o_ptr + base + offs_m[:, None] * stride_s + offs_d[None, :] * stride_d,
        out,
        mask=row_mask[:, None],
    )


def attention() -> None:
    torch.manual_seed(0)
    bh, seq, head_dim, block_m, block_n = 2, 40, 16, 16, 16
    q = torch.randn(bh, seq, head_dim)
    k = torch.randn(bh, seq, head_dim)
    v = torch.randn(bh, seq, head_dim)
    o = torch.empty_like(q)
    scale = 1.0 / math.sqrt(head_dim)
    grid = (triton.cdiv(seq, block_m), bh)
    attention_fwd_kernel[grid](
        q, k, v, o, seq, scale, *q.stride(), HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n
    )
    ref = torch.softmax(q @ k.transpose(1, 2) * scale, dim=-1) @ v
    assert torch.allclose(o, ref, atol=1e-5, rtol=1e-4)


# --- inplace_scale ---------------------------------------------------------------------------------


@triton.jit
def inplace_scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(x_ptr + offs, x * 2.0, mask=mask)


def inplace_scale() -> None:
    torch.manual_seed(0)
    n, block = 777, 128
    x = torch.randn(n)
    expected = x * 2.0
    inplace_scale_kernel[(triton.cdiv(n, block),)](x, n, BLOCK=block)
    assert torch.allclose(x, expected, rtol=1.3e-6, atol=1e-5)


# --- vector_add: the README example's own kernel -------------------------------------------------


def vector_add() -> None:
    torch.manual_seed(0)
    n, block = 999, 128
    x = torch.randn(n)
    y = torch.randn(n)
    out = torch.empty(n)
    add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)  # the README example's kernel
    assert torch.allclose(out, x + y, rtol=1.3e-6, atol=1e-5)


CASES: dict[str, Callable[[], None]] = {
    "softmax": softmax,
    "layernorm": layernorm,
    "matmul": matmul,
    "histogram": histogram,
    "masked_tail": masked_tail,
    "attention": attention,
    "inplace_scale": inplace_scale,
    "vector_add": vector_add,
}
