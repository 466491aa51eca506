"""Run one launch of a compiled-mode ``@triton.jit`` kernel in Triton's interpreter.

``deuteron explain`` needs both worlds at once: real ``JITFunction`` objects (so the kernel can be
compiled for a GPU target) and real outputs on a machine without a GPU (so the script goes on to
its next launch). Triton's interpreter only runs ``InterpretedFunction`` objects, and a helper
``@triton.jit`` function called from a kernel is a ``JITFunction`` whose ``__call__`` refuses to run.

So, for the duration of one launch only: the kernel runs through ``InterpretedFunction.run``, and
``JITFunction.__call__`` runs the helper's interpreter-rewritten body. Before the launch we patch
both ``triton.language`` and ``triton.language.core`` once (helpers such as ``tl.zeros`` call
``core.full``) and restore them after it. We call the helpers' rewritten bodies directly rather than
``InterpretedFunction.__call__``, because the latter patches the language again and never restores
it, which would break every compile after the launch. Relies on ``InterpretedFunction(fn).run(*args,
grid, warmup, **kw)``, ``.rewrite()`` and ``_patch_lang(fn) -> scope`` with ``scope.restore()``
(triton 3.6 to 3.9). The patches go through the patch manager (group ``jit.interpreted_launch``),
with the mends, libdevice and bf16 arithmetic that ``deuteron run`` and ``check`` use.

The patches are process-wide while a launch runs (a lock keeps launches one at a time): a
``triton.compile`` on another thread during an interpreted launch would see the interpreter's
language. ``deuteron explain`` compiles after the script, so it never does.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from deuteron.process.patches import MANAGER, AttributePatch, CallbackPatch, Patch
from deuteron.triton.interpreter.mends import bf16, libdevice, scalars

GROUP = "jit.interpreted_launch"
_lock = threading.RLock()
_interpreted: dict[Any, Any] = {}


def _interpreted_of(jit_fn: Any) -> Any:
    from triton.runtime.interpreter import InterpretedFunction

    fn = jit_fn.fn
    interp = _interpreted.get(fn)
    if interp is None:
        interp = _interpreted[fn] = InterpretedFunction(fn)
    return interp


def _patches() -> list[Patch]:
    import triton.language as tl
    from triton import knobs
    from triton.runtime import interpreter
    from triton.runtime.jit import JITFunction

    def helper_call(self: Any, *a: Any, **kw: Any) -> Any:
        return _interpreted_of(self).rewrite()(*a, **kw)

    scope: list[Any] = []

    def patch_language() -> None:
        scope.append(interpreter._patch_lang(SimpleNamespace(__globals__={"tl": tl, "core": tl.core})))

    return [
        AttributePatch(JITFunction, "__call__", helper_call),
        AttributePatch(knobs.runtime, "interpret", True),
        CallbackPatch(patch_language, lambda: scope.pop().restore()),
        # what makes GPU code run in the interpreter at all, as under `deuteron run` and `check`
        *scalars.patches(interpreter),
        *libdevice.patches(interpreter),
        *bf16.patches(interpreter),
    ]


def run_interpreted(jit_fn: Any, args: tuple[Any, ...], grid: Any, kwargs: dict[str, Any]) -> None:
    """Run every program of one launch on the CPU; outputs land in the argument tensors."""
    with _lock, MANAGER.applied(GROUP, _patches):
        _interpreted_of(jit_fn).run(*args, grid=grid, warmup=False, **kwargs)
