"""A launch run for its integer arithmetic only: some programs of a kernel, at argument values (and
a grid) too large to run on the CPU, without touching memory.

While a probe runs (``CHECKING.probe``), :mod:`.adapter`'s memory operations do nothing: loads and
atomics return zeros, stores are dropped; so a pointer may point anywhere and the real buffers'
sizes do not matter. Everything else the kernel computes is computed as usual, and the integer
checks of :mod:`.integers` tell the probe each int32 op that wraps. ``deuteron check --at-size``
(:mod:`deuteron.check.at_size`) uses it: the sanitizer is not told of these programs (no launch, no
access), so no other check sees them.

A probe is any object with ``integer_fault(fault)``, ``program(pid)`` (a program starts) and
``tick()`` (called at every integer or float op: it may raise to stop a probe that runs too long).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

import numpy as np

from deuteron.triton.interpreter.checking import CHECKING
from deuteron.triton.interpreter.profiling import PROFILING


def _interp() -> Any:
    from triton.runtime import interpreter

    return interpreter


def constexpr_names(fn: Any) -> list[str]:
    """The kernel's ``tl.constexpr`` parameters (``fn``: the interpreter's InterpretedFunction)."""
    interp = _interp()
    return list(interp.GridExecutor(fn.rewrite(), fn.arg_names, (1,), []).constexprs)


def bound_arguments(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The launch's arguments by parameter name, as the interpreter binds them (launch options
    that are not parameters, num_warps say, left out)."""
    target = fn.rewrite()
    spec = inspect.getfullargspec(target)
    kept = {k: v for k, v in kwargs.items() if k in spec.args or k in spec.kwonlyargs}
    return dict(inspect.getcallargs(target, *args, **kept))


class Runner:
    """Runs programs of one kernel as probes (a context manager: Triton's language is patched for
    the interpreter once, for every run inside it)."""

    def __init__(self, fn: Any) -> None:
        self.interp = _interp()
        self.fn = fn
        self.target = fn.rewrite()
        self.constexprs = set(constexpr_names(fn))
        self.scope: Any = None

    def __enter__(self) -> Runner:
        self.scope = self.interp._patch_lang(self.target)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.scope is not None:
            self.scope.restore()
            self.scope = None

    def run(
        self,
        bound: dict[str, Any],
        grid: tuple[int, int, int],
        programs: Iterable[tuple[int, int, int]],
        probe: Any,
    ) -> None:
        """Run ``programs`` with these arguments in a grid of ``grid``, memory untouched; the
        integer faults go to ``probe``. Raises what the kernel raises (or the probe's ``tick``)."""
        interp, builder = self.interp, self.interp.interpreter_builder
        s, counting = CHECKING, PROFILING
        saved = s.probe, s.launch_checked, counting.counter
        s.probe, s.launch_checked = probe, False
        counting.counter = None  # a profile counts the launch that ran, not the probe's programs
        try:
            converted = {
                name: value if name in self.constexprs else interp._implicit_cvt(value)
                for name, value in bound.items()
            }
            builder.set_grid_dim(*grid)
            for pid in programs:
                builder.set_grid_idx(*pid)
                probe.program(pid)
                self.target(**converted)
        finally:
            s.probe, s.launch_checked, counting.counter = saved


# --- memory, while a probe runs ------------------------------------------------------------------


def load(ptrs: Any) -> Any:
    """A load's result while probing: zeros of the pointer's element type."""
    interp = _interp()
    dtype_tt = ptrs.get_element_ty()
    return interp.TensorHandle(np.zeros(ptrs.data.shape, dtype=interp._get_np_dtype(dtype_tt)), dtype_tt)


def atomic(ptr: Any, val: Any) -> Any:
    """An atomic's result (what it found in memory) while probing: zeros."""
    shape = np.broadcast_shapes(ptr.data.shape, val.data.shape)
    return type(val)(np.zeros(shape, dtype=val.data.dtype), val.dtype.scalar)
