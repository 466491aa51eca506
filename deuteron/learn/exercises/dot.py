"""Exercises 6 and 12: tiles multiplied with ``tl.dot``: a tiled matmul, a small fused attention."""

from __future__ import annotations

import math
from typing import Any

from deuteron.learn.catalog import Case, Tensors, cdiv, exercise
from deuteron.learn.exercises.tensors import nans, randn

# 6. matmul


def _matmul_make(c: Case, gen: Any) -> Tensors:
    m, n, k = c["M"], c["N"], c["K"]
    return {"a": randn(gen, m, k), "b": randn(gen, k, n), "c": nans(m, n)}


def _matmul_launch(kernel: Any, t: Tensors, c: Case) -> None:
    a, b, out = t["a"], t["b"], t["c"]
    m, n, k = c["M"], c["N"], c["K"]
    kernel[(cdiv(m, 16), cdiv(n, 16))](
        a, b, out, m, n, k, *a.stride(), *b.stride(), *out.stride(), BM=16, BN=16, BK=16
    )


MATMUL = exercise("06_matmul", _matmul_make, lambda t: {"c": t["a"] @ t["b"]}, _matmul_launch)


# 12. attention


def _attention_make(c: Case, gen: Any) -> Tensors:
    m, n = c["M"], c["N"]
    return {"q": randn(gen, m, 16), "k": randn(gen, n, 16), "v": randn(gen, n, 16), "out": nans(m, 16)}


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


ATTENTION = exercise("12_attention", _attention_make, _attention_reference, _attention_launch)
