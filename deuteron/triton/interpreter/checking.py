"""The sanitizer's side of Triton's interpreter: what a :class:`.sanitizer_protocol.Sanitizer` hears of each
launch, program, access, atomic, non-finite value and failed assert, and how its answer is obeyed.

Two parts. The guarded memory operations (:func:`guarded`, :func:`guarded_store`,
:func:`guarded_rmw`, :func:`guarded_cas`) are called from the builder wrappers of :mod:`.adapter`'s
``interpreter`` group while a launch is checked: each reports one :class:`~deuteron.model.access.Access`
and gives Triton real (untagged) pointers and the lanes the sanitizer keeps. The ``interpreter.sanitizer``
group (:func:`sanitizer_patches`, applied only while a sanitizer listens, so profiling does not pay
for it) follows the launch's programs and host tensors, tags each tensor argument's pointer with
its provenance (``model.access.TAG_SHIFT``), and checks every float result for NaN and Inf.
"""

from __future__ import annotations

import bdb
import inspect
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from deuteron.model.access import ADDRESS_MASK, ATOMIC, STORE, TAG_SHIFT, Access, AtomicResult
from deuteron.process.patches import AttributePatch, Patch, WrapPatch
from deuteron.triton.interpreter import integers, printing, sites
from deuteron.triton.interpreter.mends import atomics, bf16, compile_time
from deuteron.triton.interpreter.profiling import element_bytes
from deuteron.triton.interpreter.sanitizer_protocol import Abort, PreparedLaunch, Sanitizer

# Wrapped only while a sanitizer listens, so profiling does not pay for them.
WRAPPED = ("set_grid_dim", "set_grid_idx")
# The float producers whose results are checked for NaN/Inf, and the op name a finding shows
# (None: the numpy function the op applies, its last argument). The first four every supported
# Triton has; the others are wrapped where present.
FLOAT_OPS: dict[str, str | None] = {
    "binary_op": None,
    "unary_op": None,
    "ternary_op": None,
    "create_fma": "fma",
    "create_rsqrt": "rsqrt",
    "cast_impl": "cast",  # a cast to a narrower float can overflow to inf
    "create_fp_to_fp": "cast",
}
FLOAT_OPS_REQUIRED = ("binary_op", "unary_op", "ternary_op", "create_fma")


class Checking:
    """Who checks, and where the launch in progress stands (one instance, :data:`CHECKING`): read by
    every wrapped builder method, so kept to slots."""

    __slots__ = ("sanitizer", "launch_checked", "pending", "executor", "skipping", "after_load", "probe")

    def __init__(self) -> None:
        self.sanitizer: Sanitizer | None = None
        self.launch_checked = False  # the running launch is being checked
        self.pending = False  # host tensors described to the sanitizer; pointers not made yet
        self.executor: Any = None  # the launch's GridExecutor, whose programs may be skipped
        self.skipping = False  # the sanitizer skips the program the grid loop is at
        # Called once with the next load's result (its values as the kernel gets them): a
        # debugger stopping at a load shows what it loaded.
        self.after_load: Callable[[np.ndarray], None] | None = None
        # A scaled launch run for its integer arithmetic only (:mod:`.probing`): memory untouched,
        # integer faults told to it. None outside one.
        self.probe: Any = None


CHECKING = Checking()

_ADDRESS = np.uint64(ADDRESS_MASK)


def _int1() -> Any:
    import triton.language as tl

    return tl.int1


def untagged(handle: Any) -> Any:
    """A pointer handle with its provenance tags stripped: the real addresses, for Triton. (A copy:
    the kernel may use the same pointers again. Built without re-validating what Triton made.)"""
    out = object.__new__(type(handle))
    out.__dict__.update(handle.__dict__)
    out.data = handle.data & _ADDRESS
    if "attr" in out.__dict__:
        out.attr = {}  # as a handle made afresh would have
    return out


def guarded(
    kind: int, ptrs: Any, mask: Any, values: np.ndarray | None, site: int | None = None
) -> tuple[Any, Any]:
    """Tell the sanitizer about an access (made at ``site``; None: find it now); the real pointers,
    and the lanes it keeps as the mask."""
    sanitizer = CHECKING.sanitizer
    if sanitizer is None:
        return ptrs, mask
    if site is None:
        site = sites.current_site()
    mask_data = None if mask is None else mask.data
    keep = sanitizer.access(Access(kind, ptrs.data, element_bytes(ptrs), site, mask_data, values))
    real = untagged(ptrs)
    if keep is None:
        return real, mask
    return real, type(ptrs)(keep, mask.dtype if mask is not None else _int1())


def guarded_store(ptrs: Any, value: Any, mask: Any) -> tuple[Any, Any, Any]:
    """A store, guarded: its pointers, value and mask as Triton should see them."""
    stored = float_values(value)  # bf16 decoded, so a NaN stored as bits is still one
    ptrs, mask = guarded(STORE, ptrs, mask, stored if stored is not None else value.data)
    if value.dtype.is_ptr():  # a pointer stored to memory is a real address, not a tagged one
        value = untagged(value)
    return ptrs, value, mask


def guarded_rmw(
    orig_rmw: Callable[..., Any],
    builder: Any,
    op: Any,
    ptr: Any,
    val: Any,
    mask: Any,
    rest: tuple[Any, ...],
    kw: dict[str, Any],
) -> Any:
    """An atomic read-modify-write, guarded; the sanitizer hears what it found in memory."""
    sanitizer = CHECKING.sanitizer
    if sanitizer is None:
        return orig_rmw(builder, op, ptr, val, mask, *rest, **kw)
    tagged = ptr.data
    site = sites.current_site()
    _tell_order(sanitizer, rest, kw)
    ptr, mask = guarded(ATOMIC, ptr, mask, None, site)
    out = orig_rmw(builder, op, ptr, val, mask, *rest, **kw)
    mask_data = None if mask is None else mask.data
    sanitizer.atomic_result(
        AtomicResult(atomics.op_name(op), tagged, None, val.data, out.data, site, mask_data)
    )
    return out


def guarded_cas(
    orig_cas: Callable[..., Any],
    builder: Any,
    ptr: Any,
    cmp: Any,
    val: Any,
    rest: tuple[Any, ...],
    kw: dict[str, Any],
) -> Any:
    """An atomic compare-and-swap, guarded. CAS has no mask: it runs on the kept lanes only; the
    others answer "swapped" (cmp), so a spin lock on a bad address moves on instead of hanging."""
    sanitizer = CHECKING.sanitizer
    if sanitizer is None:
        return orig_cas(builder, ptr, cmp, val, *rest, **kw)
    tagged = ptr.data
    site = sites.current_site()
    _tell_order(sanitizer, rest, kw)
    keep = sanitizer.access(Access(ATOMIC, tagged, element_bytes(ptr), site))
    ptr = untagged(ptr)
    if keep is not None:
        out = atomics.partial_cas(orig_cas, builder, ptr, cmp, val, keep, rest, kw)
    else:
        out = orig_cas(builder, ptr, cmp, val, *rest, **kw)
    sanitizer.atomic_result(AtomicResult("cas", tagged, cmp.data, val.data, out.data, site, keep))
    return out


def _tell_order(sanitizer: Sanitizer, rest: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """The memory order of the atomic about to run (the builder's ``sem`` and ``scope``, after its
    pointer operands): CTA scope does not order programs of different CTAs, so the race check needs it."""
    sem = kw.get("sem", rest[0] if rest else None)
    scope = kw.get("scope", rest[1] if len(rest) > 1 else None)
    sanitizer.atomic_order(
        atomics.op_name(sem) if sem is not None else "acq_rel",
        atomics.op_name(scope) if scope is not None else "gpu",
    )


def checked_run(orig_run: Any, fn: Any, args: tuple[Any, ...], grid: Any, kwargs: dict[str, Any]) -> Any:
    """Run one launch: errors as its caller should see them, and a checked launch's end told to
    the sanitizer (with the error, if any)."""
    s = CHECKING
    error: BaseException | None = None
    try:
        return orig_run(fn, *args, grid=grid, warmup=False, **kwargs)
    except Exception as exc:
        # The interpreter wraps whatever a program raised in InterpreterError(repr(e)); a
        # sanitizer's Abort must reach the caller as itself.
        cause = exc.__cause__
        # pdb's quit inside a kernel (breakpoint(), deuteron check --pdb) ends the run as itself
        # too: BdbQuit, or pytest's Exit where pytest's pdb (or ours under pytest) quits.
        passes = cause is not None and (isinstance(cause, (Abort, bdb.BdbQuit)) or _pytest_exit(cause))
        error = cause if passes and cause is not None else exc
        if compile_time.from_static_assert(cause):
            error = compile_time.StaticAssertFailed(f"tl.static_assert failed in {fn.fn.__name__}: {cause}")
        if error is not exc:
            raise error from None
        raise
    finally:
        was_checked, sanitizer = s.launch_checked, s.sanitizer
        s.launch_checked = False
        s.pending = False
        s.executor, s.skipping, s.after_load = None, False, None
        if was_checked and sanitizer is not None:
            after = getattr(sanitizer, "after_launch", None)
            try:
                if after is not None and error is None:  # the same kernel at other sizes (--at-size)
                    after(fn, args, grid, kwargs)
            finally:
                sanitizer.launch_end(error)


def _pytest_exit(error: BaseException | None) -> bool:
    kind = type(error)
    return error is not None and kind.__name__ == "Exit" and kind.__module__ == "_pytest.outcomes"


def tensor_args(fn: Any, args_hst: tuple[Any, ...], kwargs_hst: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """Every tensor the programs can address (inside tuples and tensor descriptors too), named after
    its parameter (x[1], desc.base), with the object the interpreter converts to a pointer (a
    wrapper of it, for ``tl.reinterpret``)."""
    try:
        bound = inspect.getcallargs(fn, *args_hst, **kwargs_hst)
    except TypeError:
        bound = {f"arg{i}": a for i, a in enumerate(args_hst)} | dict(kwargs_hst)
    found: list[tuple[str, Any, Any]] = []

    def visit(name: str, value: Any) -> None:
        outer = value
        if type(value).__name__ == "TensorWrapper" and hasattr(value, "base"):  # tl.reinterpret's wrapper
            value = value.base
        if hasattr(value, "data_ptr") and hasattr(value, "untyped_storage"):
            found.append((name, value, outer))
        elif isinstance(value, tuple):
            for i, item in enumerate(value):
                visit(f"{name}[{i}]", item)
        elif hasattr(value, "base") and hasattr(value, "block_shape"):  # a TensorDescriptor
            visit(f"{name}.base", value.base)

    for name, value in bound.items():
        visit(name, value)
    return found


def scalar_args(fn: Any, args_hst: Any, kwargs_hst: dict[str, Any]) -> dict[str, Any]:
    """The launch's scalar arguments (ints, floats, bools, constexprs included) by parameter name."""
    try:
        bound = inspect.getcallargs(fn, *args_hst, **kwargs_hst)
    except TypeError:
        return {}
    return {name: value for name, value in bound.items() if isinstance(value, (int, float))}


def device_copies(
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


def sanitizer_patches(interp: Any) -> list[Patch]:
    """The ``interpreter.sanitizer`` group: the launch's host tensors and programs reported, tensor
    arguments' pointers tagged with their provenance (and integers made pointers tagged by the
    sanitizer, pointers made integers untagged), ``tl.device_assert`` made a finding instead of an
    exception, and every float producer's result checked for NaN and Inf."""
    builder = interp.interpreter_builder
    cls = type(builder)
    executor = interp.GridExecutor
    orig_init_args = executor._init_args_hst
    orig_dim, orig_idx = cls.set_grid_dim, cls.set_grid_idx
    orig_int_to_ptr, orig_ptr_to_int = cls.create_int_to_ptr, cls.create_ptr_to_int
    rewritten = interp.InterpretedFunction.rewritten_fn
    s = CHECKING

    def _init_args_hst(self: Any, args_dev: Any, kwargs: Any) -> Any:
        result = orig_init_args(self, args_dev, kwargs)
        sanitizer = s.sanitizer
        if sanitizer is not None:
            s.pending = True
            s.executor = self
            copies = device_copies(interp, args_dev, kwargs, result[0], result[1])
            tensors = tensor_args(self.fn, result[0], result[1])
            scalars = scalar_args(self.fn, result[0], result[1])
            sanitizer.launch_prepare(PreparedLaunch(self.fn, tensors, sites.table(), copies, scalars))
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
        if s.launch_checked and sanitizer is not None:
            out = type(out)(sanitizer.tag_addresses(out.data), out.dtype)
        return out

    def create_ptr_to_int(value: Any, dst_type: Any) -> Any:
        out = orig_ptr_to_int(builder, value, dst_type)
        if s.launch_checked:  # the kernel's integers are real addresses, never tagged ones
            mask = np.array(ADDRESS_MASK).astype(out.data.dtype)
            out = type(out)(out.data & mask, out.dtype)
        return out

    def set_grid_dim(nx: int, ny: int, nz: int) -> None:
        orig_dim(builder, nx, ny, nz)
        if not s.pending or s.sanitizer is None:
            return
        sites.note_rewritten(rewritten)
        s.sanitizer.launch_begin((int(nx), int(ny), int(nz)))
        s.launch_checked = True

    def set_grid_idx(x: int, y: int, z: int) -> None:
        orig_idx(builder, x, y, z)
        sanitizer = s.sanitizer
        if s.launch_checked and sanitizer is not None:
            s.skipping = sanitizer.program_begin((int(x), int(y), int(z))) is False
            if s.skipping:
                skip_programs(s.executor)

    orig_assert = getattr(cls, "create_assert", None)

    def create_assert(condition: Any, message: Any, *rest: Any) -> Any:
        sanitizer = s.sanitizer
        if s.probe is not None:  # a probe's loads read zeros: its asserts mean nothing
            return None
        if not s.launch_checked or sanitizer is None or orig_assert is None:
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
    for name, label in FLOAT_OPS.items():
        if name == "binary_op":  # float and integer results, one wrapper
            patches.append(
                WrapPatch(builder, name, lambda cur: integers.arith_checked(cur, CHECKING, check_result))
            )
        elif getattr(cls, name, None) is not None:  # wraps what is there then (the bf16 mend, say)
            patches.append(WrapPatch(builder, name, partial(finite_checked, label=label)))
    if getattr(cls, "create_idiv", None) is not None:
        patches.append(WrapPatch(builder, "create_idiv", lambda cur: integers.idiv_checked(cur, CHECKING)))
    patches += printing.patches(interp, lambda: s.launch_checked)
    patches.append(AttributePatch(executor, "_init_args_hst", _init_args_hst))
    patches.append(WrapPatch(interp, "_implicit_cvt", tagging))
    return patches


def skip_programs(executor: Any) -> None:
    """Make the launch's grid loop skip the programs the sanitizer declines: its ``self.fn(**args)``
    reads the executor's ``fn`` for every program, so a wrapper set on this launch's executor (made
    afresh for each launch) runs the kernel only while ``CHECKING.skipping`` is off. Set when the
    first program is skipped, so launches that run every program pay nothing."""
    if executor is None or "fn" not in vars(executor) or getattr(executor.fn, "deuteron_skips", False):
        return
    kernel = executor.fn

    def program(*args: Any, **kwargs: Any) -> Any:
        if CHECKING.skipping:
            return None
        return kernel(*args, **kwargs)

    program.deuteron_skips = True  # type: ignore[attr-defined]
    executor.fn = program


def after_next_load(callback: Callable[[np.ndarray], None]) -> None:
    """Have ``callback`` hear the next load's values (as the kernel gets them) once it is made."""
    CHECKING.after_load = callback


def finite_checked(current: Callable[..., Any], label: str | None) -> Callable[..., Any]:
    """Wrap a float-producing builder method: its result is checked while a launch is checked."""

    def op(*args: Any) -> Any:
        out = current(*args)
        if CHECKING.launch_checked:
            check_result(label, args, out)
        return out

    return op


def check_result(label: str | None, args: tuple[Any, ...], out: Any) -> None:
    """Tell the sanitizer about an op's non-finite result, with its inputs as floats."""
    sanitizer = CHECKING.sanitizer
    values = float_values(out)
    if sanitizer is None or values is None or np.isfinite(values).all():
        return
    name = label or str(getattr(args[-1], "__name__", "op"))
    inputs = []
    for a in args:
        if isinstance(getattr(a, "data", None), np.ndarray):
            decoded = float_values(a)
            inputs.append(decoded if decoded is not None else a.data)
    sanitizer.nonfinite(name, tuple(inputs), values, sites.current_site())


def float_values(h: Any) -> np.ndarray | None:
    """A handle's values as floats: float arrays as they are, bf16 (kept as uint16 bits) decoded;
    None for anything else (integers, fp8 bit patterns)."""
    data = h.data
    if data.dtype.kind == "f":
        return data
    if bf16.is_bf16(h):
        return bf16.decode(data)
    return None
