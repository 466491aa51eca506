"""Exercises 4, 5 and 7: reductions along a row (a loop over chunks, softmax, layer norm)."""

from __future__ import annotations

from typing import Any

from deuteron.learn.catalog import Case, Tensors, exercise, next_power_of_2
from deuteron.learn.exercises.tensors import nans, randn

# 4. row sums


def _row_sum_make(c: Case, gen: Any) -> Tensors:
    return {"x": randn(gen, c["M"], c["N"]), "out": nans(c["M"])}


def _row_sum_launch(kernel: Any, t: Tensors, c: Case) -> None:
    kernel[(c["M"],)](t["x"], t["out"], c["N"], t["x"].stride(0), BLOCK=32)


ROW_SUM = exercise("04_row_sum", _row_sum_make, lambda t: {"out": t["x"].sum(dim=1)}, _row_sum_launch)


# 5. softmax


def _softmax_make(c: Case, gen: Any) -> Tensors:
    return {"x": randn(gen, c["M"], c["N"]) * 3, "out": nans(c["M"], c["N"])}


def _softmax_launch(kernel: Any, t: Tensors, c: Case) -> None:
    x, out = t["x"], t["out"]
    kernel[(c["M"],)](x, out, c["N"], x.stride(0), out.stride(0), BLOCK=32)


SOFTMAX = exercise("05_softmax", _softmax_make, lambda t: {"out": t["x"].softmax(dim=1)}, _softmax_launch)


# 7. layer norm


def _layer_norm_make(c: Case, gen: Any) -> Tensors:
    n = c["N"]
    return {
        "x": randn(gen, c["M"], n) * 2 + 1,
        "w": randn(gen, n),
        "b": randn(gen, n),
        "out": nans(c["M"], n),
    }


def _layer_norm_reference(t: Tensors) -> Tensors:
    import torch

    n = t["x"].shape[1]
    return {"out": torch.nn.functional.layer_norm(t["x"], (n,), t["w"], t["b"], eps=1e-5)}


def _layer_norm_launch(kernel: Any, t: Tensors, c: Case) -> None:
    n = c["N"]
    kernel[(c["M"],)](t["x"], t["w"], t["b"], t["out"], n, t["x"].stride(0), 1e-5, BLOCK=next_power_of_2(n))


LAYER_NORM = exercise("07_layer_norm", _layer_norm_make, _layer_norm_reference, _layer_norm_launch)
