"""Integer arithmetic as the interpreter computes it, checked: a signed int32 ``+``, ``-`` or ``*``
whose true result (computed in int64) does not fit in int32 (the interpreter, like the GPU, wraps
it silently), and an integer ``//`` or ``%`` by zero.

Part of the ``interpreter.sanitizer`` group (:func:`.checking.sanitizer_patches`): the builder's
``binary_op`` (every ``create_add``/``create_mul``/``create_srem``... goes through it) and
``create_idiv`` are wrapped once; the float check of ``binary_op``'s results (NaN/Inf) lives in the
same wrapper, so float arithmetic pays one wrapper, not two. A fault is told to whoever listens:
the sanitizer while a launch is checked, or the probe of :mod:`.probing` while one runs (a scaled
launch that touches no memory: ``deuteron check --at-size``).

The ops checked for wrapping are those Triton's own ``sanitize_overflow`` (debug mode) guards on a
GPU: signed add, sub and mul of 32-bit integers. Unsigned integers wrap by definition (hashes,
Philox) and are left alone; shifts too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from deuteron.triton.interpreter import sites

WRAPPING: dict[Any, str] = {np.add: "+", np.subtract: "-", np.multiply: "*"}
_INT32 = np.dtype(np.int32)


@dataclass(frozen=True, slots=True)
class IntFault:
    """One integer op that went wrong in some lanes. ``kind``: "wrap" (``true`` holds the int64
    results, ``result`` the int32 ones the kernel got) or "zero" (a divisor of 0 in the lanes ``bad``).
    ``lhs``/``rhs`` are the operands as the op saw them (broadcastable to ``bad``'s shape)."""

    kind: str
    op: str
    lhs: np.ndarray
    rhs: np.ndarray
    result: np.ndarray
    true: np.ndarray | None
    bad: np.ndarray
    site: int


class IntListener(Protocol):
    def integer_fault(self, fault: IntFault) -> None: ...


def listener(s: Any) -> IntListener | None:
    """Who hears integer faults now (``s``: the launch being checked, ``checking.CHECKING``, passed
    in by its module so this one imports nothing of it): a running probe, else the sanitizer of a
    checked launch."""
    if s.probe is not None:
        return s.probe  # type: ignore[no-any-return]
    sanitizer = s.sanitizer
    if s.launch_checked and sanitizer is not None and hasattr(sanitizer, "integer_fault"):
        return sanitizer  # type: ignore[return-value]
    return None


def arith_checked(
    current: Callable[..., Any], s: Any, check_result: Callable[[str | None, tuple[Any, ...], Any], None]
) -> Callable[..., Any]:
    """Wrap the builder's ``binary_op``: int32 wrap and integer ``%`` by zero told to the listener,
    float results checked for NaN/Inf as before (``check_result``: :func:`.checking.check_result`;
    ``s``: the launch being checked)."""

    def binary_op(lhs: Any, rhs: Any, op: Any) -> Any:
        if op is np.fmod and (s.launch_checked or s.probe is not None) and rhs.data.dtype.kind in "iu":
            with np.errstate(divide="ignore", invalid="ignore"):  # the finding says it, not NumPy
                out = current(lhs, rhs, op)
            _zero(lhs, rhs, out, "%", s)
            return out
        out = current(lhs, rhs, op)
        if not s.launch_checked:
            probe = s.probe
            if probe is None:
                return out
            probe.tick()  # a probe may run too long (a loop over a scaled size): it stops it
        data = out.data
        if data.dtype == _INT32:
            sign = WRAPPING.get(op)
            if sign is not None:
                a, b = lhs.data, rhs.data
                if a.dtype == _INT32 and b.dtype == _INT32:
                    true = op(a, b, dtype=np.int64)
                    bad = true != data
                    if bad.any():
                        _tell(IntFault("wrap", sign, a, b, data, true, bad, sites.current_site()), s)
                return out
        if s.launch_checked and data.dtype.kind != "b":
            check_result(None, (lhs, rhs, op), out)
        return out

    return binary_op


def idiv_checked(current: Callable[..., Any], s: Any) -> Callable[..., Any]:
    """Wrap the builder's ``create_idiv`` (integer ``//``, signed and unsigned): a zero divisor
    (``s``: the launch being checked)."""

    def create_idiv(lhs: Any, rhs: Any) -> Any:
        if not s.launch_checked and s.probe is None:
            return current(lhs, rhs)
        if not (rhs.data == 0).any():
            return current(lhs, rhs)
        with np.errstate(divide="ignore", invalid="ignore"):  # the finding says it, not NumPy
            out = current(lhs, rhs)
        _zero(lhs, rhs, out, "//", s)
        return out

    return create_idiv


def _zero(lhs: Any, rhs: Any, out: Any, op: str, s: Any) -> None:
    b = rhs.data
    zero = b == 0
    if zero.any():
        bad = np.broadcast_to(zero, np.broadcast_shapes(lhs.data.shape, b.shape, out.data.shape))
        _tell(IntFault("zero", op, lhs.data, b, out.data, None, bad, sites.current_site()), s)


def _tell(fault: IntFault, s: Any) -> None:
    target = listener(s)
    if target is not None:
        target.integer_fault(fault)
