"""What compiling a kernel would have decided, for kernels that run in the interpreter instead.

- ``tl.static_assert``: compiled, a false one rejects the kernel before it runs (``@triton.autotune``
  then skips that config); interpreted, it raises mid-launch as an ``InterpreterError``. It is
  raised here as :class:`StaticAssertFailed`, the launch is not counted, and the autotuner skips
  the config as it would on a GPU.
- ``kernel.warmup(...)``: compiled, it returns the compiled kernel, whose ``n_regs`` and
  ``metadata.shared`` scripts use to size persistent grids (Triton's tutorial 02); interpreted, it
  returns None. Here it returns an :class:`InterpretedKernel` that launches in the interpreter and
  reports stand-in resources, said once per kernel on stderr (``deuteron explain`` compiles the
  kernel for a real target and gives the real numbers).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import SimpleNamespace, TracebackType
from typing import Any

STAND_IN_REGISTERS = 32
STAND_IN_SHARED = 1024  # bytes; not 0, since scripts divide shared memory by it


class StaticAssertFailed(AssertionError):
    """A ``tl.static_assert`` that does not hold for this launch's constexprs."""


def from_static_assert(exc: BaseException | None) -> bool:
    """Whether ``exc`` was raised by the interpreter's ``tl.static_assert``."""
    tb: TracebackType | None = exc.__traceback__ if exc is not None else None
    while tb is not None:
        if tb.tb_frame.f_code.co_name in ("_new_static_assert", "static_assert"):
            return True
        tb = tb.tb_next
    return False


_said: set[str] = set()


class InterpretedKernel:
    """``kernel.warmup(...)``'s result for an interpreted kernel: a compiled kernel's attributes
    scripts read, with stand-in resources, launched in the interpreter by ``kernel[grid](...)``."""

    def __init__(self, fn: Any, kwargs: dict[str, Any]) -> None:
        self._fn = fn
        self.name = str(getattr(getattr(fn, "fn", fn), "__name__", "kernel"))
        self.n_regs = STAND_IN_REGISTERS
        self.n_spills = 0
        self.n_max_threads = 1024
        self.module = self.function = None
        self.metadata = SimpleNamespace(
            name=self.name,
            shared=STAND_IN_SHARED,
            num_warps=int(kwargs.get("num_warps", 4)),
            num_stages=int(kwargs.get("num_stages", 3)),
            num_ctas=1,
            warp_size=32,
        )
        if self.name not in _said:
            _said.add(self.name)
            print(
                f"deuteron: {self.name}.warmup() compiles nothing in the interpreter: its n_regs "
                f"({STAND_IN_REGISTERS}) and metadata.shared ({STAND_IN_SHARED}) are stand-ins; "
                "`deuteron explain` gives the real ones",
                file=sys.stderr,
            )

    def _init_handles(self) -> None:
        return None

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        launch = self._fn[grid]

        def run(*args: Any, **kwargs: Any) -> Any:
            return launch(*args, **kwargs)

        return run
