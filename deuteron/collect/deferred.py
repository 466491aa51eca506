"""Metric values read after the GPU has computed them: never a host sync, never in graph capture.

A ``launch_metadata`` hook or a scope may give tensors as metrics (a token count that lives on the
GPU). Proton keeps device tensors in a device-side metric buffer; Deuteron does the same in two
ways, and reads the values only when the profile is next read or written, on the program's own
thread (never on the background drain thread, which could upset a capture in progress):

- outside CUDA-graph capture, a :class:`TensorMetric` copies the value into slots of the same
  device buffer (a copy queued on the launching stream; the slots are reused once read), or, with
  no buffer on that device, to pinned host memory;
- inside capture, a :class:`ReplayedMetric` adds the value (a tensor, or a plain number) to a slot
  of a buffer allocated before capture, with an ``add_`` captured into the graph: every replay adds
  again, so reading gives the total over the replays since the last read, as Proton counts them.
  Without a buffer (no CUPTI session on the device) such a metric is left out, with one warning,
  rather than breaking the capture.
"""

from __future__ import annotations

import sys
import threading
import warnings
from numbers import Number
from typing import Any

REPLAY_SLOTS = 1 << 16  # float64 slots for metrics recorded inside graph capture (512 KiB)
_warned_capture = False
# Proton's roofline metrics have one value type however a program gives them (Triton 3.9's
# ``metric.ROOFLINE_DTYPES``): flops of every width are doubles, bytes integers. Without it,
# ``{"flops": 2 * M * N * K}`` in one scope and a float in the next would be refused as a
# mismatch, and viewers would get ints and floats for one column.
ROOFLINE_TYPES: dict[str, type] = {
    "flops": float,
    **{f"flops{width}": float for width in (8, 16, 32, 64)},
    "bytes": int,
}


class DeferredValue:
    """A metric value known only once the GPU has run: ``value()`` reads it (on the caller's thread)."""

    __slots__ = ()

    def value(self) -> Any:
        raise NotImplementedError


class TensorMetric(DeferredValue):
    """A device tensor's value as it was at launch, read when the profile is read, after an event
    says the copy is done; ``key``: the metric's name, for its roofline type.

    The copy stays on the device when it can: into slots of the metric buffer (one small copy
    kernel, queued on the stream, which the profile files as ``<metric>`` under the launch-metadata
    frames, as Proton's does), the slots going back to the buffer once read. Without a buffer on
    the tensor's device (or with it full) the value is copied to pinned host memory instead."""

    __slots__ = ("_snapshot", "_done", "_value", "_key", "_slot", "_integer")

    def __init__(self, tensor: Any, key: str = "") -> None:
        import torch

        flat = tensor.detach().reshape(-1)
        self._integer = not (flat.is_floating_point() or flat.is_complex())
        self._slot = REPLAY_BUFFER.copy_in(flat)
        self._snapshot: Any = None if self._slot is not None else flat.to("cpu", non_blocking=True)
        self._done: Any = torch.cuda.Event()
        self._done.record()
        self._value: Any = None
        self._key = key

    def value(self) -> Any:
        """The number (or list, for a tensor of several elements); waits only for this copy."""
        if self._done is not None:
            self._done.synchronize()
            self._done = None
            if self._slot is not None:
                start, n = self._slot
                read = REPLAY_BUFFER.tensor[start : start + n].tolist()
                REPLAY_BUFFER.give_back(start, n)
                self._slot = None
                items = [int(round(v)) for v in read] if self._integer else read
            else:
                items, self._snapshot = self._snapshot.tolist(), None
            self._value = roofline_value(self._key, items if len(items) > 1 else items[0])
        return self._value


class Times(DeferredValue):
    """Another deferred value counted ``count`` times (vectors element by element)."""

    __slots__ = ("inner", "count")

    def __init__(self, inner: DeferredValue, count: int) -> None:
        self.inner, self.count = inner, count

    def value(self) -> Any:
        return times(self.inner.value(), self.count)


def times(value: Any, count: int) -> Any:
    """A number or a vector (element by element) counted ``count`` times."""
    return [x * count for x in value] if isinstance(value, list) else value * count


class _ReplayBuffer:
    """The device slots ReplayedMetrics add into (allocated outside capture, zeroed once)."""

    def __init__(self) -> None:
        self.tensor: Any = None
        self.used = 0
        self.free: dict[int, list[int]] = {}  # slots lent to one-shot copies and given back, by size
        self.lock = threading.Lock()

    def reserve(self, device: Any) -> None:
        if self.tensor is None:
            import torch

            self.tensor = torch.zeros(REPLAY_SLOTS, dtype=torch.float64, device=device)
            torch.cuda.synchronize(device)  # done before a profiler starts watching

    def take(self, n: int) -> int | None:
        with self.lock:
            if self.tensor is None or self.used + n > REPLAY_SLOTS:
                return None
            start, self.used = self.used, self.used + n
            return start

    def copy_in(self, flat: Any) -> tuple[int, int] | None:
        """Copy a flat device tensor into slots lent until :meth:`give_back` (slots given back
        first, so a long run of launches reuses a few); None without a buffer on its device, when
        full, or for a value the slots cannot hold (complex)."""
        buffer = self.tensor
        n = int(flat.numel())
        if buffer is None or n == 0 or flat.device != buffer.device or flat.is_complex():
            return None
        with self.lock:
            free = self.free.get(n)
            start = free.pop() if free else None
        if start is None:
            start = self.take(n)
            if start is None:
                return None
        buffer[start : start + n].copy_(flat)
        return start, n

    def give_back(self, start: int, n: int) -> None:
        with self.lock:
            self.free.setdefault(n, []).append(start)


REPLAY_BUFFER = _ReplayBuffer()


def reserve_replay_buffer() -> None:
    """Allocate the slots for metrics recorded in graph capture on torch's current device (call
    outside capture; a program that has not imported torch records no tensor metrics)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return
    try:
        REPLAY_BUFFER.reserve(torch.device("cuda", torch.cuda.current_device()))
    except Exception as exc:  # out of memory: metrics in capture are then left out, with a warning
        note = f"deuteron: no device buffer for metrics recorded in graph capture: {exc}"
        warnings.warn(note, stacklevel=3)


class ReplayedMetric(DeferredValue):
    """A metric recorded inside CUDA-graph capture: its value is added at every replay."""

    __slots__ = ("_start", "_n", "_integer", "_read")

    def __init__(self, start: int, n: int, integer: bool) -> None:
        self._start, self._n, self._integer = start, n, integer
        self._read: list[float] = [0.0] * n

    @classmethod
    def capture(cls, value: Any, key: str = "") -> ReplayedMetric | None:
        """Capture the add of ``value`` into the graph; None when there is no room or no buffer.
        Read back as integers when ``value`` is, or when ``key`` is a roofline integer (bytes)."""
        flat = value.detach().reshape(-1) if hasattr(value, "data_ptr") else None
        if flat is not None and flat.is_complex():
            return None  # no real slot holds it: left out, with the warning
        n = int(flat.numel()) if flat is not None else 1
        buffer = REPLAY_BUFFER.tensor
        start = REPLAY_BUFFER.take(n)
        if start is None or buffer is None or (flat is not None and flat.device != buffer.device):
            return None
        slots = buffer[start : start + n]
        if flat is None:
            slots.add_(float(value))
            integer = isinstance(value, int)
        else:
            slots.add_(flat)  # one kernel (it casts as it adds): one <metric> per replay
            integer = not (flat.is_floating_point() or flat.is_complex())
        convert = ROOFLINE_TYPES.get(key)
        return cls(start, n, integer if convert is None else convert is int)

    def value(self) -> Any:
        """What the replays since the last read added (numbers; a list for a vector)."""
        total = REPLAY_BUFFER.tensor[self._start : self._start + self._n].tolist()
        delta = [t - r for t, r in zip(total, self._read, strict=True)]
        self._read = total
        out = [int(round(d)) for d in delta] if self._integer else delta
        return out if self._n > 1 else out[0]


def is_metric_value(value: Any) -> bool:
    """What Proton accepts from launch_metadata as a metric: numbers (not bools) and tensors."""
    if value is None or isinstance(value, bool):
        return False
    return hasattr(value, "data_ptr") or isinstance(value, Number)


def capturing() -> bool:
    """Whether the calling thread's current CUDA stream is being captured into a graph."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return False
    return bool(torch.cuda.is_current_stream_capturing())


def _left_out(key: str) -> None:
    global _warned_capture
    if not _warned_capture:
        _warned_capture = True
        warnings.warn(
            f"deuteron: metric {key!r} was recorded inside CUDA-graph capture with no replay buffer "
            "(a CUPTI session on the device); such metrics are left out (the capture is intact)",
            stacklevel=4,
        )


def transform_tensor_metrics(metrics: dict[str, Any]) -> tuple[dict[str, Any], dict[str, DeferredValue]]:
    """Split metrics into values known now (host tensors read now) and values read later."""
    scalars: dict[str, Any] = {}
    deferred: dict[str, DeferredValue] = {}
    for key, value in metrics.items():
        if not hasattr(value, "data_ptr"):
            scalars[key] = roofline_value(key, value)
        elif getattr(getattr(value, "device", None), "type", "cpu") == "cpu":
            scalars[key] = roofline_value(key, value.tolist() if value.numel() > 1 else value.item())
        elif capturing():
            replayed = ReplayedMetric.capture(value, key)
            if replayed is None:
                _left_out(key)
            else:
                deferred[key] = replayed
        else:
            deferred[key] = TensorMetric(value, key)
    return scalars, deferred


def roofline_value(key: str, value: Any) -> Any:
    """``value`` with the type Proton gives the roofline metric ``key`` (see ``ROOFLINE_TYPES``),
    element by element for a vector; any other metric, or a value that is no number, as it is
    (the metric's own checks refuse a bad one, by name)."""
    convert = ROOFLINE_TYPES.get(key)
    if convert is None or isinstance(value, str):
        return value
    try:
        if isinstance(value, (list, tuple)) or getattr(value, "ndim", 0) >= 1:
            items = value.tolist() if hasattr(value, "tolist") else value
            return [convert(v) for v in items]
        return convert(value)
    except (TypeError, ValueError, OverflowError):
        return value


_ROOFLINE_KEYS = frozenset(ROOFLINE_TYPES)


def roofline_values(metrics: dict[str, Any]) -> dict[str, Any]:
    """``metrics`` with its roofline metrics typed (the same dict when it has none: a scope's
    metrics pass here, so the common case is one set test)."""
    if _ROOFLINE_KEYS.isdisjoint(metrics):
        return metrics
    return {key: roofline_value(key, value) for key, value in metrics.items()}


def replayed_metrics(metrics: dict[str, Any]) -> dict[str, DeferredValue]:
    """Every metric given inside graph capture (numbers too), as values added at each replay."""
    out: dict[str, DeferredValue] = {}
    for key, value in metrics.items():
        if isinstance(value, str):
            continue  # a property: nothing to add up per replay
        replayed = ReplayedMetric.capture(value, key)
        if replayed is None:
            _left_out(key)
        else:
            out[key] = replayed
    return out


def resolved(metrics: dict[str, Any]) -> dict[str, Any]:
    """``metrics`` with each deferred value read (call only on the program's thread)."""
    if not any(isinstance(v, DeferredValue) for v in metrics.values()):
        return metrics
    return {k: (v.value() if isinstance(v, DeferredValue) else v) for k, v in metrics.items()}
