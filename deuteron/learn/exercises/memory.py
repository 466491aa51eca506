"""Exercises 8 to 11: addresses from data (a gather), atomics (a histogram), and two bugs to find:
a race between programs and a lane out of bounds."""

from __future__ import annotations

from typing import Any

from deuteron.learn.catalog import Case, Tensors, cdiv, exercise, next_power_of_2
from deuteron.learn.exercises.tensors import nans, randn

# 8. gather


def _gather_make(c: Case, gen: Any) -> Tensors:
    import torch

    v, d, n = c["V"], c["D"], c["n_idx"]
    idx = torch.randint(-1, v, (n,), generator=gen)
    idx[::3] = -1  # every third slot has no row, whatever the draw
    return {"table": randn(gen, v, d), "idx": idx, "out": nans(n, d)}


def _gather_reference(t: Tensors) -> Tensors:
    idx = t["idx"]
    rows = t["table"][idx.clamp(min=0)]
    return {"out": rows * (idx >= 0)[:, None]}


def _gather_launch(kernel: Any, t: Tensors, c: Case) -> None:
    table, out = t["table"], t["out"]
    n, d = c["n_idx"], c["D"]
    kernel[(cdiv(n, 16),)](
        table, t["idx"], out, n, d, table.stride(0), out.stride(0), BLOCK_I=16, BLOCK_D=next_power_of_2(d)
    )


GATHER = exercise("08_gather", _gather_make, _gather_reference, _gather_launch)


# 9. histogram


def _histogram_make(c: Case, gen: Any) -> Tensors:
    import torch

    bins = c["bins"]
    x = torch.randint(-2, bins + 3, (c["n"],), generator=gen, dtype=torch.int32)
    return {"x": x, "counts": torch.zeros(bins, dtype=torch.int32)}


def _histogram_reference(t: Tensors) -> Tensors:
    import torch

    bins = t["counts"].shape[0]
    x = t["x"]
    inside = x[(x >= 0) & (x < bins)].long()
    return {"counts": torch.bincount(inside, minlength=bins).to(torch.int32)}


def _histogram_launch(kernel: Any, t: Tensors, c: Case) -> None:
    kernel[(cdiv(c["n"], 64),)](t["x"], t["counts"], c["n"], c["bins"], BLOCK=64)


HISTOGRAM = exercise("09_histogram", _histogram_make, _histogram_reference, _histogram_launch)


# 10. a race to find


def _column_sum_make(c: Case, gen: Any) -> Tensors:
    import torch

    return {"x": randn(gen, c["M"], c["N"]), "out": torch.zeros(c["N"])}


def _column_sum_launch(kernel: Any, t: Tensors, c: Case) -> None:
    m, n = c["M"], c["N"]
    kernel[(cdiv(m, 16), cdiv(n, 16))](t["x"], t["out"], m, n, t["x"].stride(0), BM=16, BN=16)


COLUMN_SUM_RACE = exercise(
    "10_column_sum_race", _column_sum_make, lambda t: {"out": t["x"].sum(dim=0)}, _column_sum_launch
)


# 11. a bounds bug to find


def _blur_make(c: Case, gen: Any) -> Tensors:
    return {"x": randn(gen, c["n"]), "out": nans(c["n"])}


def _blur_reference(t: Tensors) -> Tensors:
    import torch

    padded = torch.nn.functional.pad(t["x"], (1, 1))
    return {"out": (padded[:-2] + padded[1:-1] + padded[2:]) / 3}


def _blur_launch(kernel: Any, t: Tensors, c: Case) -> None:
    kernel[(cdiv(c["n"], 64),)](t["x"], t["out"], c["n"], BLOCK=64)


BLUR_BOUNDS = exercise("11_blur_bounds", _blur_make, _blur_reference, _blur_launch)
