"""Exercises 8 to 11: addresses from data (a gather), atomics (a histogram), and two bugs to find:
a race between programs and a lane out of bounds."""

from __future__ import annotations

from typing import Any

from deuteron.learn.catalog import Case, Exercise, Tensors, case, cdiv, next_power_of_2


def _rand(gen: Any, *shape: int) -> Any:
    import torch

    return torch.randn(*shape, generator=gen)


# 8. gather


def _gather_make(c: Case, gen: Any) -> Tensors:
    import torch

    v, d, n = c["V"], c["D"], c["n_idx"]
    idx = torch.randint(-1, v, (n,), generator=gen)
    idx[::3] = -1  # every third slot has no row, whatever the draw
    return {"table": _rand(gen, v, d), "idx": idx, "out": torch.full((n, d), float("nan"))}


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


GATHER = Exercise(
    number=8,
    slug="gather",
    title="A masked gather: addresses that come from data",
    kernel="gather_kernel",
    cases=(case(V=3, D=4, n_idx=1), case(V=10, D=8, n_idx=16), case(V=50, D=20, n_idx=45)),
    make=_gather_make,
    reference=_gather_reference,
    launch=_gather_launch,
    launch_text=(
        "gather_kernel[(cdiv(n_idx, 16),)](table, idx, out, n_idx, D, table.stride(0), out.stride(0), "
        "BLOCK_I=16, BLOCK_D=next_power_of_2(D))"
    ),
    reference_text="out = table[idx.clamp(min=0)] * (idx >= 0)[:, None]   # a row of zeros where idx is -1",
    hints=(
        "Load the indices with mask=slots < n_idx and other=-1: a slot past the end then looks like "
        "'no row'.",
        "The table's lanes: table_ptr + idx[:, None] * stride_table + dims[None, :], allowed only where "
        "(idx[:, None] >= 0) & (dims[None, :] < D); other=0.0 gives the zeros.",
        "Store every slot < n_idx (the zero rows too) with mask (slots[:, None] < n_idx) & "
        "(dims[None, :] < D).",
    ),
    finding_hints={
        "out-of-bounds": "An index of -1 addresses the row before the table: the table's load needs "
        "idx >= 0 in its mask (and dims < D).",
    },
)


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


HISTOGRAM = Exercise(
    number=9,
    slug="histogram",
    title="An atomic histogram",
    kernel="histogram_kernel",
    cases=(case(n=1, bins=4), case(n=64, bins=8), case(n=1000, bins=10)),
    make=_histogram_make,
    reference=_histogram_reference,
    launch=_histogram_launch,
    launch_text="histogram_kernel[(cdiv(n, 64),)](x, counts, n, bins, BLOCK=64)   # counts starts at 0",
    reference_text="counts = torch.bincount(x[(x >= 0) & (x < bins)], minlength=bins)",
    hints=(
        "offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK); values = tl.load(x_ptr + offsets, "
        "mask=offsets < n, other=-1).",
        "A lane counts when (offsets < n) & (values >= 0) & (values < n_bins).",
        "tl.atomic_add(counts_ptr + values, 1, mask=counting): an atomic add never loses a collision.",
    ),
    finding_hints={
        "out-of-bounds": "Values below 0 or at least n_bins address memory outside counts: mask them off.",
        "race": "Two programs add to the same bin with a load and a store: use tl.atomic_add.",
    },
)


# 10. a race to find


def _column_sum_make(c: Case, gen: Any) -> Tensors:
    import torch

    return {"x": _rand(gen, c["M"], c["N"]), "out": torch.zeros(c["N"])}


def _column_sum_launch(kernel: Any, t: Tensors, c: Case) -> None:
    m, n = c["M"], c["N"]
    kernel[(cdiv(m, 16), cdiv(n, 16))](t["x"], t["out"], m, n, t["x"].stride(0), BM=16, BN=16)


COLUMN_SUM_RACE = Exercise(
    number=10,
    slug="column_sum_race",
    title="A race to find: column sums",
    kernel="column_sum_kernel",
    cases=(case(M=5, N=5), case(M=40, N=10), case(M=100, N=33)),
    make=_column_sum_make,
    reference=lambda t: {"out": t["x"].sum(dim=0)},
    launch=_column_sum_launch,
    launch_text="column_sum_kernel[(cdiv(M, 16), cdiv(N, 16))](x, out, M, N, x.stride(0), BM=16, BN=16)",
    reference_text="out = x.sum(dim=0)",
    atol=1e-4,
    hints=(
        "Read the finding: which two programs touch the same element of out, and on which lines?",
        "Programs (0, q) and (1, q) both read out[j], add their partial sum and write it back. On a GPU "
        "both can read before either writes, and one sum is lost.",
        "Replace the load and the store of out by one tl.atomic_add(out_ptr + cols, partial, mask=cols < N).",
    ),
    finding_hints={
        "race": "A load and a store of the same out[j] by several programs is a lost update on a GPU: "
        "make it one tl.atomic_add.",
    },
    buggy_starter=True,
    finding="race",
)


# 11. a bounds bug to find


def _blur_make(c: Case, gen: Any) -> Tensors:
    import torch

    return {"x": _rand(gen, c["n"]), "out": torch.full((c["n"],), float("nan"))}


def _blur_reference(t: Tensors) -> Tensors:
    import torch

    padded = torch.nn.functional.pad(t["x"], (1, 1))
    return {"out": (padded[:-2] + padded[1:-1] + padded[2:]) / 3}


def _blur_launch(kernel: Any, t: Tensors, c: Case) -> None:
    kernel[(cdiv(c["n"], 64),)](t["x"], t["out"], c["n"], BLOCK=64)


BLUR_BOUNDS = Exercise(
    number=11,
    slug="blur_bounds",
    title="A bounds bug to find: a 3-point blur",
    kernel="blur_kernel",
    cases=(case(n=1), case(n=64), case(n=100)),
    make=_blur_make,
    reference=_blur_reference,
    launch=_blur_launch,
    launch_text="blur_kernel[(cdiv(n, 64),)](x, out, n, BLOCK=64)",
    reference_text="out = (x[i - 1] + x[i] + x[i + 1]) / 3 with x zero outside 0 .. n - 1",
    hints=(
        "Read the finding: which load, which program, which element of x?",
        "The lane i = n - 1 loads x[i + 1] = x[n]: its mask allows it, since n - 1 < n.",
        "The right neighbour exists only where i + 1 < n: mask=i + 1 < n.",
    ),
    finding_hints={
        "out-of-bounds": "A mask must say where the address is valid, not where the output is: the "
        "load of x[i + 1] is valid only for i + 1 < n.",
    },
    buggy_starter=True,
    finding="out-of-bounds",
)
