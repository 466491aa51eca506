"""Each launch of a ``@triton.jit`` kernel keyed exactly as Triton's JIT would key it, for a target.

Touches Triton's JIT internals (triton 3.6 to 3.9): ``JITFunction.run`` is wrapped (with the
autotuner's benchmark and the ``interpret`` knob, through the patch manager, group
``jit.capture``); the specialization comes from Triton's own binder
(``create_function_from_signature``) and ``JITFunction._pack_args``, built for the *target's*
backend, so the signature, the constexprs, the ``tt.divisibility`` of pointers and integers, and
the options (num_warps, num_stages, ...) are the ones ``triton.compile`` would get on that GPU. On
a GPU the launch then runs for real; without one it runs in Triton's interpreter, so the script
computes real outputs and goes on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from deuteron.process.patches import MANAGER, AttributePatch, Patch
from deuteron.triton import quiet_compile_notice, unsupported
from deuteron.triton.interpreter.mends import compile_time

GROUP = "jit.capture"
OnLaunch = Callable[[Any, tuple[Any, ...], Any, dict[str, Any], bool], None]


@dataclass
class Binding:
    """One launch as Triton's binder saw it, for one target's backend."""

    bound: dict[str, Any]  # parameter name -> value
    signature: dict[str, Any]
    constexprs: dict[Any, Any]
    attrs: dict[Any, Any]
    options: Any  # the backend's options dataclass
    opted_out: frozenset[str]  # parameters in do_not_specialize / do_not_specialize_on_alignment


@functools.cache
def _parts() -> tuple[Any, Any, Any, Any]:
    """Triton's pieces, imported once: binding runs on every launch."""
    try:
        from triton import knobs
        from triton.compiler import make_backend
        from triton.runtime.jit import JITFunction, create_function_from_signature
    except ImportError as exc:
        raise unsupported(f"JIT binder ({exc})") from None
    if not hasattr(JITFunction, "_pack_args"):
        raise unsupported("JITFunction._pack_args")
    quiet_compile_notice()
    return knobs, make_backend, JITFunction, create_function_from_signature


def make_backend(target: Any) -> Any:
    """Triton's compiler backend for a ``GPUTarget``."""
    return _parts()[1](target)


def make_binder(fn: Any, backend: Any) -> Any:
    return _parts()[3](fn.signature, fn.params, backend)


def launch_kwargs(fn: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """What ``JITFunction.run`` adds before binding, so the options match a real launch."""
    knobs = _parts()[0]
    kw = dict(kwargs)
    kw["debug"] = kw.get("debug", fn.debug) or knobs.runtime.debug
    for name in ("instrumentation_mode", "fpsan_homomorphic_casts"):
        if hasattr(knobs.compilation, name):
            kw[name] = getattr(knobs.compilation, name)
    return kw


def bind(fn: Any, backend: Any, binder: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> Binding:
    """Key one launch (``kw`` from :func:`launch_kwargs`) as ``triton.compile`` would get it."""
    bound, specialization, options = binder(*args, **kw)
    options, signature, constexprs, attrs = fn._pack_args(backend, kw, bound, specialization, options)
    opted = frozenset(
        p.name for p in getattr(fn, "params", []) if p.do_not_specialize or p.do_not_specialize_on_alignment
    )
    return Binding(dict(bound), signature, constexprs, attrs, options, opted)


def source_of(fn: Any) -> tuple[str, str, int]:
    """(name, file, first line) of a JIT function's Python source."""
    code = fn.fn.__code__
    return str(fn.__name__), str(code.co_filename), int(code.co_firstlineno)


@contextmanager
def intercept(on_launch: OnLaunch, on_gpu: Callable[[], bool]) -> Iterator[None]:
    """Call ``on_launch(fn, args, grid, kwargs, warmup)`` at every JIT launch, then run the launch:
    on the GPU when ``on_gpu()``, else in the interpreter (the autotuner runs each config once)."""
    knobs, _, JITFunction, _ = _parts()
    from triton.runtime.autotuner import Autotuner

    from deuteron.triton.runtime.jit_launch import run_interpreted

    original = JITFunction.run
    original_bench = Autotuner.__dict__.get("do_bench")

    def run(fn: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        on_launch(fn, args, grid, kwargs, warmup)
        if on_gpu():
            return original(fn, *args, grid=grid, warmup=warmup, **kwargs)
        if warmup:  # a script sizing its grid from the compiled kernel (Triton's tutorial 02)
            return compile_time.InterpretedKernel(fn, kwargs)
        run_interpreted(fn, args, grid, kwargs)
        return None

    def bench_once(self: Any) -> Any:
        # No GPU to time configs on: run each once (so each is captured) and call them equal.
        if on_gpu():
            return original_bench.__get__(self, type(self)) if original_bench is not None else self._do_bench

        def once(kernel_call: Callable[[], Any], quantiles: Any = None, **_: Any) -> list[float]:
            try:
                kernel_call()
                took = 1.0
            except Exception as exc:  # a config the compiler would reject is skipped, as on a GPU
                if not compile_time.from_static_assert(exc.__cause__ or exc):
                    raise
                took = float("inf")
            return [took] * len(quantiles) if quantiles else took  # type: ignore[return-value]

        return once

    def patches() -> list[Patch]:
        return [
            AttributePatch(JITFunction, "run", run),
            AttributePatch(Autotuner, "do_bench", property(bench_once)),
            # Kernels the script defines must be compiled-mode JIT functions even if it sets
            # TRITON_INTERPRET=1 itself: we run them in the interpreter launch by launch.
            AttributePatch(knobs.runtime, "interpret", False),
        ]

    with MANAGER.applied(GROUP, patches):
        yield
