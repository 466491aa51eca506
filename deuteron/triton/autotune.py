"""``@triton.autotune`` while kernels run in the interpreter: every config runs once, in a scope.

Timing configs means nothing in the interpreter (its speed is not the GPU's), and repeating each
one dozens of times, as ``do_bench`` would, makes a checked run crawl. So each config is run
exactly once (checked, and profiled, like any launch) and all are called equally fast: the
autotuner keeps the first config, the same on every run. A profiler can name a scope the
benchmark launches are filed under (Proton's tutorials use ``<autotune>``, opened from the
autotuner's ``pre_hook``); where the script set its own hooks, it does that itself. A config
whose ``tl.static_assert`` fails is skipped, as the GPU's compiler would reject it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from .compile_time import StaticAssertFailed
from .hooks import AttributePatch, Patch

BENCHMARK_SCOPE = "<autotune>"


class _State:
    __slots__ = ("scope",)

    def __init__(self) -> None:
        self.scope: Callable[[], AbstractContextManager[Any]] | None = None


_s = _State()


def set_benchmark_scope(scope: Callable[[], AbstractContextManager[Any]] | None) -> None:
    """``scope()`` is entered around each config's benchmark launch (None: no scope)."""
    _s.scope = scope


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
    from triton.runtime.autotuner import Autotuner

    original = Autotuner._bench

    def _bench(self: Any, *args: Any, config: Any, **meta: Any) -> Any:
        scope = _s.scope
        if scope is None or _own_hooks(self):
            return original(self, *args, config=config, **meta)
        with scope():
            return original(self, *args, config=config, **meta)

    return [
        AttributePatch(Autotuner, "_bench", _bench),
        AttributePatch(Autotuner, "do_bench", property(lambda self: _run_once)),
    ]
