"""Exercises 4, 5 and 7: reductions along a row (a loop over chunks, softmax, layer norm)."""

from __future__ import annotations

from typing import Any

from deuteron.learn.catalog import Case, Exercise, Tensors, case, next_power_of_2


def _rand(gen: Any, *shape: int) -> Any:
    import torch

    return torch.randn(*shape, generator=gen)


def _nan(*shape: int) -> Any:
    import torch

    return torch.full(shape, float("nan"))


# 4. row sums


def _row_sum_make(c: Case, gen: Any) -> Tensors:
    return {"x": _rand(gen, c["M"], c["N"]), "out": _nan(c["M"])}


def _row_sum_launch(kernel: Any, t: Tensors, c: Case) -> None:
    kernel[(c["M"],)](t["x"], t["out"], c["N"], t["x"].stride(0), BLOCK=32)


ROW_SUM = Exercise(
    number=4,
    slug="row_sum",
    title="Row sums: a reduction in a loop over chunks",
    kernel="row_sum_kernel",
    cases=(case(M=1, N=1), case(M=4, N=32), case(M=7, N=100)),
    make=_row_sum_make,
    reference=lambda t: {"out": t["x"].sum(dim=1)},
    launch=_row_sum_launch,
    launch_text="row_sum_kernel[(M,)](x, out, N, x.stride(0), BLOCK=32)",
    reference_text="out = x.sum(dim=1)",
    atol=1e-4,
    hints=(
        "total = tl.zeros((BLOCK,), dtype=tl.float32), then for start in range(0, N, BLOCK): "
        "cols = start + tl.arange(0, BLOCK).",
        "Load x_ptr + row * stride_row + cols with mask=cols < N and other=0.0, so the lanes past N "
        "add nothing, and add it to total.",
        "After the loop: tl.store(out_ptr + row, tl.sum(total, axis=0)).",
    ),
    finding_hints={"out-of-bounds": "The last chunk runs past N: mask the load with cols < N."},
)


# 5. softmax


def _softmax_make(c: Case, gen: Any) -> Tensors:
    return {"x": _rand(gen, c["M"], c["N"]) * 3, "out": _nan(c["M"], c["N"])}


def _softmax_launch(kernel: Any, t: Tensors, c: Case) -> None:
    x, out = t["x"], t["out"]
    kernel[(c["M"],)](x, out, c["N"], x.stride(0), out.stride(0), BLOCK=32)


SOFTMAX = Exercise(
    number=5,
    slug="softmax",
    title="Softmax of rows longer than the block",
    kernel="softmax_kernel",
    cases=(case(M=1, N=1), case(M=3, N=32), case(M=6, N=77)),
    make=_softmax_make,
    reference=lambda t: {"out": t["x"].softmax(dim=1)},
    launch=_softmax_launch,
    launch_text="softmax_kernel[(M,)](x, out, N, x.stride(0), out.stride(0), BLOCK=32)",
    reference_text="out = x.softmax(dim=1)",
    atol=1e-6,
    rtol=1e-4,
    hints=(
        "Three loops over range(0, N, BLOCK), each with cols = start + tl.arange(0, BLOCK), mask cols < N.",
        "Pass 1 keeps a block of maxima: biggest = tl.maximum(biggest, tl.load(..., other=float('-inf'))); "
        "then peak = tl.max(biggest, axis=0).",
        "Pass 2 sums tl.exp(x - peak) (a masked lane loaded as -inf gives exp(-inf) = 0); pass 3 "
        "stores tl.exp(x - peak) / total.",
    ),
    finding_hints={
        "out-of-bounds": "Every load and store of a chunk needs mask=cols < N.",
        "nan": "A NaN from finite numbers: inf - inf or 0 / 0. Did a masked lane take part in the "
        "maximum or the sum?",
    },
)


# 7. layer norm


def _layer_norm_make(c: Case, gen: Any) -> Tensors:
    n = c["N"]
    return {
        "x": _rand(gen, c["M"], n) * 2 + 1,
        "w": _rand(gen, n),
        "b": _rand(gen, n),
        "out": _nan(c["M"], n),
    }


def _layer_norm_reference(t: Tensors) -> Tensors:
    import torch

    n = t["x"].shape[1]
    return {"out": torch.nn.functional.layer_norm(t["x"], (n,), t["w"], t["b"], eps=1e-5)}


def _layer_norm_launch(kernel: Any, t: Tensors, c: Case) -> None:
    n = c["N"]
    kernel[(c["M"],)](t["x"], t["w"], t["b"], t["out"], n, t["x"].stride(0), 1e-5, BLOCK=next_power_of_2(n))


LAYER_NORM = Exercise(
    number=7,
    slug="layer_norm",
    title="Layer norm: keep the padding out of the statistics",
    kernel="layer_norm_kernel",
    cases=(case(M=1, N=1), case(M=4, N=16), case(M=5, N=50)),
    make=_layer_norm_make,
    reference=_layer_norm_reference,
    launch=_layer_norm_launch,
    launch_text="layer_norm_kernel[(M,)](x, w, b, out, N, x.stride(0), 1e-5, BLOCK=next_power_of_2(N))",
    reference_text="out = torch.nn.functional.layer_norm(x, (N,), w, b, eps=1e-5)",
    atol=1e-4,
    rtol=1e-4,
    hints=(
        "cols = tl.arange(0, BLOCK); mask = cols < N; x = tl.load(..., mask=mask, other=0.0); "
        "mean = tl.sum(x, axis=0) / N.",
        "centred = tl.where(mask, x - mean, 0.0): the padding lanes would otherwise add mean^2 each "
        "to the variance; variance = tl.sum(centred * centred, axis=0) / N.",
        "out = centred / tl.sqrt(variance + eps) * w + b, with w and b loaded with the same mask.",
    ),
    finding_hints={"out-of-bounds": "BLOCK can be larger than N: mask x, w, b and the store with cols < N."},
)
