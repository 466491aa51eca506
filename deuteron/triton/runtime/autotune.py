"""``@triton.autotune`` while kernels run in the interpreter: every config runs once, in a scope.

Timing configs means nothing in the interpreter (its speed is not the GPU's), and repeating each
one dozens of times, as ``do_bench`` would, makes a checked run crawl. So each config is run
exactly once (checked, and profiled, like any launch) and all are called equally fast: the
autotuner keeps the first config, the same on every run. A profiler, on either backend, can
name a scope the benchmark launches are filed under (Proton's tutorials use ``<autotune>``, opened
from the autotuner's ``pre_hook``); where the script set its own hooks, it does that itself. A config
whose ``tl.static_assert`` fails is skipped, as the GPU's compiler would reject it.

``torch.compile`` tunes Triton kernels too, without Triton's autotuner: Inductor times each config
of a generated kernel at its first call, and under ``max-autotune`` each GEMM template while it
compiles, all through one object, ``torch._inductor.runtime.benchmarking.benchmarker``. Its
benchmark launches (thousands: 14,135 ``triton_mm`` launches and 11,427 buffer fills for 13 steps
of a 4-layer Llama on an H200) are filed under the same scope, so the steps' kernels stand apart.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from typing import Any

from deuteron.process.patches import MANAGER, AttributePatch, Patch, WrapPatch, after_import
from deuteron.triton.interpreter.mends.compile_time import StaticAssertFailed


class _State:
    """The module's mutable state, one object so the patched ``_bench`` reads it at call time:
    the scopes to enter around each benchmark (one per profiler that asked; none, and the patch
    only passes the call on) and the undo of the wait for Triton's import."""

    __slots__ = ("scopes", "waiting", "inductor_waiting", "depth")

    def __init__(self) -> None:
        self.scopes: list[Callable[[], AbstractContextManager[Any]]] = []
        self.waiting: Callable[[], None] | None = None  # undoes the wait for Triton's import
        self.inductor_waiting: Callable[[], None] | None = None  # ... and for Inductor's benchmarker
        self.depth = threading.local()  # Inductor's benchmark() calls benchmark_gpu(): one scope


_s = _State()
SCOPE_GROUP = "triton.autotune_scope"
INDUCTOR_GROUP = "inductor.benchmark_scope"
INDUCTOR_BENCHMARKING = "torch._inductor.runtime.benchmarking"
INDUCTOR_CALLS = ("benchmark", "benchmark_cpu", "benchmark_gpu", "benchmark_gpu_with_cuda_graph")


def file_benchmarks_under(scope: Callable[[], AbstractContextManager[Any]]) -> Callable[[], None]:
    """Enter ``scope()`` around each config's benchmark (all its launches, on a GPU or in the
    interpreter); returns the undo. Triton's autotuner is changed now if it is imported, else as
    soon as it is: a profile of a script that imports Triton later (``deuteron run``) must not pay
    for importing it, nor miss it."""
    _s.scopes.append(scope)
    if len(_s.scopes) == 1:
        if "triton.runtime.autotuner" in sys.modules:
            MANAGER.acquire(SCOPE_GROUP, _scope_patches)
        else:
            _s.waiting = after_import("triton.runtime.autotuner", _on_import)
        if INDUCTOR_BENCHMARKING in sys.modules:
            MANAGER.acquire(INDUCTOR_GROUP, _inductor_patches)
        else:
            _s.inductor_waiting = after_import(INDUCTOR_BENCHMARKING, _on_inductor_import)

    def undo() -> None:
        if scope in _s.scopes:
            _s.scopes.remove(scope)
            if not _s.scopes:
                for waiting in (_s.waiting, _s.inductor_waiting):
                    if waiting is not None:
                        waiting()
                _s.waiting = _s.inductor_waiting = None
                MANAGER.release(SCOPE_GROUP)
                MANAGER.release(INDUCTOR_GROUP)

    return undo


def _on_import() -> None:
    _s.waiting = None
    if _s.scopes:
        MANAGER.acquire(SCOPE_GROUP, _scope_patches)


def _on_inductor_import() -> None:
    _s.inductor_waiting = None
    if _s.scopes:
        MANAGER.acquire(INDUCTOR_GROUP, _inductor_patches)


def _inductor_patches() -> list[Patch]:
    """Each of the benchmarker's timing calls in the scopes (once, where one calls another)."""
    benchmarker = getattr(sys.modules[INDUCTOR_BENCHMARKING], "benchmarker", None)
    if benchmarker is None:  # a torch whose benchmarking module has no shared benchmarker
        return []

    def scoped(original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            depth = getattr(_s.depth, "n", 0)
            if depth or not _s.scopes:
                return original(*args, **kwargs)
            _s.depth.n = 1
            try:
                with ExitStack() as stack:
                    for scope in list(_s.scopes):
                        stack.enter_context(scope())
                    return original(*args, **kwargs)
            finally:
                _s.depth.n = 0

        return call

    return [WrapPatch(benchmarker, name, scoped) for name in INDUCTOR_CALLS if hasattr(benchmarker, name)]


def _scope_patches() -> list[Patch]:
    from triton.runtime.autotuner import Autotuner

    original = Autotuner._bench

    def _bench(self: Any, *args: Any, config: Any, **meta: Any) -> Any:
        if not _s.scopes or _own_hooks(self):
            return original(self, *args, config=config, **meta)
        with ExitStack() as stack:
            for scope in list(_s.scopes):
                stack.enter_context(scope())
            return original(self, *args, config=config, **meta)

    return [AttributePatch(Autotuner, "_bench", _bench)]


def _own_hooks(tuner: Any) -> bool:
    """Whether the script set the autotuner's pre/post hook after making it (Proton's recipe for
    an ``<autotune>`` scope); hooks given to ``@triton.autotune`` itself do other work."""
    for attr in ("pre_hook", "post_hook"):
        hook = getattr(tuner, attr, None)
        given = getattr(tuner, f"user_defined_{attr}", False)
        made_by_triton = "Autotuner.__init__" in getattr(hook, "__qualname__", "Autotuner.__init__")
        if hook is not None and not given and not made_by_triton:
            return True
    return False


def _run_once(kernel_call: Callable[[], Any], quantiles: Any = None, **_: Any) -> Any:
    try:
        kernel_call()
        took = 1.0
    except StaticAssertFailed:  # the GPU's compiler would reject this config: skip it, as Triton does
        took = float("inf")
    return [took] * len(quantiles) if quantiles else took


def patches() -> list[Patch]:
    """The interpreter's autotuner: each config runs once (its scope: :func:`file_benchmarks_under`)."""
    from triton.runtime.autotuner import Autotuner

    return [AttributePatch(Autotuner, "do_bench", property(lambda self: _run_once))]
