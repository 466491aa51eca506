"""Capture every kernel specialization a script launches, one per distinct key and target.

Each launch is keyed by :mod:`deuteron.triton.compiler.capture` with Triton's own binder, built for
the target's backend; launches that key the same are one :class:`Specialization`, with their
number and grids. A launch that cannot be keyed is noted, never raised into the user's script.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from deuteron.explain.targets import Target
from deuteron.triton.compiler import capture as jit_capture
from deuteron.triton.runtime import emulated_driver


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
    origin: str = ""  # "" for a launch heard; "inductor": keyed from Inductor's description, not launched

    @property
    def name(self) -> str:
        return jit_capture.source_of(self.fn)[0]

    @property
    def file(self) -> str:
        return jit_capture.source_of(self.fn)[1]

    @property
    def first_line(self) -> int:
        return jit_capture.source_of(self.fn)[2]

    def option(self, name: str) -> Any:
        return getattr(self.options, name, None)


def _arg_infos(b: jit_capture.Binding) -> list[ArgInfo]:
    signature, constexprs, attrs, bound = b.signature, b.constexprs, b.attrs, b.bound
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
        info.opted_out = name in b.opted_out
        infos.append(info)
    return infos


def _plain(value: Any) -> Any:
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return str(value)


class Capture:
    """While active, every JIT launch is recorded: one :class:`Specialization` per distinct key."""

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
        self._active: AbstractContextManager[None] | None = None
        self._gpu: list[bool] = []  # decided at the first launch, once the script has set up its devices
        self._previous_device = emulated_driver.chosen()  # put back when the capture ends

    def _backend(self, target: Target) -> Any:
        backend = self._backends.get(target.name)
        if backend is None:
            backend = self._backends[target.name] = jit_capture.make_backend(target.gpu_target())
        return backend

    def record(self, fn: Any, args: tuple[Any, ...], grid: Any, kwargs: dict[str, Any], warmup: bool) -> None:
        """Key this launch for every target; a failure is noted, never raised into the user's script."""
        kw = jit_capture.launch_kwargs(fn, kwargs)
        if self.targets is None:
            from deuteron.explain.targets import default_target

            self.targets = [default_target()]
        for target in self.targets:
            try:
                self._record_one(fn, target, args, grid, kw, warmup)
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
    ) -> None:
        """Key one launch for one target and count it under its :class:`Specialization`.

        The key is all that makes Triton compile anew (kernel, target, signature, constexprs,
        divisibility attrs, options), so launches share a specialization exactly when they would
        share a compile. Binding runs outside the lock (launches may come from several threads);
        only the table's update holds it. A warmup makes the specialization but is not a launch.
        """
        backend = self._backend(target)
        bkey = (id(fn), target.name)
        binder = self._binders.get(bkey)
        if binder is None:
            binder = self._binders[bkey] = jit_capture.make_binder(fn, backend)
        b = jit_capture.bind(fn, backend, binder, args, kw)
        key = repr(
            (
                id(fn),
                target.name,
                sorted(b.signature.items(), key=repr),
                sorted(b.constexprs.items(), key=repr),
                sorted(b.attrs.items(), key=repr),
                sorted(b.options.__dict__.items(), key=repr),
            )
        )
        infos = _arg_infos(b)
        with self._lock:
            spec = self.specs.get(key)
            if spec is None:
                spec = self.specs[key] = Specialization(
                    fn, target, b.signature, b.constexprs, b.attrs, b.options, infos
                )
            else:  # same specialization, other scalar values: say they vary rather than show the first
                for old, new in zip(spec.args, infos, strict=False):
                    if old.type != "constexpr" and old.value != new.value:
                        old.value = "varies"
            if warmup:
                return
            spec.launches += 1
            g = _grid_of(grid, b.bound)
            if g is not None and g not in spec.grids and len(spec.grids) < 8:
                spec.grids.append(g)

    def on_gpu(self) -> bool:
        """Whether launches run on a local GPU (decided at the first launch, then kept)."""
        if not self._gpu:
            from deuteron.explain.targets import local_target

            self._gpu.append(local_target() is not None)
        return self._gpu[0]

    def __enter__(self) -> Capture:
        first = self.targets[0] if self.targets else None
        self._previous_device = emulated_driver.chosen()
        if first is not None:  # without a GPU, Triton's driver answers as the first target
            emulated_driver.choose_target(first.backend, first.arch, first.warp_size, "--target")
        emulated_driver.acquire()
        self._active = jit_capture.intercept(self.record, self.on_gpu)
        self._active.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._active is not None:
            self._active.__exit__(None, None, None)
            self._active = None
            emulated_driver.release()
            emulated_driver.restore(self._previous_device)  # a later run answers as its own --device


def _grid_of(grid: Any, bound: Any) -> tuple[int, ...] | None:
    try:
        g = grid(dict(bound)) if callable(grid) else grid
        return tuple(int(x) for x in g)
    except Exception:  # a grid we cannot evaluate is only missing from the report
        return None
