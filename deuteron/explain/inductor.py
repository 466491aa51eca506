"""Kernels ``torch.compile`` generated, explained from Inductor's own description of them.

Inductor launches its Triton kernels through its own launchers (a compiled binary bound once),
never through ``JITFunction.run``, so :mod:`deuteron.explain.capture` hears none of them. But each
kernel is defined by a ``CachingAutotuner`` (``@triton_heuristics.pointwise(...)`` over the
``@triton.jit`` function, in the file Inductor writes for it) that says everything a compile needs:
the signature (``triton_meta["signature"]``), which arguments are 16-byte aligned or divisible by 16
(``triton_meta["configs"]``), the constants, and its configs (block sizes, ``num_warps``,
``num_stages``). While a program is explained, every such autotuner made is kept; afterwards each
config (the chosen one, where Inductor benchmarked them) is keyed by Triton's own binder on stand-in
arguments of those types and alignments, exactly as a launch would be, and explained like one.

So both work, with or without a GPU: ``deuteron explain`` of a file Inductor wrote for one kernel
(in ``TORCHINDUCTOR_CACHE_DIR``), and of a script that compiles a model (on a GPU, where the model
runs). Without a GPU, Inductor's ``set_driver_to_gpu`` (which such a file calls first) would find
no GPU backend: while explaining it accepts the driver Deuteron emulates.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Callable
from typing import Any

from deuteron.explain.capture import Capture
from deuteron.process.patches import MANAGER, AttributePatch, Patch, WrapPatch, after_import

GROUP = "explain.inductor"
HEURISTICS = "torch._inductor.runtime.triton_heuristics"
HELPERS = "torch._inductor.runtime.triton_helpers"

# Triton's type names -> torch dtype names, for the stand-in tensors of pointer arguments.
_DTYPES = {
    "fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64", "i1": "bool",
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16",
    "u32": "uint32", "u64": "uint64", "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2",
    "fp8e4b15": "float8_e4m3fn", "fp8e4b8": "float8_e4m3fnuz", "fp8e5b16": "float8_e5m2fnuz",
}  # fmt: skip
_DIVISIBLE = re.compile(r"tt\.divisibility")


class InductorKernels:
    """While active, every ``CachingAutotuner`` Inductor makes is kept (weakly: a kernel the program
    dropped is not explained); :meth:`record_into` then keys their configs into a capture."""

    def __init__(self, on_gpu: Callable[[], bool]) -> None:
        self._on_gpu = on_gpu
        self._tuners: list[weakref.ref[Any]] = []
        self._lock = threading.Lock()
        self._waiting: list[Callable[[], None]] = []

    # --- while the program runs --------------------------------------------------------------------

    def __enter__(self) -> InductorKernels:
        for name, make in ((HEURISTICS, self._heuristics_patches), (HELPERS, self._helpers_patches)):
            group = f"{GROUP}.{name.rsplit('.', 1)[-1]}"
            self._waiting.append(after_import(name, lambda g=group, m=make: MANAGER.acquire(g, m)))  # type: ignore[misc]
        return self

    def __exit__(self, *exc: object) -> None:
        for undo in self._waiting:
            undo()
        self._waiting = []
        for name in (HEURISTICS, HELPERS):
            MANAGER.release(f"{GROUP}.{name.rsplit('.', 1)[-1]}")

    def _heuristics_patches(self) -> list[Patch]:
        import sys

        tuner_class = getattr(sys.modules[HEURISTICS], "CachingAutotuner", None)
        if tuner_class is None:
            return []

        def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
            def init(tuner: Any, *args: Any, **kwargs: Any) -> None:
                original(tuner, *args, **kwargs)
                with self._lock:
                    self._tuners.append(weakref.ref(tuner))

            return init

        return [WrapPatch(tuner_class, "__init__", wrap)]

    def _helpers_patches(self) -> list[Patch]:
        import sys

        helpers = sys.modules[HELPERS]
        original = getattr(helpers, "set_driver_to_gpu", None)
        if original is None:
            return []

        def set_driver_to_gpu() -> None:
            if self._on_gpu():
                original()
            # else Triton's driver is the one Deuteron emulates for the target: keep it

        return [AttributePatch(helpers, "set_driver_to_gpu", set_driver_to_gpu)]

    # --- afterwards ------------------------------------------------------------------------------

    def tuners(self) -> list[Any]:
        with self._lock:
            alive = [ref() for ref in self._tuners]
        return [t for t in alive if t is not None and getattr(t, "fn", None) is not None]

    def record_into(self, capture: Capture) -> list[str]:
        """Key each kept kernel's configs into ``capture`` (a specialization each, not a launch),
        unless its function was launched through Triton's JIT already. Each is marked as Inductor's,
        and its scalar arguments show no value: theirs are stand-ins. Returns notes on kernels left
        out."""
        launched = {id(spec.fn) for spec in capture.specs.values()}
        before = set(capture.specs)
        notes: list[str] = []
        for tuner in self.tuners():
            fn = tuner.fn
            if id(fn) in launched:
                continue
            try:
                for args, kwargs in launches(tuner):
                    capture.record(fn, args, (1, 1, 1), kwargs, True)
            except Exception as exc:  # an Inductor we did not expect: say which kernel, go on
                notes.append(f"{getattr(fn, '__name__', fn)}: Inductor's kernel not understood ({exc})")
        for key in set(capture.specs) - before:
            spec = capture.specs[key]
            spec.origin = "inductor"
            for arg in spec.args:
                if arg.type != "constexpr":
                    arg.value = None
        return notes


def launches(tuner: Any) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """A stand-in launch per config of one Inductor kernel: arguments of the signature's types, each
    aligned (pointers) or divisible by 16 (integers) exactly where Inductor said so, and the config's
    constexprs and options. The chosen config only, where Inductor benchmarked them already."""
    import torch

    meta = tuner.triton_meta
    signature: dict[str, str] = meta["signature"]
    divisible = _divisible_indices(meta.get("configs") or [])
    constants = meta.get("constants") or {}
    args: list[Any] = []
    for index, (name, kind) in enumerate(signature.items()):
        if kind == "constexpr" or name in constants:
            continue
        if kind.startswith("*"):
            dtype = getattr(torch, _DTYPES.get(kind.lstrip("*k"), "float32"))
            whole = torch.empty(32, dtype=dtype)
            args.append(whole if index in divisible else whole[1:])
        elif kind.startswith(("fp", "bf")):
            args.append(1.5)
        else:
            args.append(1024 if index in divisible else 1023)
    launchers = getattr(tuner, "launchers", None) or []
    chosen = len(launchers) == 1 and hasattr(launchers[0], "config")
    configs = [launchers[0].config] if chosen else tuner.configs
    out = []
    for config in configs:
        kwargs = {k: v for k, v in constants.items() if isinstance(k, str)}
        kwargs.update(config.kwargs)
        kwargs["num_warps"] = config.num_warps
        kwargs["num_stages"] = config.num_stages
        out.append((tuple(args), kwargs))
    return out


def _divisible_indices(configs: list[Any]) -> set[int]:
    """Argument indices Inductor marked ``tt.divisibility`` 16, from its attrs: a dict
    ``{(index,): [["tt.divisibility", 16]]}`` (newer torch) or an ``AttrsDescriptor`` (older)."""
    if not configs:
        return set()
    first = configs[0]
    if isinstance(first, dict):
        return {key[0] for key, attrs in first.items() if key and _DIVISIBLE.search(str(attrs))}
    return set(getattr(first, "divisible_by_16", ()) or ())
