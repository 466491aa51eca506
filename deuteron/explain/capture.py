"""Capture every kernel specialization a script launches, exactly as Triton's JIT would key it.

Touches Triton's JIT internals (triton 3.6 to 3.9): ``JITFunction.run`` is wrapped; the
specialization comes from Triton's own binder (``create_function_from_signature``) and
``JITFunction._pack_args``, built for the *target's* backend, so the signature, the constexprs,
the ``tt.divisibility`` of pointers and integers, and the options (num_warps, num_stages, ...)
are the ones ``triton.compile`` would get on that GPU. On a GPU the launch then runs for real;
without one it runs in Triton's interpreter, so the script computes real outputs and goes on.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import ExplainError
from .targets import Target

SUPPORTED_TRITON = ((3, 6), (3, 9))


@dataclass
class ArgInfo:
    """What the report says about one argument: its type, its value when scalar, its alignment."""

    name: str
    type: str  # "*fp32", "i32", "constexpr", "fp32", ...
    value: Any = None  # ints, floats, bools and constexprs; None for pointers; "varies" when launches differ
    divisible_by_16: bool = False
    opted_out: bool = False  # do_not_specialize / do_not_specialize_on_alignment: no alignment assumed

    def describe(self) -> str:
        if self.type == "constexpr":
            return f"{self.name}={self.value!r}"
        if self.type.startswith("*"):
            return (
                f"{self.name}: {self.type}{' (16-byte aligned)' if self.divisible_by_16 else ' (unaligned)'}"
            )
        v = "" if self.value is None else f" = {self.value!r}"
        div = " (divisible by 16)" if self.divisible_by_16 and not self.type.startswith("fp") else ""
        return f"{self.name}: {self.type}{v}{div}"


@dataclass
class Specialization:
    """One distinct compile of one kernel for one target."""

    fn: Any  # the JITFunction
    target: Target
    signature: dict[str, str]
    constexprs: dict[Any, Any]
    attrs: dict[Any, Any]
    options: Any  # the backend's options dataclass
    args: list[ArgInfo]
    launches: int = 0
    grids: list[tuple[int, ...]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.fn.__name__)

    @property
    def file(self) -> str:
        return str(self.fn.fn.__code__.co_filename)

    @property
    def first_line(self) -> int:
        return int(self.fn.fn.__code__.co_firstlineno)

    def option(self, name: str) -> Any:
        return getattr(self.options, name, None)


@functools.cache
def _triton_parts() -> tuple[Any, Any, Any, Any]:
    """Triton's pieces, imported once: ``record`` runs on every launch."""
    try:
        from triton import knobs
        from triton.compiler import make_backend
        from triton.runtime.jit import JITFunction, create_function_from_signature
    except ImportError as exc:
        import triton

        raise ExplainError(
            f"triton {triton.__version__} lacks what explain needs ({exc}); supported: triton "
            f"{SUPPORTED_TRITON[0][0]}.{SUPPORTED_TRITON[0][1]} to "
            f"{SUPPORTED_TRITON[1][0]}.{SUPPORTED_TRITON[1][1]}"
        ) from None
    if not hasattr(JITFunction, "_pack_args"):
        raise ExplainError("this triton has no JITFunction._pack_args; supported: triton 3.6 to 3.9")
    return knobs, make_backend, JITFunction, create_function_from_signature


def _launch_kwargs(fn: Any, kwargs: dict[str, Any], knobs: Any) -> dict[str, Any]:
    # What JITFunction.run adds before binding, so the options match a real launch.
    kw = dict(kwargs)
    kw["debug"] = kw.get("debug", fn.debug) or knobs.runtime.debug
    for name in ("instrumentation_mode", "fpsan_homomorphic_casts"):
        if hasattr(knobs.compilation, name):
            kw[name] = getattr(knobs.compilation, name)
    return kw


def _arg_infos(
    fn: Any,
    signature: dict[str, Any],
    constexprs: dict[Any, Any],
    attrs: dict[Any, Any],
    bound: dict[str, Any],
) -> list[ArgInfo]:
    params = {p.name: p for p in getattr(fn, "params", [])}
    infos = []
    for i, (name, ty) in enumerate(signature.items()):
        value = bound.get(name)
        info = ArgInfo(name, ty if isinstance(ty, str) else str(ty))
        if not isinstance(ty, str):  # a tuple argument: its parts are specialized one by one
            infos.append(info)
            continue
        if ty == "constexpr":
            info.value = _plain(constexprs.get((i,), value))
        elif not ty.startswith("*") and isinstance(value, (bool, int, float)):
            info.value = value
        info.divisible_by_16 = "tt.divisibility" in str(attrs.get((i,), ""))
        p = params.get(name)
        info.opted_out = bool(p is not None and (p.do_not_specialize or p.do_not_specialize_on_alignment))
        infos.append(info)
    return infos


def _plain(value: Any) -> Any:
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return str(value)


class Capture:
    """Wraps ``JITFunction.run`` while active; collects one :class:`Specialization` per distinct key."""

    def __init__(
        self,
        targets: list[Target] | None,
    ) -> None:
        self.targets = targets  # None: the default target, decided at the first launch
        self.specs: dict[str, Specialization] = {}
        self.errors: list[str] = []
        self._binders: dict[tuple[int, str], Any] = {}
        self._backends: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._saved: Any = None

    def _backend(self, target: Target) -> Any:
        backend = self._backends.get(target.name)
        if backend is None:
            _, make_backend, _, _ = _triton_parts()
            backend = self._backends[target.name] = make_backend(target.gpu_target())
        return backend

    def record(self, fn: Any, args: tuple[Any, ...], grid: Any, kwargs: dict[str, Any], warmup: bool) -> None:
        """Key this launch for every target; a failure is noted, never raised into the user's script."""
        knobs, _, _, create_binder = _triton_parts()
        kw = _launch_kwargs(fn, kwargs, knobs)
        if self.targets is None:
            from .targets import default_target

            self.targets = [default_target()]
        for target in self.targets:
            try:
                self._record_one(fn, target, args, grid, kw, warmup, create_binder)
            except Exception as exc:  # a launch option another backend rejects, an odd argument
                note = f"{fn.__name__} on {target.name}: launch not captured ({type(exc).__name__}: {exc})"
                with self._lock:
                    if note not in self.errors:
                        self.errors.append(note)

    def _record_one(
        self,
        fn: Any,
        target: Target,
        args: tuple[Any, ...],
        grid: Any,
        kw: dict[str, Any],
        warmup: bool,
        create_binder: Any,
    ) -> None:
        backend = self._backend(target)
        bkey = (id(fn), target.name)
        binder = self._binders.get(bkey)
        if binder is None:
            binder = self._binders[bkey] = create_binder(fn.signature, fn.params, backend)
        bound, specialization, options = binder(*args, **kw)
        options, signature, constexprs, attrs = fn._pack_args(backend, kw, bound, specialization, options)
        key = repr(
            (
                id(fn),
                target.name,
                sorted(signature.items(), key=repr),
                sorted(constexprs.items(), key=repr),
                sorted(attrs.items(), key=repr),
                sorted(options.__dict__.items(), key=repr),
            )
        )
        infos = _arg_infos(fn, signature, constexprs, attrs, dict(bound))
        with self._lock:
            spec = self.specs.get(key)
            if spec is None:
                spec = self.specs[key] = Specialization(
                    fn, target, signature, constexprs, attrs, options, infos
                )
            else:  # same specialization, other scalar values: say they vary rather than show the first
                for old, new in zip(spec.args, infos, strict=False):
                    if old.type != "constexpr" and old.value != new.value:
                        old.value = "varies"
            if warmup:
                return
            spec.launches += 1
            g = _grid_of(grid, bound)
            if g is not None and g not in spec.grids and len(spec.grids) < 8:
                spec.grids.append(g)

    def __enter__(self) -> Capture:
        knobs, _, JITFunction, _ = _triton_parts()
        from triton.runtime.autotuner import Autotuner

        capture = self
        original = JITFunction.run
        self._saved = (original, Autotuner.__dict__.get("do_bench"), knobs.runtime.interpret)
        gpu: list[bool] = []  # decided at the first launch, once the script has set up its devices

        def on_gpu() -> bool:
            if not gpu:
                from .targets import local_target

                gpu.append(local_target() is not None)
            return gpu[0]

        def run(fn: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            capture.record(fn, args, grid, kwargs, warmup)
            if on_gpu():
                return original(fn, *args, grid=grid, warmup=warmup, **kwargs)
            if warmup:
                return None
            from ..backends.interpreter.jit_launch import run_interpreted

            run_interpreted(fn, args, grid, kwargs)
            return None

        def bench_once(self: Any) -> Any:
            # No GPU to time configs on: run each once (so each is captured) and call them equal.
            if on_gpu():
                return (
                    original_bench.__get__(self, type(self)) if original_bench is not None else self._do_bench
                )

            def once(kernel_call: Callable[[], Any], quantiles: Any = None, **_: Any) -> list[float]:
                kernel_call()
                return [1.0, 1.0, 1.0] if quantiles else 1.0  # type: ignore[return-value]

            return once

        original_bench = self._saved[1]
        JITFunction.run = run
        Autotuner.do_bench = property(bench_once)  # type: ignore[method-assign,assignment]
        # Kernels the script defines must be compiled-mode JIT functions even if it sets
        # TRITON_INTERPRET=1 itself: we run them in the interpreter launch by launch.
        knobs.runtime.interpret = False
        return self

    def __exit__(self, *exc: object) -> None:
        knobs, _, JITFunction, _ = _triton_parts()
        from triton.runtime.autotuner import Autotuner

        run, bench, interpret = self._saved
        JITFunction.run = run
        if bench is not None:
            Autotuner.do_bench = bench  # type: ignore[method-assign]
        knobs.runtime.interpret = interpret


def _grid_of(grid: Any, bound: Any) -> tuple[int, ...] | None:
    try:
        g = grid(dict(bound)) if callable(grid) else grid
        return tuple(int(x) for x in g)
    except Exception:  # a grid we cannot evaluate is only missing from the report
        return None
