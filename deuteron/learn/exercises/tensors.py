"""The tensors every exercise's ``make`` builds: random inputs from the case's seeded generator,
outputs filled with NaN so that an element the kernel misses shows. torch is imported on first use:
listing the exercises must not need it."""

from __future__ import annotations

from typing import Any


def randn(gen: Any, *shape: int) -> Any:
    import torch

    return torch.randn(*shape, generator=gen)


def nans(*shape: int) -> Any:
    import torch

    return torch.full(shape, float("nan"))
