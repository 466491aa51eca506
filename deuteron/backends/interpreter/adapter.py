"""The one place that touches Triton's interpreter internals.

Supported: triton 3.6 (the GPU machines') through 3.9 (the newest on PyPI), both tested in CI.
What we rely on, all in ``triton.runtime.interpreter``:
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

We wrap those methods on the instance (never edit Triton's source) and restore them when the last
user goes. One mend: ``_patch_lang_tensor`` (which gives ``tl.tensor`` its ``__index__`` while a
kernel runs) is wrapped so a 1-element tensor converts to int under NumPy >= 2.4 on Triton 3.6.

Two users: the profiling backend (``install``: bytes and flops per launch) and the
sanitizer (``attach``: an :class:`AccessListener` sees every access, program and non-finite value).
"""

from __future__ import annotations

import inspect
import linecache
import math
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import CodeType, SimpleNamespace
from typing import Any, Protocol

import numpy as np

SUPPORTED_TRITON = ((3, 6), (3, 9))
_WRAPPED = (
    "create_masked_load",
    "create_masked_store",
    "create_dot",
    "create_atomic_rmw",
    "create_atomic_cas",
)
# Wrapped only while a sanitizer is attached, so profiling does not pay for them.
_CHECK_WRAPPED = ("set_grid_dim", "set_grid_idx")
# The float producers whose results are checked for NaN/Inf, and the op name a finding shows
# (None: the numpy function the op applies, its last argument). The first four every supported
# Triton has; the others are wrapped where present.
_FLOAT_OPS: dict[str, str | None] = {
    "binary_op": None,
    "unary_op": None,
    "ternary_op": None,
    "create_fma": "fma",
    "create_rsqrt": "rsqrt",
    "cast_impl": "cast",  # a cast to a narrower float can overflow to inf
    "create_fp_to_fp": "cast",
}
_FLOAT_OPS_REQUIRED = ("binary_op", "unary_op", "ternary_op", "create_fma")

LOAD, STORE, ATOMIC = 0, 1, 2
ACCESS_NAMES = ("load", "store", "atomic")


class AdapterError(RuntimeError):
    """This Triton's interpreter does not look like one we support."""


class Abort(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Raised by a listener to stop the launch; it reaches the caller itself, not as InterpreterError."""


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


@dataclass(frozen=True)
class Site:
    """A place in the user's kernel source; columns are 0-based, None where Python cannot tell."""

    file: str
    line: int
    function: str
    col: int | None = None
    end_col: int | None = None


@dataclass(frozen=True)
class TensorArg:
    """A tensor argument of a launch as the programs see it (the host copy, on a GPU machine)."""

    name: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str
    element_size: int
    data_ptr: int
    storage: int  # index into LaunchInfo.storages


@dataclass(frozen=True)
class StorageArea:
    """One allocation: every tensor argument that views it may address all of it."""

    start: int
    nbytes: int
    granule: int  # bytes per shadow cell: the gcd of the element sizes of its tensors
    tensors: tuple[int, ...]


@dataclass
class LaunchInfo:
    index: int
    kernel: str
    file: str
    grid: tuple[int, int, int]
    tensors: list[TensorArg]
    storages: list[StorageArea]
    starts: np.ndarray  # uint64, sorted: storages[i] spans [starts[i], ends[i])
    ends: np.ndarray

    @property
    def programs(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


class AccessListener(Protocol):
    """What the sanitizer hears, in order: launch_begin, then per program program_begin followed
    by its accesses and non-finite values, then launch_end. Addresses are the active lanes only."""

    def launch_begin(self, launch: LaunchInfo) -> None: ...

    def program_begin(self, seq: int, pid: tuple[int, int, int]) -> None: ...

    def access(
        self,
        kind: int,
        addresses: np.ndarray,
        storage: int | np.ndarray,
        element_size: int,
        site: int,
        values: np.ndarray | None,
        lanes: np.ndarray | None,
    ) -> None: ...

    def out_of_bounds(
        self, kind: int, addresses: np.ndarray, lanes: np.ndarray, near: int, element_size: int, site: int
    ) -> None: ...

    def nonfinite(self, op: str, inputs: tuple[np.ndarray, ...], output: np.ndarray, site: int) -> None: ...

    def launch_end(self, launch: LaunchInfo, error: BaseException | None) -> None: ...


class _Counter:
    __slots__ = ("loaded", "stored", "flops")

    def __init__(self) -> None:
        self.loaded = 0
        self.stored = 0
        self.flops: dict[int, int] = {}


_counter: _Counter | None = None
_listener: Callable[[LaunchRecord], None] | None = None
_checker: AccessListener | None = None
_launch: LaunchInfo | None = None
_launch_args: tuple[Any, tuple[Any, ...], dict[str, Any]] | None = None
_launch_count = 0
_seq = -1
_saved: dict[str, Any] = {}
_launch_lock = threading.RLock()

# Source sites, interned: the sanitizer passes small ints around and resolves them when reporting.
sites: list[Site] = []
_site_ids: dict[tuple[CodeType, int], int] = {}
_user_code: dict[CodeType, bool] = {}
_positions: dict[CodeType, list[Any]] = {}


def _interpreter_module() -> Any:
    try:
        from triton.runtime import interpreter
    except ImportError as exc:  # pragma: no cover - triton is a dependency
        raise AdapterError(f"cannot import Triton's interpreter ({exc}); pip install 'triton>=3.6'") from None
    needed = ("InterpretedFunction", "interpreter_builder", "GridExecutor")
    missing = [n for n in needed if not hasattr(interpreter, n)]
    builder = getattr(interpreter, "interpreter_builder", None)
    for name in (*_WRAPPED, *_CHECK_WRAPPED, *_FLOAT_OPS_REQUIRED):
        if builder is not None and not hasattr(builder, name):
            missing.append(f"interpreter_builder.{name}")
    if not hasattr(getattr(interpreter, "GridExecutor", None), "_init_args_hst"):
        missing.append("GridExecutor._init_args_hst")
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
    _patch(interp)


def uninstall() -> None:
    global _listener, _counter
    _listener = None
    _counter = None
    if _checker is None:
        _unpatch()


class _Fanout:
    """Several checks at once (a ``deuteron.check`` inside ``deuteron check``): each hears everything."""

    def __init__(self, checkers: list[AccessListener]) -> None:
        self.checkers = checkers

    def __getattr__(self, name: str) -> Callable[..., None]:
        methods = [getattr(c, name) for c in self.checkers]

        def call(*args: Any) -> None:
            for method in methods:
                method(*args)

        return call


_attached: list[AccessListener] = []


def attach(checker: AccessListener) -> None:
    """Let ``checker`` see every access of every interpreted launch (nested checks all hear it).

    While attached, lanes that address no tensor argument are masked off before Triton touches
    memory, so a buggy kernel reads ``other`` (or 0) there instead of garbage, and cannot write
    outside its tensors or crash the process.
    """
    global _checker
    interp = _interpreter_module()
    if checker in _attached:
        raise AdapterError("this check is already attached to Triton's interpreter")
    if _launch is not None:
        raise AdapterError("a check cannot start while an interpreted launch is running")
    _attached.append(checker)
    _checker = checker if len(_attached) == 1 else _Fanout(list(_attached))  # type: ignore[assignment]
    _patch(interp)
    _patch_checks(interp)


def detach(checker: AccessListener | None = None) -> None:
    global _checker, _launch, _launch_args
    if checker is None:
        _attached.clear()
    elif checker in _attached:
        _attached.remove(checker)
    if _attached:
        _checker = _attached[0] if len(_attached) == 1 else _Fanout(list(_attached))  # type: ignore[assignment]
        return
    _checker = None
    _launch = None
    _launch_args = None
    _unpatch_checks()
    if _listener is None:
        _unpatch()


def _patch(interp: Any) -> None:
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
        if _launch is not None:
            mask = _guard(LOAD, ptrs, mask, None)
        return orig_load(builder, ptrs, mask, *rest, **kw)

    def create_masked_store(ptrs: Any, value: Any, mask: Any, *rest: Any, **kw: Any) -> Any:
        c = _counter
        if c is not None:
            c.stored += _active_lanes(ptrs.data, mask) * _element_bytes(ptrs)
        if _launch is not None:
            mask = _guard(STORE, ptrs, mask, value.data)
        return orig_store(builder, ptrs, value, mask, *rest, **kw)

    def create_dot(a: Any, b: Any, d: Any, *rest: Any, **kw: Any) -> Any:
        c = _counter
        if c is not None:
            ash, bsh = a.data.shape, b.data.shape
            m, k, n = ash[-2], ash[-1], bsh[-1]
            batch = int(np.prod(ash[:-2])) if len(ash) > 2 else 1
            width = a.dtype.primitive_bitwidth
            c.flops[width] = c.flops.get(width, 0) + 2 * batch * m * n * k
        out = orig_dot(builder, a, b, d, *rest, **kw)
        if _launch is not None:
            _check_finite("dot", (a.data, b.data, d.data), out.data)
        return out

    def create_atomic_rmw(op: Any, ptr: Any, val: Any, mask: Any, *rest: Any, **kw: Any) -> Any:
        c = _counter
        if c is not None:
            n = _active_lanes(ptr.data, mask) * _element_bytes(ptr)
            c.loaded += n
            c.stored += n
        if _launch is not None:
            mask = _guard(ATOMIC, ptr, mask, None)
        return orig_rmw(builder, op, ptr, val, mask, *rest, **kw)

    def create_atomic_cas(ptr: Any, cmp: Any, val: Any, *rest: Any, **kw: Any) -> Any:
        c = _counter
        if c is not None:
            n = int(ptr.data.size) * _element_bytes(ptr)
            c.loaded += n
            c.stored += n
        if _launch is not None:
            ok = _guard(ATOMIC, ptr, None, None)
            if ok is not None:  # CAS has no mask: run it on the lanes inside a tensor only; the others
                # answer "swapped" (cmp), so a spin lock on a bad address moves on instead of hanging
                return _partial_cas(orig_cas, builder, ptr, cmp, val, ok.data, rest, kw)
        return orig_cas(builder, ptr, cmp, val, *rest, **kw)

    # Triton 3.6 turns a 1-element tensor into an int with int(array), which NumPy 2.4 refuses
    # ("only 0-dimensional arrays..."), so loops over runtime bounds fail; 3.7 fixed it the way
    # done here. The GPU machines pair Triton 3.6 with NumPy 2.5, hence this mend.
    orig_tensor_patch = getattr(interp, "_patch_lang_tensor", None)
    if orig_tensor_patch is not None:

        def _patch_lang_tensor(tensor: Any, scope: Any) -> None:
            orig_tensor_patch(tensor, scope)
            scope.set_attr(tensor, "__index__", _tensor_index)

        _saved["patch_lang_tensor"] = orig_tensor_patch
        interp._patch_lang_tensor = _patch_lang_tensor

    builder.create_masked_load = create_masked_load
    builder.create_masked_store = create_masked_store
    builder.create_dot = create_dot
    builder.create_atomic_rmw = create_atomic_rmw
    builder.create_atomic_cas = create_atomic_cas
    orig_run = _saved["run"]

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        if warmup or (_listener is None and _checker is None):
            return orig_run(self, *args, grid=grid, warmup=warmup, **kwargs)
        # The interpreter keeps the program id in one shared builder, so launches from several
        # threads would corrupt each other's results: run them one at a time.
        with _launch_lock:
            return _recorded_run(self, args, grid, kwargs)

    def _recorded_run(self: Any, args: tuple[Any, ...], grid: Any, kwargs: dict[str, Any]) -> Any:
        global _counter
        if _counter is not None:  # a launch from inside a launch's hook: count it with the outer one
            return orig_run(self, *args, grid=grid, warmup=False, **kwargs)
        counter = _counter = _Counter() if _listener is not None else None
        start = time.perf_counter_ns()
        try:
            return _checked_run(orig_run, self, args, grid, kwargs)
        finally:
            end = time.perf_counter_ns()
            _counter = None
            listener = _listener
            if listener is not None and counter is not None:
                grid3 = tuple(int(g) for g in getattr(builder, "grid_dim", (1, 1, 1)))
                listener(
                    LaunchRecord(
                        kernel=self.fn.__name__,
                        grid=(grid3[0], grid3[1], grid3[2]),
                        start_ns=start,
                        end_ns=end,
                        bytes_loaded=counter.loaded,
                        bytes_stored=counter.stored,
                        flops=counter.flops,
                        _metadata_fn=_metadata_thunk(self, grid3, args, kwargs),
                    )
                )

    interp.InterpretedFunction.run = run


def _checked_run(orig_run: Any, fn: Any, args: tuple[Any, ...], grid: Any, kwargs: dict[str, Any]) -> Any:
    global _launch, _launch_args
    error: BaseException | None = None
    try:
        return orig_run(fn, *args, grid=grid, warmup=False, **kwargs)
    except Exception as exc:
        # The interpreter wraps whatever a program raised in InterpreterError(repr(e)); a
        # listener's Abort must reach the caller as itself.
        cause = exc.__cause__
        error = cause if isinstance(cause, Abort) else exc
        if error is not exc:
            raise error from None
        raise
    finally:
        launch, checker = _launch, _checker
        _launch = None
        _launch_args = None
        if launch is not None and checker is not None:
            checker.launch_end(launch, error)


def _patch_checks(interp: Any) -> None:
    if "checks" in _saved:
        return
    builder = _saved["builder"]
    cls = type(builder)
    executor = interp.GridExecutor
    orig_init_args = executor._init_args_hst
    _saved["checks"] = (executor, orig_init_args)
    orig_dim, orig_idx = cls.set_grid_dim, cls.set_grid_idx
    rewritten = interp.InterpretedFunction.rewritten_fn

    def _init_args_hst(self: Any, args_dev: Any, kwargs: Any) -> Any:
        global _launch_args
        result = orig_init_args(self, args_dev, kwargs)
        if _checker is not None:
            _launch_args = (self.fn, result[0], result[1])
        return result

    def set_grid_dim(nx: int, ny: int, nz: int) -> None:
        global _launch, _launch_count, _seq
        orig_dim(builder, nx, ny, nz)
        pending, checker = _launch_args, _checker
        if pending is None or checker is None:
            return
        _launch_count += 1
        _seq = -1
        _note_rewritten(rewritten)
        _launch = _launch_info(_launch_count, pending[0], pending[1], pending[2], (int(nx), int(ny), int(nz)))
        checker.launch_begin(_launch)

    def set_grid_idx(x: int, y: int, z: int) -> None:
        global _seq
        orig_idx(builder, x, y, z)
        checker = _checker
        if _launch is not None and checker is not None:
            _seq += 1
            checker.program_begin(_seq, (int(x), int(y), int(z)))

    builder.set_grid_dim = set_grid_dim
    builder.set_grid_idx = set_grid_idx
    for name, label in _FLOAT_OPS.items():
        orig_op = getattr(cls, name, None)
        if orig_op is not None:
            builder.__dict__[name] = _finite_checked(builder, orig_op, label)
    executor._init_args_hst = _init_args_hst


def _finite_checked(builder: Any, orig: Any, label: str | None) -> Callable[..., Any]:
    """Wrap a float-producing builder method: its result is checked while a launch is checked."""

    def op(*args: Any) -> Any:
        out = orig(builder, *args)
        if _launch is not None:
            name = label or str(getattr(args[-1], "__name__", "op"))
            inputs = tuple(a.data for a in args if isinstance(getattr(a, "data", None), np.ndarray))
            _check_finite(name, inputs, out.data)
        return out

    return op


def _unpatch_checks() -> None:
    saved = _saved.pop("checks", None)
    if saved is None:
        return
    executor, orig_init_args = saved
    executor._init_args_hst = orig_init_args
    builder = _saved["builder"]
    for name in (*_CHECK_WRAPPED, *_FLOAT_OPS):
        builder.__dict__.pop(name, None)


def _tensor_index(self: Any) -> int:
    data = self.handle.data
    return int(data.reshape(-1)[0]) if data.size == 1 else int(data)


def _unpatch() -> None:
    if not _saved:
        return
    _unpatch_checks()
    orig_tensor_patch = _saved.get("patch_lang_tensor")
    if orig_tensor_patch is not None:
        from triton.runtime import interpreter

        interpreter._patch_lang_tensor = orig_tensor_patch
    builder = _saved["builder"]
    for name in _WRAPPED:
        builder.__dict__.pop(name, None)
    _saved["class"].run = _saved["run"]
    _saved.clear()


# ---------------------------------------------------------------------------------------------
# The sanitizer's view of a launch


def _tensor_like(value: Any) -> bool:
    return hasattr(value, "data_ptr") and hasattr(value, "untyped_storage")


def _tensor_args(bound: dict[str, Any]) -> list[tuple[str, Any]]:
    """Every tensor the programs can address, named after its parameter (x[1], desc.base)."""
    found: list[tuple[str, Any]] = []

    def visit(name: str, value: Any) -> None:
        if type(value).__name__ == "TensorWrapper" and hasattr(value, "base"):  # tl.reinterpret's wrapper
            value = value.base
        if _tensor_like(value):
            found.append((name, value))
        elif isinstance(value, tuple):
            for i, item in enumerate(value):
                visit(f"{name}[{i}]", item)
        elif hasattr(value, "base") and hasattr(value, "block_shape"):  # a TensorDescriptor
            visit(f"{name}.base", value.base)

    for name, value in bound.items():
        visit(name, value)
    return found


def _launch_info(
    index: int, fn: Any, args_hst: Any, kwargs_hst: dict[str, Any], grid: tuple[int, int, int]
) -> LaunchInfo:
    try:
        bound = inspect.getcallargs(fn, *args_hst, **kwargs_hst)
    except TypeError:
        bound = {f"arg{i}": a for i, a in enumerate(args_hst)} | dict(kwargs_hst)
    areas: dict[int, list[int]] = {}
    sizes: dict[int, int] = {}
    raw: list[tuple[str, Any, int]] = []
    for name, t in _tensor_args(bound):
        storage = t.untyped_storage()
        start = int(storage.data_ptr())
        sizes[start] = max(sizes.get(start, 0), int(storage.nbytes()))
        raw.append((name, t, start))
    order = sorted(sizes)
    index_of = {start: i for i, start in enumerate(order)}
    tensors: list[TensorArg] = []
    for name, t, start in raw:
        areas.setdefault(start, []).append(len(tensors))
        tensors.append(
            TensorArg(
                name=name,
                shape=tuple(int(s) for s in t.shape),
                strides=tuple(int(s) for s in t.stride()),
                dtype=str(t.dtype).removeprefix("torch."),
                element_size=int(t.element_size()),
                data_ptr=int(t.data_ptr()),
                storage=index_of[start],
            )
        )
    storages = [
        StorageArea(
            start=start,
            nbytes=sizes[start],
            granule=math.gcd(*(tensors[i].element_size for i in areas[start])),
            tensors=tuple(areas[start]),
        )
        for start in order
    ]
    starts = np.array([s.start for s in storages], dtype=np.uint64)
    ends = np.array([s.start + s.nbytes for s in storages], dtype=np.uint64)
    code = getattr(fn, "__code__", None)
    return LaunchInfo(
        index=index,
        kernel=getattr(fn, "__name__", "kernel"),
        file=code.co_filename if code is not None else "",
        grid=grid,
        tensors=tensors,
        storages=storages,
        starts=starts,
        ends=ends,
    )


def _guard(kind: int, ptrs: Any, mask: Any, values: np.ndarray | None) -> Any:
    """Tell the checker about an access; mask off the lanes that address no tensor argument."""
    launch, checker = _launch, _checker
    if launch is None or checker is None:
        return mask
    addrs = ptrs.data
    m: np.ndarray | None = None
    if mask is not None:
        m = mask.data
        if m.shape != addrs.shape:
            m = np.broadcast_to(m, addrs.shape)
        active = addrs[m]
    else:
        active = addrs.reshape(-1)
    if active.size == 0:
        return mask
    esize = _element_bytes(ptrs)
    site = _site()
    starts, ends = launch.starts, launch.ends
    lo = active.min()
    i = int(np.searchsorted(starts, lo, side="right")) - 1
    if i >= 0 and int(active.max()) + esize <= int(ends[i]):  # the usual case: one tensor, all inside
        checker.access(kind, active, i, esize, site, values, m)
        return mask
    region = np.searchsorted(starts, active, side="right").astype(np.intp) - 1
    clipped = np.maximum(region, 0)
    inside = (region >= 0) & (active + np.uint64(esize) <= ends[clipped])
    outside = ~inside
    flat_positions = np.flatnonzero(m) if m is not None else np.arange(active.size)
    ok_full = np.zeros(addrs.shape, dtype=bool)
    ok_full.reshape(-1)[flat_positions[inside]] = True
    if inside.any():
        near = int(np.bincount(region[inside]).argmax())
    else:
        near = _nearest_storage(launch, int(active[outside][0]))
    checker.out_of_bounds(kind, active[outside], flat_positions[outside], near, esize, site)
    if inside.any():
        checker.access(kind, active[inside], region[inside], esize, site, values, ok_full)
    return type(ptrs)(ok_full, mask.dtype if mask is not None else _int1())


def _nearest_storage(launch: LaunchInfo, address: int) -> int:
    if not launch.storages:
        return -1
    gaps = [
        (s.start - address) if address < s.start else max(0, address - (s.start + s.nbytes))
        for s in launch.storages
    ]
    return int(np.argmin(gaps))


def _int1() -> Any:
    import triton.language as tl

    return tl.int1


def _partial_cas(
    orig_cas: Any, builder: Any, ptr: Any, cmp: Any, val: Any, ok: np.ndarray, rest: Any, kw: Any
) -> Any:
    handle = type(ptr)
    cmp_data = np.broadcast_to(cmp.data, ptr.data.shape)
    val_data = np.broadcast_to(val.data, ptr.data.shape)
    result = np.array(cmp_data, copy=True)
    if ok.any():
        part = orig_cas(
            builder,
            handle(ptr.data[ok], ptr.dtype),
            handle(np.ascontiguousarray(cmp_data[ok]), cmp.dtype),
            handle(np.ascontiguousarray(val_data[ok]), val.dtype),
            *rest,
            **kw,
        )
        result[ok] = part.data
    return handle(result, cmp.dtype.scalar if hasattr(cmp.dtype, "scalar") else cmp.dtype)


def _check_finite(op: str, inputs: tuple[np.ndarray, ...], output: np.ndarray) -> None:
    checker = _checker
    if checker is None or output.dtype.kind != "f" or np.isfinite(output).all():
        return
    checker.nonfinite(op, inputs, output, _site())


_PACKAGE_DIRS: tuple[str, ...] = ()


def _is_user(filename: str) -> bool:
    global _PACKAGE_DIRS
    if not _PACKAGE_DIRS:
        import triton

        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        _PACKAGE_DIRS = (os.path.dirname(os.path.abspath(triton.__file__)) + os.sep, here + os.sep)
    return not os.path.abspath(filename).startswith(_PACKAGE_DIRS)


def _site() -> int:
    """The innermost frame of the user's kernel (or a @jit helper it called) right now."""
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        user = _user_code.get(code)
        if user is None:
            user = _user_code[code] = _is_user(code.co_filename)
        if user:
            key = (code, frame.f_lasti)
            sid = _site_ids.get(key)
            if sid is None:
                sid = _site_ids[key] = len(sites)
                sites.append(_make_site(code, frame.f_lasti, frame.f_lineno or code.co_firstlineno))
            return sid
        frame = frame.f_back  # type: ignore[assignment]
    return -1


_rewritten_codes: set[CodeType] = set()


def _note_rewritten(rewritten: dict[Any, Any]) -> None:
    if len(rewritten) != len(_rewritten_codes):
        _rewritten_codes.update(f.__code__ for f in rewritten.values() if hasattr(f, "__code__"))


def _make_site(code: CodeType, lasti: int, line: int) -> Site:
    col = end_col = None
    if hasattr(code, "co_positions"):
        positions = _positions.get(code)
        if positions is None:
            positions = _positions[code] = list(code.co_positions())
        i = lasti // 2
        if 0 <= i < len(positions):
            first, last, c0, c1 = positions[i]
            if first == line and c0 is not None:
                # The interpreter re-parses a kernel's source dedented; put the columns back.
                shift = 0
                if code in _rewritten_codes:
                    text = linecache.getline(code.co_filename, code.co_firstlineno)
                    shift = len(text) - len(text.lstrip())
                col = c0 + shift
                end_col = c1 + shift if (last == line and c1 is not None) else None
    return Site(file=code.co_filename, line=line, function=code.co_name, col=col, end_col=end_col)


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
