"""Events from Triton's interpreter: what each launch cost (for profiling) and every access each
program makes (for the sanitizer). The one module that touches the interpreter's internals.

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

The builder's methods are wrapped on the instance (never in Triton's source), through the hook
manager: group ``interpreter`` (counting, the launch loop) while a profiler or a sanitizer listens,
group ``interpreter.sanitizer`` (programs, host tensors, float results) while a sanitizer listens.
The ``interpreter`` group also carries the mends of interpreter bugs (:mod:`.mends`) and what a
GPU script needs to run here at all (with the emulated driver's own group, where Triton has no
driver: :mod:`.emulated_driver`): ``@triton.autotune`` running each config once (:mod:`.autotune`),
``tl.extra.libdevice`` in NumPy (:mod:`.libdevice`), and bf16 arithmetic done on values rather
than on their bits (:mod:`.bf16`).

Two listeners: a profiler (``install``: a :class:`LaunchRecord` per launch) and a sanitizer
(``attach``: a :class:`Sanitizer` hears every launch, program, access and non-finite value and
may mask lanes off before Triton touches memory). What is checked, and how, is the sanitizer's
business (``deuteron.check``); this module only reports and obeys.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from deuteron.model.access import ADDRESS_MASK, ATOMIC, LOAD, STORE, TAG_SHIFT
from deuteron.process.patches import MANAGER, AttributePatch, Patch, WrapPatch
from deuteron.triton import unsupported
from deuteron.triton.interpreter import sites
from deuteron.triton.interpreter.mends import atomics, bf16, compile_time, device_calls, libdevice
from deuteron.triton.interpreter.mends import scalars as mends
from deuteron.triton.interpreter.sanitizer import Sanitizer
from deuteron.triton.runtime import autotune, emulated_driver, launch_metadata
from deuteron.triton.runtime import launch_hooks as launch_hook

_WRAPPED = (
    "create_masked_load",
    "create_masked_store",
    "create_dot",
    "create_atomic_rmw",
    "create_atomic_cas",
)
# Wrapped only while a sanitizer listens, so profiling does not pay for them.
_SANITIZER_WRAPPED = ("set_grid_dim", "set_grid_idx")
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
GROUP = "interpreter"
SANITIZER_GROUP = "interpreter.sanitizer"


class Abort(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Raised by a sanitizer to stop the launch; it reaches the caller itself, not as InterpreterError."""


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

    @property
    def programs(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


class _Counter:
    __slots__ = ("loaded", "stored", "flops")

    def __init__(self) -> None:
        self.loaded = 0
        self.stored = 0
        self.flops: dict[int, int] = {}


class _State:
    """Everything this module remembers between the interpreter's calls, in one place."""

    __slots__ = ("profiler", "sanitizer", "counter", "checking", "pending", "lock")

    def __init__(self) -> None:
        self.profiler: Callable[[LaunchRecord], None] | None = None
        self.sanitizer: Sanitizer | None = None
        self.counter: _Counter | None = None  # the launch being counted for the profiler
        self.checking = False  # the running launch is being checked
        self.pending = False  # host tensors described to the sanitizer; pointers not made yet
        # The interpreter keeps the program id in one shared builder, so launches from several
        # threads would corrupt each other's results: they run one at a time.
        self.lock = threading.RLock()


_s = _State()


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
        *_SANITIZER_WRAPPED,
        *_FLOAT_OPS_REQUIRED,
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
    if _s.profiler is None:
        MANAGER.acquire(GROUP, lambda: _base_patches(interp))
        emulated_driver.acquire()
    _s.profiler = profiler


def uninstall() -> None:
    if _s.profiler is not None:
        _s.profiler = None
        _s.counter = None
        emulated_driver.release()
        MANAGER.release(GROUP)


def attach(sanitizer: Sanitizer) -> None:
    """Let ``sanitizer`` hear every access of every interpreted launch (one at a time)."""
    interp = _interpreter_module()
    if _s.sanitizer is not None:
        raise RuntimeError("a sanitizer is already attached to Triton's interpreter")
    MANAGER.acquire(GROUP, lambda: _base_patches(interp))
    try:
        emulated_driver.acquire()
        MANAGER.acquire(SANITIZER_GROUP, lambda: _sanitizer_patches(interp))
    except BaseException:
        if MANAGER.holds(emulated_driver.GROUP):
            emulated_driver.release()
        MANAGER.release(GROUP)
        raise
    _s.sanitizer = sanitizer
    sites.reset()


def detach() -> None:
    if _s.sanitizer is None:
        return
    _s.sanitizer = None
    _s.checking = False
    _s.pending = False
    MANAGER.release(SANITIZER_GROUP)
    emulated_driver.release()
    MANAGER.release(GROUP)


# --- the patches -------------------------------------------------------------------------------


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


def _int1() -> Any:
    import triton.language as tl

    return tl.int1


_ADDRESS = np.uint64(ADDRESS_MASK)


def _untagged(handle: Any) -> Any:
    """A pointer handle with its provenance tags stripped: the real addresses, for Triton. (A copy:
    the kernel may use the same pointers again. Built without re-validating what Triton made.)"""
    out = object.__new__(type(handle))
    out.__dict__.update(handle.__dict__)
    out.data = handle.data & _ADDRESS
    if "attr" in out.__dict__:
        out.attr = {}  # as a handle made afresh would have
    return out


def _guarded(kind: int, ptrs: Any, mask: Any, values: np.ndarray | None) -> tuple[Any, Any]:
    """Tell the sanitizer about an access; the real pointers, and the lanes it keeps as the mask."""
    sanitizer = _s.sanitizer
    if sanitizer is None:
        return ptrs, mask
    keep = sanitizer.access(
        kind, ptrs.data, None if mask is None else mask.data, _element_bytes(ptrs), values
    )
    real = _untagged(ptrs)
    if keep is None:
        return real, mask
    return real, type(ptrs)(keep, mask.dtype if mask is not None else _int1())


def _base_patches(interp: Any) -> list[Patch]:
    builder = interp.interpreter_builder
    cls = type(builder)
    orig_load, orig_store = cls.create_masked_load, cls.create_masked_store
    orig_rmw, orig_cas = cls.create_atomic_rmw, cls.create_atomic_cas
    s = _s

    def create_masked_load(ptrs: Any, mask: Any, *rest: Any, **kw: Any) -> Any:
        c = s.counter
        if c is not None:
            c.loaded += _active_lanes(ptrs.data, mask) * _element_bytes(ptrs)
        if s.checking:
            ptrs, mask = _guarded(LOAD, ptrs, mask, None)
        return orig_load(builder, ptrs, mask, *rest, **kw)

    def create_masked_store(ptrs: Any, value: Any, mask: Any, *rest: Any, **kw: Any) -> Any:
        c = s.counter
        if c is not None:
            c.stored += _active_lanes(ptrs.data, mask) * _element_bytes(ptrs)
        if s.checking:
            stored = _float_values(value)  # bf16 decoded, so a NaN stored as bits is still one
            ptrs, mask = _guarded(STORE, ptrs, mask, stored if stored is not None else value.data)
            if value.dtype.is_ptr():  # a pointer stored to memory is a real address, not a tagged one
                value = _untagged(value)
        return orig_store(builder, ptrs, value, mask, *rest, **kw)

    def counted_dot(current: Callable[..., Any]) -> Callable[..., Any]:
        def create_dot(a: Any, b: Any, d: Any, *rest: Any, **kw: Any) -> Any:
            c = s.counter
            if c is not None:
                ash, bsh = a.data.shape, b.data.shape
                m, k, n = ash[-2], ash[-1], bsh[-1]
                batch = int(np.prod(ash[:-2])) if len(ash) > 2 else 1
                width = a.dtype.primitive_bitwidth
                c.flops[width] = c.flops.get(width, 0) + 2 * batch * m * n * k
            out = current(a, b, d, *rest, **kw)
            if s.checking:
                _check_result("dot", (a, b, d), out)
            return out

        return create_dot

    def create_atomic_rmw(op: Any, ptr: Any, val: Any, mask: Any, *rest: Any, **kw: Any) -> Any:
        c = s.counter
        if c is not None:
            n = _active_lanes(ptr.data, mask) * _element_bytes(ptr)
            c.loaded += n
            c.stored += n
        sanitizer = s.sanitizer
        if s.checking and sanitizer is not None:
            tagged = ptr.data
            ptr, mask = _guarded(ATOMIC, ptr, mask, None)
            out = orig_rmw(builder, op, ptr, val, mask, *rest, **kw)
            sanitizer.atomic_result(
                atomics.op_name(op), tagged, None if mask is None else mask.data, None, val.data, out.data
            )
            return out
        return orig_rmw(builder, op, ptr, val, mask, *rest, **kw)

    def create_atomic_cas(ptr: Any, cmp: Any, val: Any, *rest: Any, **kw: Any) -> Any:
        c = s.counter
        if c is not None:
            n = int(ptr.data.size) * _element_bytes(ptr)
            c.loaded += n
            c.stored += n
        sanitizer = s.sanitizer
        if s.checking and sanitizer is not None:
            tagged = ptr.data
            keep = sanitizer.access(ATOMIC, tagged, None, _element_bytes(ptr), None)
            ptr = _untagged(ptr)
            if keep is not None:  # CAS has no mask: run it on the kept lanes only; the others
                # answer "swapped" (cmp), so a spin lock on a bad address moves on instead of hanging
                out = atomics.partial_cas(orig_cas, builder, ptr, cmp, val, keep, rest, kw)
            else:
                out = orig_cas(builder, ptr, cmp, val, *rest, **kw)
            sanitizer.atomic_result("cas", tagged, keep, cmp.data, val.data, out.data)
            return out
        return orig_cas(builder, ptr, cmp, val, *rest, **kw)

    orig_run = interp.InterpretedFunction.run

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        if s.profiler is None and s.sanitizer is None:
            return orig_run(self, *args, grid=grid, warmup=warmup, **kwargs)
        if warmup:  # a GPU script sizing its grid from the compiled kernel
            return compile_time.InterpretedKernel(self, kwargs)
        with s.lock:
            return _recorded_run(orig_run, builder, self, args, grid, kwargs)

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
    patches += mends.patches(interp)
    return patches


def _recorded_run(
    orig_run: Any, builder: Any, fn: Any, args: tuple[Any, ...], grid: Any, kwargs: dict[str, Any]
) -> Any:
    s = _s
    if s.counter is not None:  # a launch from inside a launch's hook: count it with the outer one
        return orig_run(fn, *args, grid=grid, warmup=False, **kwargs)
    # Triton's launch hooks, called around the launch as a compiled launch calls them
    chains = launch_hook.chains_in_use() if s.profiler is not None else None
    metadata = None
    if chains is not None:
        metadata = launch_metadata.lazy(fn, launch_metadata.grid_of(fn, grid, args, kwargs), args, kwargs)
        chains[0](metadata)
    try:
        return _counted_run(orig_run, builder, fn, args, grid, kwargs)
    finally:
        if chains is not None and chains[1] is not None:
            chains[1](metadata)


def _counted_run(
    orig_run: Any, builder: Any, fn: Any, args: tuple[Any, ...], grid: Any, kwargs: dict[str, Any]
) -> Any:
    s = _s
    counter = s.counter = _Counter() if s.profiler is not None else None
    start = time.perf_counter_ns()
    try:
        return _checked_run(orig_run, fn, args, grid, kwargs)
    except compile_time.StaticAssertFailed:
        counter = None  # rejected at compile time on a GPU: never a launch
        raise
    finally:
        end = time.perf_counter_ns()
        s.counter = None
        profiler = s.profiler
        if profiler is not None and counter is not None:
            grid3 = tuple(int(g) for g in getattr(builder, "grid_dim", (1, 1, 1)))
            profiler(
                LaunchRecord(
                    kernel=fn.fn.__name__,
                    grid=(grid3[0], grid3[1], grid3[2]),
                    start_ns=start,
                    end_ns=end,
                    bytes_loaded=counter.loaded,
                    bytes_stored=counter.stored,
                    flops=counter.flops,
                )
            )


def _checked_run(orig_run: Any, fn: Any, args: tuple[Any, ...], grid: Any, kwargs: dict[str, Any]) -> Any:
    s = _s
    error: BaseException | None = None
    try:
        return orig_run(fn, *args, grid=grid, warmup=False, **kwargs)
    except Exception as exc:
        # The interpreter wraps whatever a program raised in InterpreterError(repr(e)); a
        # sanitizer's Abort must reach the caller as itself.
        cause = exc.__cause__
        error = cause if isinstance(cause, Abort) else exc
        if compile_time.from_static_assert(cause):
            error = compile_time.StaticAssertFailed(f"tl.static_assert failed in {fn.fn.__name__}: {cause}")
        if error is not exc:
            raise error from None
        raise
    finally:
        checking, sanitizer = s.checking, s.sanitizer
        s.checking = False
        s.pending = False
        if checking and sanitizer is not None:
            sanitizer.launch_end(error)


def _device_copies(
    interp: Any, args_dev: Any, kwargs_dev: dict[str, Any], args_hst: Any, kwargs_hst: dict[str, Any]
) -> dict[int, tuple[int, int]]:
    """Device storage address -> (bytes, host copy's address) for each device tensor argument the
    interpreter copied to the host (walked as its ``_restore_args_dev`` walks them)."""
    found: dict[int, tuple[int, int]] = {}
    unwrap = getattr(interp, "_unwrap_tensor", lambda t: t)

    def visit(dev: Any, hst: Any) -> None:
        if hasattr(dev, "data_ptr"):
            try:
                dev, hst = unwrap(dev), unwrap(hst)
                if dev.is_cpu:
                    return
                dev_storage, hst_storage = dev.untyped_storage(), hst.untyped_storage()
                found[int(dev_storage.data_ptr())] = (int(dev_storage.nbytes()), int(hst_storage.data_ptr()))
            except Exception:  # something tensor-like that is not a torch tensor
                return
        elif isinstance(dev, tuple) and isinstance(hst, tuple):
            for d, h in zip(dev, hst, strict=False):
                visit(d, h)
        elif hasattr(dev, "base") and hasattr(dev, "block_shape"):  # a TensorDescriptor
            visit(dev.base, getattr(hst, "base", None))

    for dev, hst in zip(args_dev, args_hst, strict=False):
        visit(dev, hst)
    for key, dev in kwargs_dev.items():
        visit(dev, kwargs_hst.get(key))
    return found


def _sanitizer_patches(interp: Any) -> list[Patch]:
    builder = interp.interpreter_builder
    cls = type(builder)
    executor = interp.GridExecutor
    orig_init_args = executor._init_args_hst
    orig_dim, orig_idx = cls.set_grid_dim, cls.set_grid_idx
    orig_int_to_ptr, orig_ptr_to_int = cls.create_int_to_ptr, cls.create_ptr_to_int
    rewritten = interp.InterpretedFunction.rewritten_fn
    s = _s

    def _init_args_hst(self: Any, args_dev: Any, kwargs: Any) -> Any:
        result = orig_init_args(self, args_dev, kwargs)
        sanitizer = s.sanitizer
        if sanitizer is not None:
            s.pending = True
            copies = _device_copies(interp, args_dev, kwargs, result[0], result[1])
            sanitizer.launch_prepare(self.fn, result[0], result[1], sites.table(), copies)
        return result

    def tagging(orig_cvt: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """A tensor argument's pointer, tagged with its tensor's index (wraps whatever converts
        arguments when the sanitizer's group is applied: the base group's mends included)."""

        def _implicit_cvt(arg: Any) -> Any:
            out = orig_cvt(arg)
            sanitizer = s.sanitizer
            if sanitizer is not None and s.pending and hasattr(arg, "data_ptr"):
                tag = sanitizer.tag_of(arg)
                handle = getattr(out, "handle", None)
                data = getattr(handle, "data", None)
                if tag and handle is not None and isinstance(data, np.ndarray):
                    handle.data = data | np.uint64(tag << TAG_SHIFT)
            return out

        return _implicit_cvt

    def create_int_to_ptr(value: Any, dst_type: Any) -> Any:
        out = orig_int_to_ptr(builder, value, dst_type)
        sanitizer = s.sanitizer
        if s.checking and sanitizer is not None:
            out = type(out)(sanitizer.tag_addresses(out.data), out.dtype)
        return out

    def create_ptr_to_int(value: Any, dst_type: Any) -> Any:
        out = orig_ptr_to_int(builder, value, dst_type)
        if s.checking:  # the kernel's integers are real addresses, never tagged ones
            mask = np.array(ADDRESS_MASK).astype(out.data.dtype)
            out = type(out)(out.data & mask, out.dtype)
        return out

    def set_grid_dim(nx: int, ny: int, nz: int) -> None:
        orig_dim(builder, nx, ny, nz)
        if not s.pending or s.sanitizer is None:
            return
        sites.note_rewritten(rewritten)
        s.sanitizer.launch_begin((int(nx), int(ny), int(nz)))
        s.checking = True

    def set_grid_idx(x: int, y: int, z: int) -> None:
        orig_idx(builder, x, y, z)
        sanitizer = s.sanitizer
        if s.checking and sanitizer is not None:
            sanitizer.program_begin((int(x), int(y), int(z)))

    orig_assert = getattr(cls, "create_assert", None)

    def create_assert(condition: Any, message: Any, *rest: Any) -> Any:
        sanitizer = s.sanitizer
        if not s.checking or sanitizer is None or orig_assert is None:
            return orig_assert(builder, condition, message, *rest) if orig_assert is not None else None
        failing = ~np.asarray(getattr(condition, "data", condition), dtype=bool)
        if failing.any():
            sanitizer.assert_failed(str(message), failing, sites.current_site())
        return None  # a finding, not an exception: the launch goes on and is checked to the end

    patches: list[Patch] = [
        AttributePatch(builder, "set_grid_dim", set_grid_dim),
        AttributePatch(builder, "set_grid_idx", set_grid_idx),
        AttributePatch(builder, "create_int_to_ptr", create_int_to_ptr),
        AttributePatch(builder, "create_ptr_to_int", create_ptr_to_int),
        # tl.device_assert only reaches the builder with debug on. The integer-overflow asserts that
        # debug would also add stay off (they fire on intentional wrap-around, e.g. Philox); without
        # debug they only cost time.
        AttributePatch(builder.options, "debug", True),
        AttributePatch(builder.options, "sanitize_overflow", False),
    ]
    if orig_assert is not None:
        patches.append(AttributePatch(builder, "create_assert", create_assert))
    for name, label in _FLOAT_OPS.items():
        if getattr(cls, name, None) is not None:  # wraps what is there then (the bf16 mend, say)
            patches.append(WrapPatch(builder, name, partial(_finite_checked, label=label)))
    patches.append(AttributePatch(executor, "_init_args_hst", _init_args_hst))
    patches.append(WrapPatch(interp, "_implicit_cvt", tagging))
    return patches


def _finite_checked(current: Callable[..., Any], label: str | None) -> Callable[..., Any]:
    """Wrap a float-producing builder method: its result is checked while a launch is checked."""

    def op(*args: Any) -> Any:
        out = current(*args)
        if _s.checking:
            _check_result(label, args, out)
        return out

    return op


def _check_result(label: str | None, args: tuple[Any, ...], out: Any) -> None:
    sanitizer = _s.sanitizer
    values = _float_values(out)
    if sanitizer is None or values is None or np.isfinite(values).all():
        return
    name = label or str(getattr(args[-1], "__name__", "op"))
    inputs = []
    for a in args:
        if isinstance(getattr(a, "data", None), np.ndarray):
            decoded = _float_values(a)
            inputs.append(decoded if decoded is not None else a.data)
    sanitizer.nonfinite(name, tuple(inputs), values, sites.current_site())


def _float_values(h: Any) -> np.ndarray | None:
    """A handle's values as floats: float arrays as they are, bf16 (kept as uint16 bits) decoded;
    None for anything else (integers, fp8 bit patterns)."""
    data = h.data
    if data.dtype.kind == "f":
        return data
    if bf16.is_bf16(h):
        return bf16.decode(data)
    return None
