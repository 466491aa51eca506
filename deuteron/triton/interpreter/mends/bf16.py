"""bfloat16 arithmetic in Triton's interpreter, mended.

The interpreter stores a bf16 value as its 16 bits in a ``uint16`` array and then does its
arithmetic on those integers: ``x * y``, ``x + y``, comparisons, ``tl.sum``/``tl.max``, ``tl.dot``
and casts to integers all give garbage (and the sanitizer would report NaNs nobody made), and its
fp32 -> bf16 cast truncates where the GPU rounds to nearest even. bf16 is the common dtype of
model kernels, so while the ``interpreter`` hook group is applied, the builder's float operations
decode bf16 operands to fp32, run Triton's own implementation, and round bf16 results to nearest
even, as the GPU's ``cvt.rn.bf16.f32`` does. Results agree bit for bit with torch's bf16 ops
(which also compute in fp32 and round once).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from deuteron.process.patches import AttributePatch, Patch

_U16 = np.dtype(np.uint16)


def is_bf16(handle: Any) -> bool:
    """A handle holding bf16 values (the interpreter also tags a comparison's booleans bf16)."""
    dtype = getattr(handle, "dtype", None)
    data = getattr(handle, "data", None)
    return (
        getattr(getattr(dtype, "scalar", dtype), "name", None) == "bf16"
        and getattr(data, "dtype", None) == np.uint16
    )


def decode(bits: np.ndarray) -> np.ndarray:
    """bf16 bit patterns (uint16) as float32 values (exact)."""
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def encode(values: np.ndarray) -> np.ndarray:
    """float32 values as bf16 bit patterns, rounded to nearest even; NaN stays a (quiet) NaN."""
    bits = np.array(values, dtype=np.float32).view(np.uint32)  # a copy, of any shape (0-d too)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    nan = np.isnan(values)
    if nan.any():
        rounded = np.where(nan, (bits >> np.uint32(16)) | np.uint32(0x40), rounded)
    return rounded.astype(np.uint16)


def patches(interp: Any) -> list[Patch]:
    """The builder's float ops, casts, reductions and scans done on bf16 values rather than their
    uint16 bits (the interpreter keeps bf16 as bits and would add them as integers): operands
    decoded to float32, results rounded back to bf16 where the op's result is bf16."""
    import triton.language as tl

    builder = interp.interpreter_builder
    cls = type(builder)
    handle = interp.TensorHandle
    fp32, bf16 = tl.float32, tl.bfloat16

    def wide(h: Any) -> Any:
        return handle(decode(h.data), fp32) if is_bf16(h) else h

    def narrow(h: Any) -> Any:
        """A bf16 op's result: float32 values rounded back; booleans (comparisons) as they are,
        tagged bf16 as the interpreter itself tags them."""
        if h.data.dtype == np.float32:
            return handle(encode(h.data), bf16)
        return handle(h.data, bf16) if getattr(h.dtype, "scalar", h.dtype) == fp32 else h

    def mended(name: str, result_is_bf16: Callable[[tuple[Any, ...]], bool]) -> Patch | None:
        orig = getattr(cls, name, None)
        if orig is None:
            return None

        def op(*args: Any) -> Any:
            for a in args:  # bf16 is stored as uint16: only then look closer (the hot path)
                if getattr(getattr(a, "data", None), "dtype", None) is _U16 and is_bf16(a):
                    break
            else:
                return orig(builder, *args)
            out = orig(builder, *(wide(a) for a in args))
            return narrow(out) if result_is_bf16(args) else out

        return AttributePatch(builder, name, op)

    first = lambda args: is_bf16(args[0])  # noqa: E731 - the result has the first operand's type
    last_float = lambda args: is_bf16(args[2])  # noqa: E731 - fma's and dot's accumulator

    def ternary_op(lhs: Any, rhs: Any, other: Any, op: Any) -> Any:
        if op is np.where or (other.data.dtype is not _U16 and rhs.data.dtype is not _U16):
            return orig_ternary(builder, lhs, rhs, other, op)
        if not (is_bf16(rhs) or is_bf16(other)):
            return orig_ternary(builder, lhs, rhs, other, op)  # a select moves bits: nothing to decode
        out = orig_ternary(builder, wide(lhs), wide(rhs), wide(other), op)
        return narrow(out) if is_bf16(other) else out

    orig_ternary = cls.ternary_op
    orig_cast = cls.cast_impl

    def cast_impl(src: Any, dst_type: Any) -> Any:
        to_bf16 = getattr(dst_type, "scalar", dst_type) == bf16
        if is_bf16(src) and not to_bf16:
            return orig_cast(builder, wide(src), dst_type) if dst_type.scalar != fp32 else wide(src)
        if to_bf16 and not is_bf16(src):
            as_fp32 = src if src.dtype.scalar == fp32 else orig_cast(builder, src, fp32)
            return handle(encode(as_fp32.data), bf16)
        return orig_cast(builder, src, dst_type)

    orig_fp_to_fp = cls.create_fp_to_fp

    def create_fp_to_fp(src: Any, dst_type: Any, rounding_mode: Any) -> Any:
        if dst_type.scalar == bf16 and src.dtype.scalar == fp32:
            toward_zero = rounding_mode is not None and "RTZ" in str(rounding_mode)
            bits = src.data.view(np.uint32) >> np.uint32(16) if toward_zero else encode(src.data)
            return handle(np.asarray(bits).astype(np.uint16), bf16)
        return orig_fp_to_fp(builder, src, dst_type, rounding_mode)

    found: list[Patch | None] = [
        mended("binary_op", first),
        mended("unary_op", first),
        mended("create_fma", last_float),
        mended("create_rsqrt", first),
        mended("create_erf", first),
        mended("create_dot", last_float),
        AttributePatch(builder, "ternary_op", ternary_op),
        AttributePatch(builder, "cast_impl", cast_impl),
        AttributePatch(builder, "create_fp_to_fp", create_fp_to_fp),
        *_reduction_patches(interp),
    ]
    return [p for p in found if p is not None]


def _reduction_patches(interp: Any) -> list[Patch]:
    """tl.sum / tl.max / tl.min / tl.cumsum's fast paths run NumPy on the raw array."""
    import triton.language as tl

    reduce_ops, scan_ops = getattr(interp, "ReduceOps", None), getattr(interp, "ScanOps", None)
    found: list[Patch] = []
    if reduce_ops is not None and hasattr(reduce_ops, "sum") and hasattr(reduce_ops, "min_max"):
        orig_sum, orig_min_max = reduce_ops.sum, reduce_ops.min_max

        def reduce_sum(self: Any, input: Any) -> Any:
            if not is_bf16(input.handle):
                return orig_sum(self, input)
            values = decode(input.handle.data)
            total = np.sum(values, axis=self.axis, keepdims=self.keep_dims, dtype=np.float32)
            return self.to_tensor(encode(np.asarray(total)), input.dtype)

        def min_max(self: Any, input: Any, val_reduce_op: Any, idx_reduce_op: Any = None) -> Any:
            value = input[0] if isinstance(input, tuple) else input
            if not is_bf16(value.handle):
                return orig_min_max(self, input, val_reduce_op, idx_reduce_op)
            data = decode(value.handle.data)
            val = idx = None
            if val_reduce_op:
                picked = val_reduce_op(data, axis=self.axis, keepdims=self.keep_dims)
                val = self.to_tensor(encode(np.asarray(picked, dtype=np.float32)), value.dtype)
            if idx_reduce_op:
                idx = self.to_tensor(idx_reduce_op(data, axis=self.axis, keepdims=self.keep_dims), tl.int32)
            if val is not None and idx is not None:
                return val, idx
            return val if val is not None else idx

        found.append(AttributePatch(reduce_ops, "sum", reduce_sum))
        found.append(AttributePatch(reduce_ops, "min_max", min_max))
    if scan_ops is not None and hasattr(scan_ops, "cumsum"):
        orig_cumsum = scan_ops.cumsum

        def cumsum(self: Any, input: Any) -> Any:
            if not is_bf16(input.handle):
                return orig_cumsum(self, input)
            running = np.cumsum(decode(input.handle.data), axis=self.axis, dtype=np.float32)
            return [self.to_tensor(encode(running), dtype=input.dtype)]

        found.append(AttributePatch(scan_ops, "cumsum", cumsum))
    return found
