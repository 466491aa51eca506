"""Exercises 1 to 3: one program per block, masks, 2-D blocks, strides, broadcasting."""

from __future__ import annotations

from typing import Any

from deuteron.learn.catalog import Case, Tensors, cdiv, exercise
from deuteron.learn.exercises.tensors import nans, randn

# 1. vector add


def _add_make(c: Case, gen: Any) -> Tensors:
    return {"x": randn(gen, c["n"]), "y": randn(gen, c["n"]), "out": nans(c["n"])}


def _add_launch(kernel: Any, t: Tensors, c: Case) -> None:
    kernel[(cdiv(c["n"], 64),)](t["x"], t["y"], t["out"], c["n"], BLOCK=64)


VECTOR_ADD = exercise("01_vector_add", _add_make, lambda t: {"out": t["x"] + t["y"]}, _add_launch)


# 2. transpose with 2-D blocks


def _transpose_make(c: Case, gen: Any) -> Tensors:
    m, n = c["M"], c["N"]
    # With view=1, x is a transposed view (strides (1, M)): the strides must be used.
    x = randn(gen, n, m).t() if dict(c.sizes).get("view") else randn(gen, m, n)
    return {"x": x, "out": nans(n, m)}


def _transpose_launch(kernel: Any, t: Tensors, c: Case) -> None:
    m, n = c["M"], c["N"]
    x, out = t["x"], t["out"]
    grid = (cdiv(m, 16), cdiv(n, 16))
    kernel[grid](x, out, m, n, x.stride(0), x.stride(1), out.stride(0), out.stride(1), BM=16, BN=16)


TRANSPOSE = exercise("02_transpose", _transpose_make, lambda t: {"out": t["x"].t()}, _transpose_launch)


# 3. outer add


def _outer_make(c: Case, gen: Any) -> Tensors:
    return {"a": randn(gen, c["M"]), "b": randn(gen, c["N"]), "out": nans(c["M"], c["N"])}


def _outer_launch(kernel: Any, t: Tensors, c: Case) -> None:
    m, n = c["M"], c["N"]
    kernel[(cdiv(m, 16), cdiv(n, 16))](t["a"], t["b"], t["out"], m, n, BM=16, BN=16)


OUTER_ADD = exercise(
    "03_outer_add", _outer_make, lambda t: {"out": t["a"][:, None] + t["b"][None, :]}, _outer_launch
)
