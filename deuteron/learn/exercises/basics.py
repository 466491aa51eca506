"""Exercises 1 to 3: one program per block, masks, 2-D blocks, strides, broadcasting."""

from __future__ import annotations

from typing import Any

from deuteron.learn.catalog import Case, Exercise, Tensors, case, cdiv


def _nan(*shape: int) -> Any:
    import torch

    return torch.full(shape, float("nan"))


def _rand(gen: Any, *shape: int) -> Any:
    import torch

    return torch.randn(*shape, generator=gen)


# 1. vector add


def _add_make(c: Case, gen: Any) -> Tensors:
    return {"x": _rand(gen, c["n"]), "y": _rand(gen, c["n"]), "out": _nan(c["n"])}


def _add_launch(kernel: Any, t: Tensors, c: Case) -> None:
    kernel[(cdiv(c["n"], 64),)](t["x"], t["y"], t["out"], c["n"], BLOCK=64)


VECTOR_ADD = Exercise(
    number=1,
    slug="vector_add",
    title="Vector add: one program per block, and a mask",
    kernel="add_kernel",
    cases=(case(n=1), case(n=64), case(n=1000)),
    make=_add_make,
    reference=lambda t: {"out": t["x"] + t["y"]},
    launch=_add_launch,
    launch_text="add_kernel[(cdiv(n, 64),)](x, y, out, n, BLOCK=64)",
    reference_text="out = x + y",
    hints=(
        "Program p owns the elements p * BLOCK ... p * BLOCK + BLOCK - 1: "
        "offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK).",
        "With n = 1000 and BLOCK = 64 the last program's offsets reach 1023: mask = offsets < n, "
        "and pass mask=mask to both loads and the store.",
        "tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, "
        "mask=mask), mask=mask)",
    ),
    finding_hints={
        "out-of-bounds": "The last block runs past n: both loads and the store need mask=offsets < n."
    },
)


# 2. transpose with 2-D blocks


def _transpose_make(c: Case, gen: Any) -> Tensors:
    m, n = c["M"], c["N"]
    # With view=1, x is a transposed view (strides (1, M)): the strides must be used.
    x = _rand(gen, n, m).t() if dict(c.sizes).get("view") else _rand(gen, m, n)
    return {"x": x, "out": _nan(n, m)}


def _transpose_launch(kernel: Any, t: Tensors, c: Case) -> None:
    m, n = c["M"], c["N"]
    x, out = t["x"], t["out"]
    grid = (cdiv(m, 16), cdiv(n, 16))
    kernel[grid](x, out, m, n, x.stride(0), x.stride(1), out.stride(0), out.stride(1), BM=16, BN=16)


TRANSPOSE = Exercise(
    number=2,
    slug="transpose",
    title="Transpose: 2-D blocks and strides",
    kernel="transpose_kernel",
    cases=(case(M=16, N=16), case(M=5, N=40), case(M=37, N=19, view=1)),
    make=_transpose_make,
    reference=lambda t: {"out": t["x"].t()},
    launch=_transpose_launch,
    launch_text=(
        "transpose_kernel[(cdiv(M, 16), cdiv(N, 16))](x, out, M, N, x.stride(0), x.stride(1), "
        "out.stride(0), out.stride(1), BM=16, BN=16)  # view=1: x is x0.t(), strides (1, M)"
    ),
    reference_text="out = x.t()",
    hints=(
        "rows = tl.program_id(0) * BM + tl.arange(0, BM); cols = tl.program_id(1) * BN + tl.arange(0, BN).",
        "The tile's addresses: x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn, "
        "masked with (rows[:, None] < M) & (cols[None, :] < N).",
        "Store the same (BM, BN) tile at out_ptr + cols[None, :] * stride_om + rows[:, None] * stride_on, "
        "with the same mask.",
    ),
    finding_hints={
        "out-of-bounds": "A tile on the right or bottom edge runs past M or N: mask both dimensions, "
        "on the load and on the store.",
        "outside-view": "The lane is inside x's memory but not in the (M, N) view: multiply by the "
        "strides you are given, and mask both dimensions.",
    },
)


# 3. outer add


def _outer_make(c: Case, gen: Any) -> Tensors:
    return {"a": _rand(gen, c["M"]), "b": _rand(gen, c["N"]), "out": _nan(c["M"], c["N"])}


def _outer_launch(kernel: Any, t: Tensors, c: Case) -> None:
    m, n = c["M"], c["N"]
    kernel[(cdiv(m, 16), cdiv(n, 16))](t["a"], t["b"], t["out"], m, n, BM=16, BN=16)


OUTER_ADD = Exercise(
    number=3,
    slug="outer_add",
    title="Outer add: broadcasting two 1-D blocks into a 2-D one",
    kernel="outer_add_kernel",
    cases=(case(M=1, N=1), case(M=16, N=16), case(M=20, N=45)),
    make=_outer_make,
    reference=lambda t: {"out": t["a"][:, None] + t["b"][None, :]},
    launch=_outer_launch,
    launch_text="outer_add_kernel[(cdiv(M, 16), cdiv(N, 16))](a, b, out, M, N, BM=16, BN=16)",
    reference_text="out = a[:, None] + b[None, :]",
    hints=(
        "rows = tl.program_id(0) * BM + tl.arange(0, BM) index a; cols = tl.program_id(1) * BN + "
        "tl.arange(0, BN) index b.",
        "Load a with mask=rows < M and b with mask=cols < N; a_block[:, None] + b_block[None, :] "
        "is the tile.",
        "Store at out_ptr + rows[:, None] * N + cols[None, :] with mask=(rows[:, None] < M) & "
        "(cols[None, :] < N).",
    ),
    finding_hints={
        "out-of-bounds": "Each access needs its own mask: a's load rows < M, b's load cols < N, and "
        "the store both.",
    },
)
