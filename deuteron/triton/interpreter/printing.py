"""What a kernel prints while it is checked: ``tl.device_print`` and Python's ``print`` inside a kernel
show each block as an array shaped like the tensor, on lines that start with the program id.

Stock Triton's interpreter (3.6 to 3.9) prints ``tl.device_print("x", x)`` as ``(3, 0, 0)  x:  [[1. 2.]``
with the array's further rows on lines of their own that say nothing of the program, and a Python
``print`` inside a kernel is Python's own: no program id at all, a scalar shown as ``[3]``, a
pointer block as its raw (here: provenance-tagged) addresses. On a GPU, ``print`` in a kernel *is*
``tl.device_print``. So while a launch is checked both print ``pid (3, 0, 0) x: [[1. 2.] [3. 4.]]``:
one line per value when it fits :data:`ONE_LINE`, else the array's further lines indented under its
first, never flattened; scalars as numbers, bf16 as values, pointers as real addresses. (Triton
3.6's ``hex=True`` fails on floats; here floats print as ``float.hex``.)

Part of the ``interpreter.sanitizer`` group (:func:`patches`): applied only while a sanitizer
listens, and a ``print`` outside a kernel's code (the user's script, pdb) is Python's own.
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from deuteron.model.access import ADDRESS_MASK
from deuteron.process.patches import AttributePatch, Patch
from deuteron.triton.interpreter import sites
from deuteron.triton.interpreter.mends import bf16

ONE_LINE = 160  # longest array kept on one line


def is_tensor(value: Any) -> bool:
    """An interpreter tensor, or a constexpr: what :func:`as_array` turns into NumPy or a number."""
    return isinstance(getattr(getattr(value, "handle", None), "data", None), np.ndarray) or (
        type(value).__name__ == "constexpr"
    )


def as_array(value: Any) -> Any:
    """An interpreter tensor (or its handle) as NumPy, shaped like the block: bf16 decoded, pointers
    untagged (real addresses), a scalar as a Python number; anything else as it is."""
    handle = getattr(value, "handle", value)
    data = getattr(handle, "data", None)
    if not isinstance(data, np.ndarray):
        return value.value if type(value).__name__ == "constexpr" else value
    if bf16.is_bf16(handle):
        data = bf16.decode(data)
    elif data.dtype == np.uint64 and getattr(getattr(handle, "dtype", None), "is_ptr", lambda: False)():
        data = data & np.uint64(ADDRESS_MASK)
    shape = getattr(value, "shape", None) if handle is not value else None
    scalar = (shape is not None and len(shape) == 0) or (shape is None and data.shape == (1,))
    if scalar and data.size == 1:
        return data.reshape(-1)[0].item()
    return data


def show(value: Any, hex_: bool = False) -> str:
    """One value as a kernel's print shows it (see the module's text)."""
    value = as_array(value)
    if isinstance(value, np.ndarray):
        fmt: Any = {"all": _hex} if hex_ else None
        text = np.array2string(value, max_line_width=10**6, separator=" ", formatter=fmt)
        one = " ".join(part.strip() for part in text.split("\n") if part.strip())
        if len(one) <= ONE_LINE:
            return one
        return np.array2string(value, separator=" ", formatter=fmt)
    if hex_ and isinstance(value, (int, float)):
        return _hex(value)
    return str(value)


def _hex(x: Any) -> str:
    if isinstance(x, (float, np.floating)):
        return float(x).hex()
    width = getattr(getattr(x, "dtype", None), "itemsize", 8) * 2
    return f"0x{int(x) & ((1 << (width * 4)) - 1):0{width}x}"


def line(pid: tuple[int, int, int], parts: list[str], sep: str = " ") -> str:
    """``pid (x, y, z) part part ...``: each part's further lines indented to where it starts."""
    out = f"pid {pid} "
    for i, part in enumerate(parts):
        if i:
            out += sep
        column = len(out.rsplit("\n", 1)[-1])
        out += part.replace("\n", "\n" + " " * column)
    return out


def _pid(builder: Any) -> tuple[int, int, int]:
    idx = getattr(builder, "grid_idx", None) or (0, 0, 0)
    return (int(idx[0]), int(idx[1]), int(idx[2]))


def patches(interp: Any, checking: Callable[[], bool]) -> list[Patch]:
    """``create_print`` (``tl.device_print``) and the builtin ``print`` (in a kernel's own code only)
    print as the module's text says while ``checking()``."""
    builder = interp.interpreter_builder
    orig_print = builtins.print
    orig_create = getattr(type(builder), "create_print", None)

    def create_print(prefix: Any, hex: Any, values: Any, *rest: Any) -> None:  # noqa: A002 - Triton's name
        if not checking():
            if orig_create is not None:
                orig_create(builder, prefix, hex, values, *rest)
            return
        label = str(prefix).strip()
        if label and not label.endswith(":"):
            label += ":"
        pid = _pid(builder)
        many = len(values) > 1
        for i, value in enumerate(values):
            name = f"{label[:-1]} (operand {i})" + ":" if many and label else label
            shown = show(value, bool(hex))
            orig_print(line(pid, [name, shown] if name else [shown]))

    def kernel_print(
        *args: Any, sep: str | None = " ", end: str | None = "\n", file: Any = None, flush: bool = False
    ) -> None:
        frame = sys._getframe(1)
        if not checking() or not sites.is_kernel_code(frame.f_code):
            orig_print(*args, sep=sep, end=end, file=file, flush=flush)
            return
        parts = [show(a) for a in args]
        orig_print(line(_pid(builder), parts, " " if sep is None else sep), end=end, file=file, flush=flush)

    found: list[Patch] = [AttributePatch(builtins, "print", kernel_print)]
    if orig_create is not None:
        found.append(AttributePatch(builder, "create_print", create_print))
    return found
