"""Exercises 6 and 12: tiles multiplied with ``tl.dot``: a tiled matmul, a small fused attention."""

from __future__ import annotations

import math
from typing import Any

from deuteron.learn.catalog import Case, Exercise, Tensors, case, cdiv


def _rand(gen: Any, *shape: int) -> Any:
    import torch

    return torch.randn(*shape, generator=gen)


def _nan(*shape: int) -> Any:
    import torch

    return torch.full(shape, float("nan"))


# 6. matmul


def _matmul_make(c: Case, gen: Any) -> Tensors:
    m, n, k = c["M"], c["N"], c["K"]
    return {"a": _rand(gen, m, k), "b": _rand(gen, k, n), "c": _nan(m, n)}


def _matmul_launch(kernel: Any, t: Tensors, c: Case) -> None:
    a, b, out = t["a"], t["b"], t["c"]
    m, n, k = c["M"], c["N"], c["K"]
    kernel[(cdiv(m, 16), cdiv(n, 16))](
        a, b, out, m, n, k, *a.stride(), *b.stride(), *out.stride(), BM=16, BN=16, BK=16
    )


MATMUL = Exercise(
    number=6,
    slug="matmul",
    title="Matrix multiply with tiling",
    kernel="matmul_kernel",
    cases=(case(M=16, N=16, K=16), case(M=33, N=20, K=47), case(M=5, N=40, K=3)),
    make=_matmul_make,
    reference=lambda t: {"c": t["a"] @ t["b"]},
    launch=_matmul_launch,
    launch_text=(
        "matmul_kernel[(cdiv(M, 16), cdiv(N, 16))](a, b, c, M, N, K, a.stride(0), a.stride(1), "
        "b.stride(0), b.stride(1), c.stride(0), c.stride(1), BM=16, BN=16, BK=16)"
    ),
    reference_text="c = a @ b",
    atol=1e-3,
    rtol=1e-3,
    hints=(
        "rows = tl.program_id(0) * BM + tl.arange(0, BM), cols likewise from program_id(1); "
        "acc = tl.zeros((BM, BN), dtype=tl.float32).",
        "In the loop, ks = start + tl.arange(0, BK); a's tile is at a_ptr + rows[:, None] * stride_am "
        "+ ks[None, :] * stride_ak, b's at b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn.",
        "Mask a's tile with (rows[:, None] < M) & (ks[None, :] < K) and b's with (ks[:, None] < K) & "
        "(cols[None, :] < N), both with other=0.0 (a zero adds nothing to a dot product).",
    ),
    finding_hints={
        "out-of-bounds": "A tile on an edge crosses M, N or K (K too: 47 is not a multiple of 16): "
        "mask every dimension a tile can cross, with other=0.0.",
    },
)


# 12. attention


def _attention_make(c: Case, gen: Any) -> Tensors:
    m, n = c["M"], c["N"]
    return {"q": _rand(gen, m, 16), "k": _rand(gen, n, 16), "v": _rand(gen, n, 16), "out": _nan(m, 16)}


def _attention_reference(t: Tensors) -> Tensors:
    scores = t["q"] @ t["k"].t() / math.sqrt(16)
    return {"out": scores.softmax(dim=1) @ t["v"]}


def _attention_launch(kernel: Any, t: Tensors, c: Case) -> None:
    q, k, v, out = t["q"], t["k"], t["v"], t["out"]
    m, n = c["M"], c["N"]
    kernel[(cdiv(m, 16),)](
        q, k, v, out, m, n, 1 / math.sqrt(16), q.stride(0), k.stride(0), v.stride(0), out.stride(0),
        D=16, BM=16, BN=16,
    )  # fmt: skip


ATTENTION = Exercise(
    number=12,
    slug="attention",
    title="A small fused attention forward (online softmax)",
    kernel="attention_kernel",
    cases=(case(M=16, N=16), case(M=20, N=37), case(M=1, N=5)),
    make=_attention_make,
    reference=_attention_reference,
    launch=_attention_launch,
    launch_text=(
        "attention_kernel[(cdiv(M, 16),)](q, k, v, out, M, N, 1 / sqrt(16), q.stride(0), k.stride(0), "
        "v.stride(0), out.stride(0), D=16, BM=16, BN=16)"
    ),
    reference_text="out = (q @ k.t() / sqrt(16)).softmax(dim=1) @ v   # D = 16",
    atol=1e-4,
    rtol=1e-3,
    hints=(
        "q = tl.load(q_ptr + rows[:, None] * stride_q + dims[None, :], mask=rows[:, None] < M, other=0.0) "
        "with dims = tl.arange(0, D); load each key block the same way (mask keys[:, None] < N, other=0.0).",
        "scores = tl.dot(q, tl.trans(k)) * scale, then tl.where(keys[None, :] < N, scores, float('-inf')) "
        "so the keys past N weigh nothing.",
        "new_max = tl.maximum(m, tl.max(scores, axis=1)); p = tl.exp(scores - new_max[:, None]); "
        "alpha = tl.exp(m - new_max); l = l * alpha + tl.sum(p, axis=1); acc = acc * alpha[:, None] + "
        "tl.dot(p, v); m = new_max.",
    ),
    finding_hints={
        "out-of-bounds": "The last key block runs past N and the last query block past M: mask the "
        "loads of k and v with keys < N, and q's load and the store with rows < M.",
        "nan": "exp(-inf - (-inf)) is NaN: a row whose scores are all -inf. Keys past N get -inf "
        "scores, but each block of a row must keep a finite maximum (start the running max at -inf "
        "and take the max with the block's).",
    },
)
