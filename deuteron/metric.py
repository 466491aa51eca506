"""Metric values from ``launch_metadata``: numbers as they are, tensors read without a host sync.

A ``launch_metadata`` hook may return tensors (a token count that lives on the GPU). Proton keeps
device tensors in a device-side metric buffer; Deuteron takes a device-side snapshot (an
asynchronous copy queued on the launching stream, before the kernel) and reads it only when the
kernel's record is filed, after the GPU has run it. So profiling never makes the program wait for
the GPU. Inside CUDA-graph capture no copy can be read back per replay: such a metric is left out
(once, with a warning) rather than breaking the capture, as calling ``.item()`` there would.
"""

from __future__ import annotations

import warnings
from numbers import Number
from typing import Any

FLOPS_WIDTHS = (8, 16, 32, 64)  # Proton's flops<width> metrics
_warned_capture = False


class TensorMetric:
    """A device tensor's value, snapshotted at launch and read when the kernel is filed."""

    __slots__ = ("_snapshot", "_value")

    def __init__(self, tensor: Any) -> None:
        self._snapshot: Any = tensor.detach().clone()  # queued on the stream: no sync
        self._value: Any = None

    def value(self) -> Any:
        """The number (or list, for a tensor of several elements); reading syncs only this copy."""
        if self._snapshot is not None:
            snap, self._snapshot = self._snapshot, None
            self._value = snap.tolist() if snap.numel() > 1 else snap.item()
        return self._value


def is_metric_value(value: Any) -> bool:
    """What Proton accepts from launch_metadata as a metric: numbers (not bools) and tensors."""
    if value is None or isinstance(value, bool):
        return False
    return hasattr(value, "data_ptr") or isinstance(value, Number)


def _capturing(tensor: Any) -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover - a tensor without torch
        return False
    return bool(tensor.is_cuda and torch.cuda.is_current_stream_capturing())


def transform_tensor_metrics(metrics: dict[str, Any]) -> tuple[dict[str, Any], dict[str, TensorMetric]]:
    """Split metrics into plain values (host tensors read now) and device tensors to read later."""
    global _warned_capture
    scalars: dict[str, Any] = {}
    tensors: dict[str, TensorMetric] = {}
    for key, value in metrics.items():
        if not hasattr(value, "data_ptr"):
            scalars[key] = value
        elif getattr(getattr(value, "device", None), "type", "cpu") == "cpu":
            scalars[key] = value.tolist() if value.numel() > 1 else value.item()
        elif _capturing(value):
            if not _warned_capture:
                _warned_capture = True
                warnings.warn(
                    f"deuteron: launch_metadata metric {key!r} is a device tensor inside CUDA-graph "
                    "capture; such metrics are not recorded (the capture is left intact)",
                    stacklevel=3,
                )
        else:
            tensors[key] = TensorMetric(value)
    return scalars, tensors


def resolved(metrics: dict[str, Any]) -> dict[str, Any]:
    """``metrics`` with each TensorMetric read (call only once the kernel has run)."""
    if not any(isinstance(v, TensorMetric) for v in metrics.values()):
        return metrics
    return {k: (v.value() if isinstance(v, TensorMetric) else v) for k, v in metrics.items()}
