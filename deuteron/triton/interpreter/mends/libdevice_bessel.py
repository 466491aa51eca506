"""Bessel functions of the first and second kind of integer order, in NumPy, to float64 accuracy.

torch's float64 ``bessel_j0`` and friends are only good to ~1e-7 absolute, which is not enough even
for float32 results, and NumPy has none; so here, in ``long double``:

- |x| < 25: Miller's backward recurrence from an order where J is negligible, normalised with
  J0 + 2 (J2 + J4 + ...) = 1; the same pass sums the Neumann series that give Y0 and Y1
  (Y0 = 2/pi (ln(x/2) + gamma) J0 - 4/pi sum (-1)^k J2k / k, and Y1 = -Y0').
- |x| >= 25: Hankel's asymptotic expansion, whose smallest term there is below 1e-20.
- J_n and Y_n for n > 1: forward recurrence where it is stable (Y always, J while n < |x|), else
  Miller's recurrence started above n.
"""

from __future__ import annotations

import math

import numpy as np

LD = np.longdouble
PI = LD("3.141592653589793238462643383279502884")
EULER = LD("0.577215664901532860606512090082402431")
ASYMPTOTIC = 25.0
_HUGE = LD(2) ** 1000  # rescale the recurrence before long double overflows


def _miller(x: np.ndarray, order: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """J0, J1, J_order, and the Neumann sums for Y0 and Y1, for 0 < |x| < ~order + 40."""
    top = int(np.abs(x).max(initial=0.0))
    start = 2 * ((max(order, top) + 40 + int(math.sqrt(40 * max(order, top, 1)))) // 2)
    above = np.zeros(x.shape, dtype=LD)  # J_{k+1}
    here = np.full(x.shape, LD("1e-30"), dtype=LD)  # J_k, unnormalised
    norm = np.zeros(x.shape, dtype=LD)
    s0 = np.zeros(x.shape, dtype=LD)
    s1 = np.zeros(x.shape, dtype=LD)
    j1 = np.zeros(x.shape, dtype=LD)
    jn = np.zeros(x.shape, dtype=LD)
    for k in range(start, 0, -1):
        if k == order:
            jn = here.copy()
        if k == 1:
            j1 = here.copy()
        if k % 2 == 0:
            m = k // 2
            norm += 2 * here
            s0 += (-1) ** m * here / m
        else:
            m = (k + 1) // 2
            coef = LD((-1) ** m) / m
            if m > 1:
                coef -= LD((-1) ** (m - 1)) / (m - 1)
            s1 += coef * here
        below = (2 * k / x) * here - above
        above, here = here, below
        big = np.abs(here) > _HUGE
        if big.any():
            scale = np.where(big, 1 / _HUGE, LD(1))
            above, here, norm, s0, s1, j1, jn = (v * scale for v in (above, here, norm, s0, s1, j1, jn))
    j0 = here
    if order == 0:
        jn = j0
    norm += j0
    return j0 / norm, j1 / norm, jn / norm, s0 / norm, s1 / norm


def _hankel(x: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(J_n, Y_n) for large positive x from the asymptotic expansion."""
    mu = 4 * n * n
    p = np.ones(x.shape, dtype=LD)
    q = np.zeros(x.shape, dtype=LD)
    term = np.ones(x.shape, dtype=LD)
    for k in range(1, 60):
        term = term * (mu - (2 * k - 1) ** 2) / (k * 8 * x)
        if k % 2:
            q += (-1) ** (k // 2) * term
        else:
            p += (-1) ** (k // 2) * term
        if np.abs(term).max(initial=0) < LD("1e-24"):
            break
    chi = x - (LD(n) / 2 + LD("0.25")) * PI
    amplitude = np.sqrt(2 / (PI * x))
    return amplitude * (p * np.cos(chi) - q * np.sin(chi)), amplitude * (p * np.sin(chi) + q * np.cos(chi))


def _first_two(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """J0, J1, Y0, Y1 at positive x (long double)."""
    j0, j1, y0, y1 = (np.empty(x.shape, dtype=LD) for _ in range(4))
    far = x >= ASYMPTOTIC
    if far.any():
        j0[far], y0[far] = _hankel(x[far], 0)
        j1[far], y1[far] = _hankel(x[far], 1)
    near = ~far & (x > 0)
    if near.any():
        xs = x[near]
        a, b, _, s0, s1 = _miller(xs, 0)
        log = np.log(xs / 2) + EULER
        j0[near], j1[near] = a, b
        y0[near] = (2 / PI) * log * a - (4 / PI) * s0
        y1[near] = (2 / PI) * (log * b - a / xs) + (2 / PI) * s1
    zero = x == 0
    j0[zero], j1[zero], y0[zero], y1[zero] = 1, 0, -np.inf, -np.inf
    return j0, j1, y0, y1


def bessel(kind: str, n: int, x: np.ndarray) -> np.ndarray:
    """J_n(x) (``kind`` "j") or Y_n(x) ("y") as float64, for integer n and any float x."""
    sign = LD(1)
    if n < 0:  # J_{-n} = (-1)^n J_n, and the same for Y
        n = -n
        sign = LD(-1) if n % 2 else LD(1)
    xl = np.asarray(x, dtype=LD)
    ax = np.abs(xl)
    with np.errstate(all="ignore"):
        j0, j1, y0, y1 = _first_two(ax)
        if kind == "y":
            prev, cur = (y0, y1) if n else (y1, y0)
            for k in range(1, n):
                prev, cur = cur, (2 * k / ax) * cur - prev
            result = cur if n else y0
            result = np.where(xl < 0, np.nan, result)
        else:
            result = [j0, j1][n] if n < 2 else _jn(n, ax, j0, j1)
            if n % 2:
                result = np.where(xl < 0, -result, result)
    return (sign * result).astype(np.float64)


def _jn(n: int, ax: np.ndarray, j0: np.ndarray, j1: np.ndarray) -> np.ndarray:
    result = np.zeros(ax.shape, dtype=LD)
    forward = ax > n
    if forward.any():
        prev, cur = j0[forward], j1[forward]
        xs = ax[forward]
        for k in range(1, n):
            prev, cur = cur, (2 * k / xs) * cur - prev
        result[forward] = cur
    back = ~forward & (ax > 0)
    if back.any():
        result[back] = _miller(ax[back], n)[2]
    return result
