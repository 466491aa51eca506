"""libdevice's functions in NumPy, for kernels run in Triton's interpreter (which has none of them).

Each entry takes the arguments Triton's own dispatch chose (arrays already broadcast, of the dtypes
libdevice accepts for that function) and the result's NumPy dtype, and returns the result.

Accuracy: float32 functions are computed in float64 and rounded once, so they are within 1 ulp
of the correctly rounded result (CUDA's own libdevice allows 1-4 ulp). float64 functions use NumPy
in ``long double`` where it is wider than double (x86-64 Linux), else in double. The integer and bit
functions are exact (:mod:`.libdevice_bits`). The Bessel functions are our own
(:mod:`.libdevice_bessel`); erf, erfc, erfinv, erfcx, normcdf(inv), lgamma and i0/i1 come from
torch in float64, tgamma from Python's ``math``. Measured against mpmath
(tests/test_libdevice.py): float32 results within 1 ulp; float64 ones within 1 ulp but for erfcx
and tgamma (6), normcdf and i1 (5), erfcinv and i0 (4), normcdfinv (3), y0 and y1 (2).
``fast_*`` functions compute the accurate result: CUDA's are approximations whose documented error
is larger. The ``_rz``/``_rd``/``_ru`` variants round as named for float32 results, and for float64
ones where ``long double`` is wider than double, else to nearest.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from deuteron.triton.interpreter.mends.libdevice_bessel import bessel
from deuteron.triton.interpreter.mends.libdevice_bits import (
    Impl,
    bits_as,
    brev,
    byte_perm,
    clz,
    double_word,
    ffs,
    halving,
    hilo,
    mul24,
    mulhi,
    popc,
    sad,
)

F64 = np.float64
WIDE = np.longdouble if np.finfo(np.longdouble).nmant > np.finfo(np.float64).nmant else np.float64
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


def _quiet(fn: Callable[[], np.ndarray]) -> np.ndarray:
    with np.errstate(all="ignore"):
        return fn()


def _wide(a: np.ndarray) -> np.ndarray:
    """Where a result is computed: float64 for float32 inputs, the widest float for float64 ones."""
    return a.astype(WIDE if a.dtype == np.float64 else F64)


def _rounded(exact: np.ndarray, out: np.dtype, mode: str) -> np.ndarray:
    """``exact`` (wider than ``out``) rounded to ``out``: to nearest, toward zero, down or up."""
    nearest = exact.astype(out)
    if mode == "rn":
        return nearest
    back = nearest.astype(exact.dtype)
    inf = np.array(np.inf, dtype=out)
    if mode == "rd":
        step = back > exact
        target = -inf
    elif mode == "ru":
        step = back < exact
        target = inf
    else:  # rz
        step = np.abs(back) > np.abs(exact)
        target = np.zeros((), dtype=out)
    step &= np.isfinite(exact)
    return np.where(step, np.nextafter(nearest, target), nearest).astype(out)


def unary(fn: Callable[[np.ndarray], np.ndarray]) -> Impl:
    return lambda a, out: _quiet(lambda: np.asarray(fn(_wide(a[0]))).astype(out))


def binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Impl:
    return lambda a, out: _quiet(lambda: np.asarray(fn(_wide(a[0]), _wide(a[1]))).astype(out))


def _torch(name: str) -> Callable[[np.ndarray], np.ndarray]:
    def apply(x: np.ndarray) -> np.ndarray:
        import torch

        fn = getattr(torch.special, name, None) or getattr(torch, name)
        return fn(torch.from_numpy(np.ascontiguousarray(x, dtype=F64))).numpy()

    return apply


def _python(fn: Callable[..., float], arity: int = 1) -> Callable[..., np.ndarray]:
    """A scalar ``math`` function over arrays (as accurate as ``math``; NaN where it raises)."""

    def safe(*xs: float) -> float:
        try:
            return fn(*xs)
        except (ValueError, OverflowError):
            if fn is math.gamma and xs[0] > 0:
                return math.inf
            return math.nan

    vec = np.frompyfunc(safe, arity, 1)
    return lambda *xs: np.asarray(vec(*[x.astype(F64) for x in xs]), dtype=F64)


def _arith(op: Callable[[np.ndarray, np.ndarray], np.ndarray], mode: str) -> Impl:
    return lambda a, out: _quiet(lambda: _rounded(op(_wide(a[0]), _wide(a[1])), out, mode))


def _unary_rounded(op: Callable[[np.ndarray], np.ndarray], mode: str) -> Impl:
    return lambda a, out: _quiet(lambda: _rounded(op(_wide(a[0])), out, mode))


def _fma(mode: str) -> Impl:
    def run(a: list[np.ndarray], out: np.dtype) -> np.ndarray:
        x, y, z = (v.astype(WIDE) for v in a)
        return _quiet(lambda: _rounded(x * y + z, out, mode))

    return run


_TO_INTEGER = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}


def _to_int(mode: str) -> Impl:
    return _to_int_from(_TO_INTEGER[mode])


def _to_int_from(fn: Callable[[np.ndarray], np.ndarray]) -> Impl:
    """Float to integer as PTX's cvt does: rounded by ``fn``, clamped to the range, NaN to 0."""

    def run(a: list[np.ndarray], out: np.dtype) -> np.ndarray:
        r = fn(a[0].astype(WIDE))
        info = np.iinfo(out)
        r = np.where(np.isnan(r), 0, r)
        big, small = r >= WIDE(info.max), r <= WIDE(info.min)
        safe = np.clip(r, WIDE(info.min) + 1, WIDE(info.max) - 1).astype(out)
        return np.where(big, info.max, np.where(small, info.min, safe)).astype(out)

    return run


def _from_int(mode: str) -> Impl:
    return lambda a, out: _rounded(a[0].astype(WIDE), out, mode)


def _flag(fn: Callable[[np.ndarray], np.ndarray]) -> Impl:
    return lambda a, out: fn(a[0]).astype(out)


def _round_half_away(x: np.ndarray) -> np.ndarray:
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _saturate(x: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0))


PI = np.longdouble("3.141592653589793238462643383279502884")


def _sinpi(x: np.ndarray) -> np.ndarray:
    r = np.remainder(x, 2.0)  # exact
    y = np.sin(PI * r.astype(np.longdouble)).astype(x.dtype)
    y = np.where((r == 0) | (r == 1), 0.0, y)
    y = np.where(r == 0.5, 1.0, np.where(r == 1.5, -1.0, y))
    return np.where(x == 0, x, y)


def _cospi(x: np.ndarray) -> np.ndarray:
    r = np.remainder(np.abs(x), 2.0)
    y = np.cos(PI * r.astype(np.longdouble)).astype(x.dtype)
    y = np.where((r == 0.5) | (r == 1.5), 0.0, y)
    return np.where(r == 0, 1.0, np.where(r == 1, -1.0, y))


def _norm(*xs: np.ndarray) -> np.ndarray:
    result = np.abs(xs[0])
    for x in xs[1:]:
        result = np.hypot(result, x)
    return result


def _norms(count: int, reciprocal: bool) -> Impl:
    def run(a: list[np.ndarray], out: np.dtype) -> np.ndarray:
        n = _quiet(lambda: _norm(*(_wide(v) for v in a[:count])))
        return _quiet(lambda: (1.0 / n if reciprocal else n).astype(out))

    return run


def _bessel(kind: str, order: int) -> Impl:
    return lambda a, out: bessel(kind, order, a[0]).astype(out)


def _bessel_n(kind: str) -> Impl:
    def run(a: list[np.ndarray], out: np.dtype) -> np.ndarray:
        orders, x = a[0].astype(np.int64), a[1]
        result = np.empty(x.shape, dtype=F64)
        for n in np.unique(orders).tolist():
            at = orders == n
            result[at] = bessel(kind, int(n), x[at])
        return result.astype(out)

    return run


def _ilogb(a: list[np.ndarray], out: np.dtype) -> np.ndarray:
    x = a[0].astype(F64)
    _, e = np.frexp(x)
    r = (e - 1).astype(np.int64)
    r = np.where(x == 0, INT32_MIN, r)
    r = np.where(np.isnan(x), INT32_MIN, r)
    r = np.where(np.isinf(x), INT32_MAX, r)
    return r.astype(out)


def _logb(x: np.ndarray) -> np.ndarray:
    _, e = np.frexp(x)
    r = (e - 1).astype(x.dtype)
    r = np.where(x == 0, -np.inf, r)
    return np.where(np.isinf(x), np.inf, np.where(np.isnan(x), np.nan, r))


def _fdim(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(x) | np.isnan(y), np.nan, np.where(x > y, x - y, 0.0))


def _ldexp(a: list[np.ndarray], out: np.dtype) -> np.ndarray:
    exponent = np.clip(a[1].astype(np.int64), -100000, 100000).astype(np.int32)
    return _quiet(lambda: np.ldexp(_wide(a[0]), exponent).astype(out))


def _rcp64h(a: list[np.ndarray], out: np.dtype) -> np.ndarray:
    r = _quiet(lambda: 1.0 / a[0].astype(F64))
    return (r.view(np.uint64) & np.uint64(0xFFFFFFFF00000000)).view(F64).astype(out)


def _nextafter(a: list[np.ndarray], out: np.dtype) -> np.ndarray:
    return np.nextafter(a[0].astype(out), a[1].astype(out))


def _abs(a: list[np.ndarray], out: np.dtype) -> np.ndarray:
    return np.abs(a[0]).astype(out)


def _erfcinv(y: np.ndarray) -> np.ndarray:
    return -_torch("ndtri")(y / 2) / math.sqrt(2.0)


def _normcdf(x: np.ndarray) -> np.ndarray:
    """Phi(x) = erfc(-x / sqrt 2) / 2; below -1 as exp(-x^2 / 2) erfcx(-x / sqrt 2) / 2 with x^2 split
    exactly in two (a rounded x / sqrt 2 would cost ~x^2 ulps in the tail)."""
    x = x.astype(F64)
    t = -x / math.sqrt(2.0)
    upper = 0.5 * _torch("erfc")(t)
    split = 134217729.0 * x  # Dekker: x = hi + lo with hi * hi exact
    hi = split - (split - x)
    lo = x - hi
    square = x * x
    tail = ((hi * hi - square) + 2 * hi * lo) + lo * lo  # x * x = square + tail exactly
    lower = 0.5 * np.exp(-square / 2) * np.exp(-tail / 2) * _torch("erfcx")(t)
    return np.where(x < -1, lower, upper)


def _tgamma(x: np.ndarray) -> np.ndarray:
    return _python(math.gamma)(x)


def _recip(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: 1.0 / fn(x)


def _table() -> dict[str, Impl]:
    """Every libdevice function we compute, by name: one table, so what is supported can be read
    (and tested) in one place."""
    t: dict[str, Impl] = {
        # integers and bits
        "clz": clz,
        "popc": popc,
        "brev": brev,
        "ffs": ffs,
        "byte_perm": byte_perm,
        "mulhi": mulhi,
        "mul24": mul24,
        "sad": sad,
        "hadd": halving(0),
        "rhadd": halving(1),
        "abs": _abs,
        # rounding to integral values
        "floor": unary(np.floor),
        "ceil": unary(np.ceil),
        "trunc": unary(np.trunc),
        "rint": unary(np.rint),
        "nearbyint": unary(np.rint),
        "round": unary(_round_half_away),
        "llround": _to_int_from(_round_half_away),
        "llrint": _to_int_from(np.rint),
        # arithmetic
        "saturatef": unary(_saturate),
        "fast_dividef": binary(np.divide),
        "sqrt": unary(np.sqrt),
        "rsqrt": unary(lambda x: 1.0 / np.sqrt(x)),
        "rsqrt_rn": unary(lambda x: 1.0 / np.sqrt(x)),
        "fma": _fma("rn"),
        "rcp64h": _rcp64h,
        # classification and sign
        "isnan": _flag(np.isnan),
        "isinf": _flag(np.isinf),
        "signbit": _flag(np.signbit),
        "finitef": _flag(np.isfinite),
        "isfinited": _flag(np.isfinite),
        "copysign": binary(np.copysign),
        "nextafter": _nextafter,
        # elementary functions
        "sin": unary(np.sin),
        "cos": unary(np.cos),
        "tan": unary(np.tan),
        "sinpi": unary(_sinpi),
        "cospi": unary(_cospi),
        "exp": unary(np.exp),
        "exp2": unary(np.exp2),
        "exp10": unary(lambda x: np.power(10.0, x)),
        "expm1": unary(np.expm1),
        "log": unary(np.log),
        "log2": unary(np.log2),
        "log10": unary(np.log10),
        "log1p": unary(np.log1p),
        "sinh": unary(np.sinh),
        "cosh": unary(np.cosh),
        "tanh": unary(np.tanh),
        "asin": unary(np.arcsin),
        "acos": unary(np.arccos),
        "atan": unary(np.arctan),
        "asinh": unary(np.arcsinh),
        "acosh": unary(np.arccosh),
        "atanh": unary(np.arctanh),
        "atan2": binary(np.arctan2),
        "hypot": binary(np.hypot),
        "rhypot": binary(lambda x, y: 1.0 / np.hypot(x, y)),
        "norm3d": _norms(3, False),
        "rnorm3d": _norms(3, True),
        "norm4d": _norms(4, False),
        "rnorm4d": _norms(4, True),
        "cbrt": unary(np.cbrt),
        "rcbrt": unary(_recip(np.cbrt)),
        "pow": binary(np.power),
        "fmod": binary(np.fmod),
        "remainder": binary(_python(math.remainder, 2)),
        "fdim": binary(_fdim),
        "ldexp": _ldexp,
        "scalbn": _ldexp,
        "ilogb": _ilogb,
        "logb": unary(_logb),
        # special functions
        "erf": unary(_torch("erf")),
        "erfc": unary(_torch("erfc")),
        "erfinv": unary(_torch("erfinv")),
        "erfcinv": unary(_erfcinv),
        "erfcx": unary(_torch("erfcx")),
        "normcdf": unary(_normcdf),
        "normcdfinv": unary(_torch("ndtri")),
        "lgamma": unary(_torch("lgamma")),
        "tgamma": unary(_tgamma),
        "j0": _bessel("j", 0),
        "j1": _bessel("j", 1),
        "y0": _bessel("y", 0),
        "y1": _bessel("y", 1),
        "jn": _bessel_n("j"),
        "yn": _bessel_n("y"),
        "cyl_bessel_i0": unary(_torch("i0")),
        "cyl_bessel_i1": unary(_torch("i1")),
        # bit casts and words
        "int_as_float": bits_as(np.float32),
        "float_as_int": bits_as(np.int32),
        "uint_as_float": bits_as(np.float32),
        "float_as_uint": bits_as(np.uint32),
        "longlong_as_double": bits_as(np.float64),
        "double_as_longlong": bits_as(np.int64),
        "hiloint2double": hilo,
        "double2loint": double_word(False),
        "double2hiint": double_word(True),
        "int2double_rn": _from_int("rn"),
        "uint2double_rn": _from_int("rn"),
    }
    for fast in ("sin", "cos", "tan", "log2", "log", "exp", "exp10", "log10"):
        t[f"fast_{fast}f"] = t[fast]
    t["fast_powf"] = t["pow"]
    t["fast_tanhf"] = t["tanh"]
    for mode in ("rn", "rz", "rd", "ru"):
        t[f"add_{mode}"] = _arith(np.add, mode)
        t[f"sub_{mode}"] = _arith(np.subtract, mode)
        t[f"mul_{mode}"] = _arith(np.multiply, mode)
        t[f"div_{mode}"] = _arith(np.divide, mode)
        t[f"rcp_{mode}"] = _unary_rounded(lambda x: 1.0 / x, mode)
        t[f"sqrt_{mode}"] = _unary_rounded(np.sqrt, mode)
        t[f"fma_{mode}"] = _fma(mode)
        t[f"double2float_{mode}"] = _unary_rounded(lambda x: x, mode)
        for source in ("float", "double"):
            for target in ("int", "uint", "ll", "ull"):
                t[f"{source}2{target}_{mode}"] = _to_int(mode)
        for source in ("int", "uint", "ll", "ull"):
            t[f"{source}2float_{mode}"] = _from_int(mode)
        for source in ("ll", "ull"):
            t[f"{source}2double_{mode}"] = _from_int(mode)
    return t


FUNCTIONS: dict[str, Impl] = _table()
