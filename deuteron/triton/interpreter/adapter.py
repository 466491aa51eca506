"""Deuteron's adapter to Triton's interpreter: the patches both listeners share, and where each
listener comes and goes. The interpreter's internals are touched here and in the two modules it
wires in: :mod:`.profiling` (a :class:`LaunchRecord` per launch) and :mod:`.checking` (every
access of every program, for a :class:`.sanitizer_protocol.Sanitizer`).

What we rely on, all in ``triton.runtime.interpreter`` (triton 3.6 to 3.9):
- ``InterpretedFunction.run(*args, grid, warmup, **kwargs)`` runs one launch; ``.fn`` and
  ``.kwargs["launch_metadata"]`` describe the kernel; ``InterpretedFunction.rewritten_fn`` maps
  each kernel to the function the interpreter really runs (its source re-parsed and dedented);
- ``GridExecutor._init_args_hst`` returns the host tensors the programs address, and the grid
  loop calls ``interpreter_builder.set_grid_dim`` once, then ``set_grid_idx`` before each program;
- the module singleton ``interpreter_builder``, whose ``create_masked_load``/``create_masked_store``
  carry every global load and store (plain, masked, atomic load/store, block pointers, tensor
  descriptors), ``create_dot`` every ``tl.dot``, ``create_atomic_rmw``/``create_atomic_cas`` the
  atomics, and ``binary_op``/``unary_op``/``ternary_op``/``create_fma``/``create_rsqrt`` the
  floating-point arithmetic.

The builder's methods are wrapped on the instance (never in Triton's source), through the patch
manager: group ``interpreter`` (built here: counting, guarding, the launch loop) while a profiler
or a sanitizer listens, group ``interpreter.sanitizer`` (:func:`.checking.sanitizer_patches`:
programs, host tensors, float results) while a sanitizer listens. The memory operations are wrapped
once for both listeners, so a launch that is profiled and checked counts the lanes the kernel asked
for before the sanitizer masks any off. The ``interpreter`` group also carries the mends of
interpreter bugs (:mod:`.mends`) and what a GPU script needs to run here at all (with the emulated
driver's own group, where Triton has no driver: :mod:`deuteron.triton.runtime.emulated_driver`):
``@triton.autotune`` running each config once (:mod:`deuteron.triton.runtime.autotune`),
``tl.extra.libdevice`` in NumPy (:mod:`.mends.libdevice`), and bf16 arithmetic done on values
rather than on their bits (:mod:`.mends.bf16`).

Two listeners: a profiler (``install``) and a sanitizer (``attach``: it hears every launch,
program, access and non-finite value and may mask lanes off before Triton touches memory). What is
checked, and how, is the sanitizer's business (``deuteron.check``); this package only reports and
obeys.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from deuteron.model.access import LOAD
from deuteron.process.patches import MANAGER, AttributePatch, Patch, WrapPatch
from deuteron.triton import unsupported
from deuteron.triton.interpreter import checking, probing, profiling, sites
from deuteron.triton.interpreter.mends import bf16, compile_time, device_calls, libdevice, scalars
from deuteron.triton.interpreter.profiling import LaunchRecord, active_lane_count, element_bytes
from deuteron.triton.interpreter.sanitizer_protocol import Abort, Sanitizer
from deuteron.triton.runtime import autotune, emulated_driver

__all__ = ["GROUP", "SANITIZER_GROUP", "Abort", "LaunchRecord", "attach", "detach", "install", "uninstall"]

_WRAPPED = (
    "create_masked_load",
    "create_masked_store",
    "create_dot",
    "create_atomic_rmw",
    "create_atomic_cas",
)
GROUP = "interpreter"
SANITIZER_GROUP = "interpreter.sanitizer"
# The interpreter keeps the program id in one shared builder, so launches from several threads
# would corrupt each other's results: they run one at a time.
_LOCK = threading.RLock()


def _interpreter_module() -> Any:
    try:
        from triton.runtime import interpreter
    except ImportError as exc:  # pragma: no cover - triton is a dependency
        raise unsupported(f"interpreter ({exc})") from None
    needed = ("InterpretedFunction", "interpreter_builder", "GridExecutor")
    missing = [n for n in needed if not hasattr(interpreter, n)]
    builder = getattr(interpreter, "interpreter_builder", None)
    for name in (
        *_WRAPPED,
        *checking.WRAPPED,
        *checking.FLOAT_OPS_REQUIRED,
        "create_int_to_ptr",
        "create_ptr_to_int",
    ):
        if builder is not None and not hasattr(builder, name):
            missing.append(f"interpreter_builder.{name}")
    if not hasattr(getattr(interpreter, "GridExecutor", None), "_init_args_hst"):
        missing.append("GridExecutor._init_args_hst")
    if missing:
        raise unsupported(", ".join(missing))
    return interpreter


# --- listeners ---------------------------------------------------------------------------------


def install(profiler: Callable[[LaunchRecord], None]) -> None:
    """Route every interpreted launch's record to ``profiler`` (one at a time)."""
    interp = _interpreter_module()
    if profiling.PROFILING.profiler is None:
        MANAGER.acquire(GROUP, lambda: _base_patches(interp))
        emulated_driver.acquire()
    profiling.PROFILING.profiler = profiler


def uninstall() -> None:
    state = profiling.PROFILING
    if state.profiler is not None:
        state.profiler = None
        state.counter = None
        emulated_driver.release()
        MANAGER.release(GROUP)


def attach(sanitizer: Sanitizer) -> None:
    """Let ``sanitizer`` hear every access of every interpreted launch (one at a time)."""
    interp = _interpreter_module()
    if checking.CHECKING.sanitizer is not None:
        raise RuntimeError("a sanitizer is already attached to Triton's interpreter")
    MANAGER.acquire(GROUP, lambda: _base_patches(interp))
    try:
        emulated_driver.acquire()
        MANAGER.acquire(SANITIZER_GROUP, lambda: checking.sanitizer_patches(interp))
    except BaseException:
        if MANAGER.holds(emulated_driver.GROUP):
            emulated_driver.release()
        MANAGER.release(GROUP)
        raise
    checking.CHECKING.sanitizer = sanitizer
    sites.reset()


def detach() -> None:
    state = checking.CHECKING
    if state.sanitizer is None:
        return
    state.sanitizer = None
    state.launch_checked = False
    state.pending = False
    MANAGER.release(SANITIZER_GROUP)
    emulated_driver.release()
    MANAGER.release(GROUP)


# --- the shared group ----------------------------------------------------------------------------


def _base_patches(interp: Any) -> list[Patch]:
    """The ``interpreter`` group: every memory operation counted (for the profiler) and, while a
    launch is checked, guarded (for the sanitizer) in one wrapper each; the launch loop, one launch
    at a time; and the mends a GPU script needs to run here at all."""
    builder = interp.interpreter_builder
    cls = type(builder)
    orig_load, orig_store = cls.create_masked_load, cls.create_masked_store
    orig_rmw, orig_cas = cls.create_atomic_rmw, cls.create_atomic_cas
    p, k = profiling.PROFILING, checking.CHECKING
    guarded, check_result = checking.guarded, checking.check_result

    def create_masked_load(ptrs: Any, mask: Any, *rest: Any, **kw: Any) -> Any:
        c = p.counter
        if c is not None:
            c.loaded += active_lane_count(ptrs.data, mask) * element_bytes(ptrs)
        if not k.launch_checked:
            if k.probe is not None:  # a probe touches no memory (deuteron check --at-size)
                return probing.load(ptrs)
            return orig_load(builder, ptrs, mask, *rest, **kw)
        ptrs, mask = guarded(LOAD, ptrs, mask, None)
        out = orig_load(builder, ptrs, mask, *rest, **kw)
        after = k.after_load
        if after is not None:  # a debugger stopped at this load: it shows what was loaded
            k.after_load = None
            values = checking.float_values(out)
            after(values if values is not None else out.data)
        return out

    def create_masked_store(ptrs: Any, value: Any, mask: Any, *rest: Any, **kw: Any) -> Any:
        c = p.counter
        if c is not None:
            c.stored += active_lane_count(ptrs.data, mask) * element_bytes(ptrs)
        if k.launch_checked:
            ptrs, value, mask = checking.guarded_store(ptrs, value, mask)
        elif k.probe is not None:
            return None
        return orig_store(builder, ptrs, value, mask, *rest, **kw)

    def counted_dot(current: Callable[..., Any]) -> Callable[..., Any]:
        def create_dot(a: Any, b: Any, d: Any, *rest: Any, **kw: Any) -> Any:
            c = p.counter
            if c is not None:
                c.dot(a, b)
            if k.probe is not None:  # a probe wants index arithmetic, not products: the accumulator as is
                return d
            out = current(a, b, d, *rest, **kw)
            if k.launch_checked:
                check_result("dot", (a, b, d), out)
            return out

        return create_dot

    def create_atomic_rmw(op: Any, ptr: Any, val: Any, mask: Any, *rest: Any, **kw: Any) -> Any:
        c = p.counter
        if c is not None:
            n = active_lane_count(ptr.data, mask) * element_bytes(ptr)
            c.loaded += n
            c.stored += n
        if k.launch_checked:
            return checking.guarded_rmw(orig_rmw, builder, op, ptr, val, mask, rest, kw)
        if k.probe is not None:
            return probing.atomic(ptr, val)
        return orig_rmw(builder, op, ptr, val, mask, *rest, **kw)

    def create_atomic_cas(ptr: Any, cmp: Any, val: Any, *rest: Any, **kw: Any) -> Any:
        c = p.counter
        if c is not None:
            n = int(ptr.data.size) * element_bytes(ptr)
            c.loaded += n
            c.stored += n
        if k.launch_checked:
            return checking.guarded_cas(orig_cas, builder, ptr, cmp, val, rest, kw)
        if k.probe is not None:
            return probing.atomic(ptr, val)
        return orig_cas(builder, ptr, cmp, val, *rest, **kw)

    orig_run = interp.InterpretedFunction.run

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        if p.profiler is None and k.sanitizer is None:
            return orig_run(self, *args, grid=grid, warmup=warmup, **kwargs)
        if warmup:  # a GPU script sizing its grid from the compiled kernel
            return compile_time.InterpretedKernel(self, kwargs)
        with _LOCK:
            if p.counter is not None:  # a launch from inside a launch's hook: counted with the outer one
                return orig_run(self, *args, grid=grid, warmup=False, **kwargs)
            launch = partial(checking.checked_run, orig_run, self, args, grid, kwargs)
            return profiling.recorded_run(launch, builder, self, args, grid, kwargs)

    patches: list[Patch] = [
        *autotune.patches(),
        *device_calls.mend(interp),
        *libdevice.patches(interp),  # after the mend: it wraps the mended _patch_lang
        *bf16.patches(interp),
        AttributePatch(builder, "create_masked_load", create_masked_load),
        AttributePatch(builder, "create_masked_store", create_masked_store),
        WrapPatch(builder, "create_dot", counted_dot),  # around the bf16 mend's, applied before it
        AttributePatch(builder, "create_atomic_rmw", create_atomic_rmw),
        AttributePatch(builder, "create_atomic_cas", create_atomic_cas),
        AttributePatch(interp.InterpretedFunction, "run", run),
    ]
    patches += scalars.patches(interp)
    return patches
