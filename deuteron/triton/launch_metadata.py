"""A kernel's ``launch_metadata`` hook, evaluated for an interpreted launch as Triton would on a GPU:
``hook(grid, metadata, bound arguments)`` with the caller's defaults filled in."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any


def thunk(
    jit_fn: Any, grid: tuple[int, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Callable[[], dict[str, Any] | None] | None:
    hook = getattr(jit_fn, "kwargs", {}).get("launch_metadata")
    if hook is None:
        return None

    def evaluate() -> dict[str, Any] | None:
        import inspect

        names = list(getattr(jit_fn, "arg_names", []))
        bound: dict[str, Any] = dict(zip(names, args, strict=False))
        bound.update({k: v for k, v in kwargs.items() if k in names})
        # Defaults the caller left out, as Triton's own binding would fill them in.
        for p in inspect.signature(jit_fn.fn).parameters.values():
            if p.name not in bound and p.default is not inspect.Parameter.empty:
                bound[p.name] = p.default
        meta = SimpleNamespace(
            name=jit_fn.fn.__name__,
            num_warps=kwargs.get("num_warps", 4),
            num_stages=kwargs.get("num_stages", 3),
        )
        result = hook(grid, meta, bound)
        return dict(result) if result else None

    return evaluate
