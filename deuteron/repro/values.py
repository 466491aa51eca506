"""A launch's arguments as data a reproducer can rebuild: scalars as JSON values, tensors as views
of buffers, and a buffer's values as a NumPy array (or, past the byte limit, its statistics).

A tensor argument is rebuilt as a view (shape, strides, offset) of a *buffer*: the stretch of its
storage that every tensor of the launch with that storage and dtype views, from the first element
any of them reaches to the last. So a view of a bigger tensor (``x[:, :60]``, ``x.t()``, ``x[3:]``)
keeps its strides and its offset, two arguments that view one storage (an in-place kernel given
the same tensor twice, ``q``, ``k`` and ``v`` cut from one ``qkv``) still share memory, and only
the elements the views can reach are copied. The buffer also keeps its first element's place
modulo 16 bytes (``pad``): Triton specializes a pointer on its 16-byte alignment, so the rebuilt
launch compiles to the same code.

Torch is never imported here: a tensor is recognised through the ``torch`` the program imported.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deuteron.formats.launch_record import DTYPES
from deuteron.triton.runtime.launch_capture import TritonDtype

_BITS = {"bfloat16": "int16", "float8_e4m3fn": "uint8", "float8_e5m2": "uint8",
         "float8_e4m3fnuz": "uint8", "float8_e5m2fnuz": "uint8"}  # fmt: skip


def is_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def dtype_name(tensor: Any) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def extent(shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """How many storage elements a view spans, from its first to its last (0 when it is empty)."""
    if any(n == 0 for n in shape):
        return 0
    return 1 + sum((n - 1) * abs(s) for n, s in zip(shape, strides, strict=True))


@dataclass
class Buffer:
    """One storage stretch of one dtype (see the module's text); ``tensor`` is any view of it."""

    name: str
    tensor: Any
    start: int
    stop: int
    views: list[tuple[dict[str, Any], int]] = field(default_factory=list)  # (tensor value, storage offset)

    def region(self) -> Any:
        """The buffer's elements, as one contiguous 1-D tensor on its device (no copy)."""
        return self.tensor.detach().as_strided((self.stop - self.start,), (1,), self.start)

    def entry(self) -> dict[str, Any]:
        """The buffer as the record keeps it, before its values are decided."""
        dtype = dtype_name(self.tensor)
        size = int(self.tensor.element_size())
        pad = (self.start * size) % 16 // size if 16 % size == 0 else 0
        return {
            "name": self.name, "dtype": dtype, "bits": _BITS.get(dtype), "start": self.start,
            "size": self.stop - self.start, "pad": pad, "before": None, "after": None,
            "written": None, "stats": None, "device": str(self.tensor.device),
        }  # fmt: skip


class Buffers:
    """The buffers of one launch, filled as its arguments are described."""

    def __init__(self) -> None:
        self.buffers: list[Buffer] = []
        self._by_key: dict[tuple[str, int, str], Buffer] = {}

    def add(self, tensor: Any, path: str) -> dict[str, Any]:
        """The value that stands for ``tensor``: a view of a buffer (offsets fixed by :meth:`finish`)."""
        if dtype_name(tensor) not in DTYPES or tensor.layout is not sys.modules["torch"].strided:
            return {"kind": "unsupported", "type": f"tensor of {tensor.dtype} ({tensor.layout})"}
        shape, strides = tuple(tensor.shape), tuple(tensor.stride())
        if any(s < 0 for s in strides):
            return {"kind": "unsupported", "type": "tensor with a negative stride"}
        start = int(tensor.storage_offset())
        stop = start + extent(shape, strides)
        key = (str(tensor.device), int(tensor.untyped_storage().data_ptr()), dtype_name(tensor))
        buffer = self._by_key.get(key)
        if buffer is None:
            buffer = self._by_key[key] = Buffer(_identifier(path, self.buffers), tensor, start, stop)
            self.buffers.append(buffer)
        elif buffer.stop == buffer.start:  # it held only empty views so far
            buffer.start, buffer.stop = start, stop
        elif stop > start:
            buffer.start, buffer.stop = min(buffer.start, start), max(buffer.stop, stop)
        value = {"kind": "tensor", "buffer": self.buffers.index(buffer), "shape": list(shape),
                 "strides": list(strides), "offset": start}  # fmt: skip
        buffer.views.append((value, start))
        return value

    def finish(self) -> None:
        """Each view's offset from its buffer's first element."""
        for buffer in self.buffers:
            for value, start in buffer.views:
                value["offset"] = max(0, start - buffer.start)


def _identifier(path: str, buffers: list[Buffer]) -> str:
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in path).strip("_") or "buffer"
    if name[0].isdigit():
        name = "t_" + name
    taken = {b.name for b in buffers}
    unique, n = name, 2
    while unique in taken:
        unique, n = f"{name}_{n}", n + 1
    return unique


def describe(value: Any, buffers: Buffers, path: str) -> dict[str, Any]:
    """A launch argument as the record keeps it (see :mod:`deuteron.formats.launch_record`)."""
    if is_tensor(value):
        return buffers.add(value, path)
    if isinstance(value, (bool, np.bool_)):
        return {"kind": "bool", "value": bool(value)}
    if isinstance(value, (int, np.integer)):
        return {"kind": "int", "value": int(value)}
    if isinstance(value, (float, np.floating)):
        return {"kind": "float", "value": repr(float(value))}
    if value is None:
        return {"kind": "none"}
    if isinstance(value, str):
        return {"kind": "str", "value": value}
    if isinstance(value, (tuple, list)) and not hasattr(value, "_fields"):
        return {"kind": "tuple", "items": [describe(v, buffers, f"{path}_{i}") for i, v in enumerate(value)]}
    if isinstance(value, TritonDtype):
        return {"kind": "tl_dtype", "name": value.name}
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.dtype):
        return {"kind": "torch_dtype", "name": str(value).removeprefix("torch.")}
    return {"kind": "unsupported", "type": type(value).__name__}


def to_numpy(region: Any) -> np.ndarray:
    """A copy of a device region on the host, as NumPy holds it (bfloat16 and float8 as their bits)."""
    torch = sys.modules["torch"]
    host = region.detach().to("cpu", copy=True)
    bits = _BITS.get(dtype_name(host))
    if bits is not None:
        host = host.view(getattr(torch, bits))
    return np.ascontiguousarray(host.numpy())


def statistics(region: Any) -> dict[str, float | int]:
    """What stands in for values past the byte limit: range, mean and spread of the finite ones
    (a sum that overflows is kept as the largest finite float: JSON has no infinity)."""
    stats = _statistics(region)
    return {
        k: (v if isinstance(v, int) or abs(v) <= 1.7e308 else math.copysign(1.7e308, v))
        for k, v in stats.items()
    }


def _statistics(region: Any) -> dict[str, float | int]:
    torch = sys.modules["torch"]
    x = region.detach()
    if x.numel() == 0:
        return {"min": 0, "max": 0, "mean": 0.0, "std": 0.0, "nonfinite": 0}
    if x.dtype == torch.bool:
        return {"min": 0, "max": 1, "mean": float(x.float().mean()), "std": 0.0, "nonfinite": 0}
    if x.is_complex():
        x = x.real
    if not x.is_floating_point():
        wide = x.double()
        return {"min": int(x.min()), "max": int(x.max()), "mean": float(wide.mean()),
                "std": float(wide.std(unbiased=False)), "nonfinite": 0}  # fmt: skip
    wide = x.double() if x.dtype == torch.float64 else x.float()
    finite = wide[torch.isfinite(wide)]
    nonfinite = int(x.numel() - finite.numel())
    if finite.numel() == 0:
        return {"min": 0.0, "max": 0.0, "mean": 0.0, "std": 0.0, "nonfinite": nonfinite}
    return {"min": float(finite.min()), "max": float(finite.max()), "mean": float(finite.mean()),
            "std": float(finite.std(unbiased=False)), "nonfinite": nonfinite}  # fmt: skip
