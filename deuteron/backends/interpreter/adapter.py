"""The one place that touches Triton's interpreter internals.

Supported: triton 3.6 (the GPU machines') through 3.9 (the newest on PyPI), both tested in CI.
What we rely on, all in ``triton.runtime.interpreter``:
- ``InterpretedFunction.run(*args, grid, warmup, **kwargs)`` runs one launch; ``.fn`` and
  ``.kwargs["launch_metadata"]`` describe the kernel;
- the module singleton ``interpreter_builder``, whose ``create_masked_load``/``create_masked_store``
  carry every global load and store (plain, masked, atomic load/store, tensor descriptors),
  ``create_dot`` every ``tl.dot``, ``create_atomic_rmw``/``create_atomic_cas`` the atomics, and
  whose ``grid_dim`` holds the launch's grid once it ran.

We wrap those methods on the instance (never edit Triton's source) and restore them on uninstall.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

SUPPORTED_TRITON = ((3, 6), (3, 9))
_WRAPPED = (
    "create_masked_load",
    "create_masked_store",
    "create_dot",
    "create_atomic_rmw",
    "create_atomic_cas",
)


class AdapterError(RuntimeError):
    """This Triton's interpreter does not look like one we support."""


@dataclass
class LaunchRecord:
    """What one interpreted launch did: exact bytes (active lanes only) and tl.dot flops."""

    kernel: str
    grid: tuple[int, int, int] = (1, 1, 1)
    start_ns: int = 0
    end_ns: int = 0
    bytes_loaded: int = 0
    bytes_stored: int = 0
    flops: dict[int, int] = field(default_factory=dict)  # operand width in bits -> flops
    _metadata_fn: Callable[[], dict[str, Any] | None] | None = None

    @property
    def programs(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def launch_metadata(self) -> dict[str, Any] | None:
        """The kernel's ``launch_metadata`` hook evaluated as Triton would: (grid, metadata, args)."""
        return self._metadata_fn() if self._metadata_fn else None


class _Counter:
    __slots__ = ("loaded", "stored", "flops")

    def __init__(self) -> None:
        self.loaded = 0
        self.stored = 0
        self.flops: dict[int, int] = {}


_counter: _Counter | None = None
_listener: Callable[[LaunchRecord], None] | None = None
_saved: dict[str, Any] = {}
_launch_lock = threading.RLock()


def _interpreter_module() -> Any:
    try:
        from triton.runtime import interpreter
    except ImportError as exc:  # pragma: no cover - triton is a dependency
        raise AdapterError(f"cannot import Triton's interpreter ({exc}); pip install 'triton>=3.6'") from None
    needed = ("InterpretedFunction", "interpreter_builder")
    missing = [n for n in needed if not hasattr(interpreter, n)]
    builder = getattr(interpreter, "interpreter_builder", None)
    for name in (*_WRAPPED, "set_grid_dim"):
        if builder is not None and not hasattr(builder, name):
            missing.append(f"interpreter_builder.{name}")
    if missing:
        import triton

        raise AdapterError(
            f"triton {triton.__version__} has no {', '.join(missing)}; "
            f"supported: triton {SUPPORTED_TRITON[0][0]}.{SUPPORTED_TRITON[0][1]} to "
            f"{SUPPORTED_TRITON[1][0]}.{SUPPORTED_TRITON[1][1]}"
        )
    return interpreter


def _element_bytes(handle: Any) -> int:
    dtype = handle.dtype
    while hasattr(dtype, "element_ty"):
        dtype = dtype.element_ty
    return max(1, dtype.primitive_bitwidth // 8)


def _active_lanes(ptrs: np.ndarray, mask: Any) -> int:
    if mask is None:
        return int(ptrs.size)
    m = mask.data
    if m.shape != ptrs.shape:
        m = np.broadcast_to(m, ptrs.shape)
    return int(np.count_nonzero(m))


def install(listener: Callable[[LaunchRecord], None]) -> None:
    """Route every interpreted launch's record to ``listener`` (one listener at a time)."""
    global _listener
    interp = _interpreter_module()
    _listener = listener
    if _saved:
        return
    builder = interp.interpreter_builder
    cls = type(builder)
    _saved["builder"] = builder
    _saved["run"] = interp.InterpretedFunction.run
    _saved["class"] = interp.InterpretedFunction

    orig_load, orig_store = cls.create_masked_load, cls.create_masked_store
    orig_dot, orig_rmw, orig_cas = cls.create_dot, cls.create_atomic_rmw, cls.create_atomic_cas

    def create_masked_load(ptrs: Any, mask: Any, *rest: Any, **kw: Any) -> Any:
        c = _counter
        if c is not None:
            c.loaded += _active_lanes(ptrs.data, mask) * _element_bytes(ptrs)
        return orig_load(builder, ptrs, mask, *rest, **kw)

    def create_masked_store(ptrs: Any, value: Any, mask: Any, *rest: Any, **kw: Any) -> Any:
        c = _counter
        if c is not None:
            c.stored += _active_lanes(ptrs.data, mask) * _element_bytes(ptrs)
        return orig_store(builder, ptrs, value, mask, *rest, **kw)

    def create_dot(a: Any, b: Any, d: Any, *rest: Any, **kw: Any) -> Any:
        c = _counter
        if c is not None:
            ash, bsh = a.data.shape, b.data.shape
            m, k, n = ash[-2], ash[-1], bsh[-1]
            batch = int(np.prod(ash[:-2])) if len(ash) > 2 else 1
            width = a.dtype.primitive_bitwidth
            c.flops[width] = c.flops.get(width, 0) + 2 * batch * m * n * k
        return orig_dot(builder, a, b, d, *rest, **kw)

    def create_atomic_rmw(op: Any, ptr: Any, val: Any, mask: Any, *rest: Any, **kw: Any) -> Any:
        c = _counter
        if c is not None:
            n = _active_lanes(ptr.data, mask) * _element_bytes(ptr)
            c.loaded += n
            c.stored += n
        return orig_rmw(builder, op, ptr, val, mask, *rest, **kw)

    def create_atomic_cas(ptr: Any, *rest: Any, **kw: Any) -> Any:
        c = _counter
        if c is not None:
            n = int(ptr.data.size) * _element_bytes(ptr)
            c.loaded += n
            c.stored += n
        return orig_cas(builder, ptr, *rest, **kw)

    builder.create_masked_load = create_masked_load
    builder.create_masked_store = create_masked_store
    builder.create_dot = create_dot
    builder.create_atomic_rmw = create_atomic_rmw
    builder.create_atomic_cas = create_atomic_cas
    orig_run = _saved["run"]

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        if warmup or _listener is None:
            return orig_run(self, *args, grid=grid, warmup=warmup, **kwargs)
        # The interpreter keeps the program id in one shared builder, so launches from several
        # threads would corrupt each other's results: run them one at a time.
        with _launch_lock:
            return _recorded_run(self, args, grid, kwargs)

    def _recorded_run(self: Any, args: tuple[Any, ...], grid: Any, kwargs: dict[str, Any]) -> Any:
        global _counter
        if _counter is not None:  # a launch from inside a launch's hook: count it with the outer one
            return orig_run(self, *args, grid=grid, warmup=False, **kwargs)
        counter = _counter = _Counter()
        start = time.perf_counter_ns()
        try:
            return orig_run(self, *args, grid=grid, warmup=False, **kwargs)
        finally:
            end = time.perf_counter_ns()
            _counter = None
            grid3 = tuple(int(g) for g in getattr(builder, "grid_dim", (1, 1, 1)))
            record = LaunchRecord(
                kernel=self.fn.__name__,
                grid=(grid3[0], grid3[1], grid3[2]),
                start_ns=start,
                end_ns=end,
                bytes_loaded=counter.loaded,
                bytes_stored=counter.stored,
                flops=counter.flops,
                _metadata_fn=_metadata_thunk(self, grid3, args, kwargs),
            )
            listener = _listener
            if listener is not None:
                listener(record)

    interp.InterpretedFunction.run = run


def _metadata_thunk(
    jit_fn: Any, grid: tuple[int, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Callable[[], dict[str, Any] | None] | None:
    hook = getattr(jit_fn, "kwargs", {}).get("launch_metadata")
    if hook is None:
        return None

    def evaluate() -> dict[str, Any] | None:
        names = list(getattr(jit_fn, "arg_names", []))
        bound: dict[str, Any] = dict(zip(names, args, strict=False))
        bound.update({k: v for k, v in kwargs.items() if k in names})
        # Defaults the caller left out, as Triton's own binding would fill them in.
        for p in inspect.signature(jit_fn.fn).parameters.values():
            if p.name not in bound and p.default is not inspect.Parameter.empty:
                bound[p.name] = p.default
        meta = SimpleNamespace(
            name=jit_fn.fn.__name__,
            num_warps=kwargs.get("num_warps", 4),
            num_stages=kwargs.get("num_stages", 3),
        )
        result = hook(grid, meta, bound)
        return dict(result) if result else None

    return evaluate


def uninstall() -> None:
    global _listener, _counter
    _listener = None
    _counter = None
    if not _saved:
        return
    builder = _saved["builder"]
    for name in _WRAPPED:
        builder.__dict__.pop(name, None)
    _saved["class"].run = _saved["run"]
    _saved.clear()
