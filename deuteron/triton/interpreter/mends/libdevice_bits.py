"""libdevice's integer and bit functions in NumPy (clz, popc, brev, ffs, byte_perm, mulhi, mul24,
sad, hadd/rhadd) and its bit casts and double words: exact, whatever the dtype, so apart from the
float functions of :mod:`.libdevice_math`, whose table lists them."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# One libdevice function: the arguments Triton's dispatch chose and the result's dtype -> the result.
Impl = Callable[[list[np.ndarray], np.dtype], np.ndarray]


def _bit_length(u: np.ndarray) -> np.ndarray:
    v = u.astype(np.uint64)
    n = np.zeros(v.shape, dtype=np.int32)
    for s in (32, 16, 8, 4, 2, 1):
        big = v >= np.uint64(1 << s)
        n[big] += s
        v = np.where(big, v >> np.uint64(s), v)
    return n + (v > 0)


def _unsigned(x: np.ndarray) -> np.ndarray:
    return x.view(np.uint32 if x.itemsize == 4 else np.uint64).astype(np.uint64)


def clz(a: list[np.ndarray], out: np.dtype) -> np.ndarray:
    return (a[0].itemsize * 8 - _bit_length(_unsigned(a[0]))).astype(out)


def popc(a: list[np.ndarray], out: np.dtype) -> np.ndarray:
    u = _unsigned(a[0])
    count = getattr(np, "bitwise_count", None)
    if count is not None:
        return np.asarray(count(u)).astype(out)
    n = np.zeros(u.shape, dtype=np.int64)
    for bit in range(a[0].itemsize * 8):
        n += ((u >> np.uint64(bit)) & np.uint64(1)).astype(np.int64)
    return n.astype(out)


def brev(a: list[np.ndarray], out: np.dtype) -> np.ndarray:
    bits = a[0].itemsize * 8
    u = _unsigned(a[0])
    r = np.zeros(u.shape, dtype=np.uint64)
    for bit in range(bits):
        r |= ((u >> np.uint64(bit)) & np.uint64(1)) << np.uint64(bits - 1 - bit)
    unsigned = np.uint32 if bits == 32 else np.uint64
    return r.astype(unsigned).view(a[0].dtype).astype(out)


def ffs(a: list[np.ndarray], out: np.dtype) -> np.ndarray:
    u = _unsigned(a[0])
    lowest = u & (~u + np.uint64(1))
    return _bit_length(lowest).astype(out)


def byte_perm(a: list[np.ndarray], out: np.dtype) -> np.ndarray:
    x, y, s = (_unsigned(v) for v in a)
    both = (y << np.uint64(32)) | x
    r = np.zeros(x.shape, dtype=np.uint64)
    for i in range(4):
        pick = (s >> np.uint64(4 * i)) & np.uint64(7)
        r |= ((both >> (pick * np.uint64(8))) & np.uint64(0xFF)) << np.uint64(8 * i)
    return r.astype(np.uint32).view(np.int32).astype(out)


def mulhi(a: list[np.ndarray], out: np.dtype) -> np.ndarray:
    x, y = a
    if x.itemsize == 4:
        wide = np.int64 if x.dtype.kind == "i" else np.uint64
        return ((x.astype(wide) * y.astype(wide)) >> 32).astype(out)
    high = np.frompyfunc(lambda p, q: (int(p) * int(q)) >> 64, 2, 1)
    return np.asarray(high(x, y), dtype=out)


def mul24(a: list[np.ndarray], out: np.dtype) -> np.ndarray:
    x, y = (v.astype(np.int64) & 0xFFFFFF for v in a)
    if out.kind == "i":  # the low 24 bits as a signed number
        x = np.where(x & 0x800000, x - (1 << 24), x)
        y = np.where(y & 0x800000, y - (1 << 24), y)
    return (
        ((x * y) & 0xFFFFFFFF).astype(np.uint32).view(np.int32 if out.kind == "i" else np.uint32).astype(out)
    )


def sad(a: list[np.ndarray], out: np.dtype) -> np.ndarray:
    x, y, z = (v.astype(np.int64) for v in a)
    return (
        ((np.abs(x - y) + z) & 0xFFFFFFFF)
        .astype(np.uint32)
        .view(np.int32 if out.kind == "i" else np.uint32)
        .astype(out)
    )


def halving(round_up: int) -> Impl:
    return lambda a, out: ((a[0].astype(np.int64) + a[1].astype(np.int64) + round_up) >> 1).astype(out)


def bits_as(dtype: type) -> Impl:
    return lambda a, out: np.ascontiguousarray(a[0]).view(dtype).astype(out)


def hilo(a: list[np.ndarray], out: np.dtype) -> np.ndarray:
    hi = a[0].astype(np.int64).astype(np.uint64) & np.uint64(0xFFFFFFFF)
    lo = a[1].astype(np.int64).astype(np.uint64) & np.uint64(0xFFFFFFFF)
    return ((hi << np.uint64(32)) | lo).view(np.float64).astype(out)


def double_word(high: bool) -> Impl:
    def run(a: list[np.ndarray], out: np.dtype) -> np.ndarray:
        bits = np.ascontiguousarray(a[0].astype(np.float64)).view(np.uint64)
        word = (bits >> np.uint64(32)) if high else (bits & np.uint64(0xFFFFFFFF))
        return word.astype(np.uint32).view(np.int32).astype(out)

    return run
