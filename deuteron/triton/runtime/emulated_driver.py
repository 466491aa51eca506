"""Triton's driver on a machine with no GPU, answering for a GPU the user names (an H100 unless told).

Scripts written for a GPU ask Triton's driver things before and around their launches: the current
target (to pick configs), the torch device (to allocate), the device's properties (SM count, shared
memory: tutorial 02 sizes its grid from them), a benchmarker (``@triton.autotune`` times each config)
and ``triton.testing.do_bench``. With no GPU, Triton has no active driver and every one of those
raises "0 active drivers". While kernels run in the interpreter we install this driver instead:
tensors live on the CPU, the properties and target are the named GPU's, and timing is the CPU's
wall clock. The first question a script asks is answered with one line on stderr saying so.

Only used where Triton finds no driver of its own: on a GPU machine Triton's driver answers.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from deuteron.model.devices import NAMED_DEVICES
from deuteron.model.errors import DeuteronError
from deuteron.process.patches import MANAGER, AttributePatch, CallbackPatch, Patch


class EmulatedDeviceError(DeuteronError, ValueError):
    """An unknown ``--device`` name."""


@dataclass(frozen=True)
class EmulatedDevice:
    """What Triton's driver reports for one GPU: its target and ``get_device_properties`` row."""

    name: str
    backend: str
    arch: int | str
    warp_size: int
    multiprocessor_count: int
    max_shared_mem: int  # bytes a block may opt into
    max_num_regs: int  # registers per block
    sm_clock_rate: int  # kHz
    mem_clock_rate: int  # kHz
    mem_bus_width: int  # bits

    @property
    def target_name(self) -> str:
        return f"{self.backend}:{self.arch}"

    def properties(self) -> dict[str, int]:
        """The row of Triton's ``get_device_properties``: our fields by the driver's names."""
        return {
            "max_shared_mem": self.max_shared_mem,
            "max_num_regs": self.max_num_regs,
            "multiprocessor_count": self.multiprocessor_count,
            "warpSize": self.warp_size,
            "sm_clock_rate": self.sm_clock_rate,
            "mem_clock_rate": self.mem_clock_rate,
            "mem_bus_width": self.mem_bus_width,
        }


def _emulated(name: str, max_shared_mem: int, max_num_regs: int) -> EmulatedDevice:
    """A named part of ``model.devices`` (SMs, clocks, memory bus: one table for the whole
    project), with what only a driver says: shared memory and registers per block."""
    spec = NAMED_DEVICES[name]
    cuda = spec.device_type == "CUDA"
    return EmulatedDevice(
        name,
        "cuda" if cuda else "hip",
        int(spec.arch) if cuda else spec.arch,
        32 if cuda else 64,
        spec.num_sms,
        max_shared_mem,
        max_num_regs,
        spec.clock_rate,
        spec.memory_clock_rate,
        spec.bus_width,
    )


# Every part of model.devices (one list for run, view and explain): per-block shared memory (LDS on
# AMD: 64 KiB on CDNA2 and CDNA3, 160 KiB on CDNA4) and registers.
DEVICES: dict[str, EmulatedDevice] = {
    d.name: d
    for d in (
        _emulated("a100", 166912, 65536),
        _emulated("l40s", 101376, 65536),
        _emulated("h100", 232448, 65536),
        _emulated("h200", 232448, 65536),
        _emulated("b200", 232448, 65536),
        _emulated("mi250x", 65536, 131072),
        _emulated("mi300x", 65536, 131072),
        _emulated("mi350x", 163840, 131072),
    )
}
DEFAULT = "h100"


def device(name: str) -> EmulatedDevice:
    """The GPU a name means (``h100``, ``a100``, ...), or a one-line error listing the known ones."""
    found = DEVICES.get(name.strip().lower())
    if found is None:
        raise EmulatedDeviceError(f"unknown device {name!r}; choose one of {', '.join(DEVICES)}")
    return found


class _State:
    """The module's mutable state, one object so the driver reads it at each call: the GPU answered
    for, whether the line on stderr was said (once per process), and the option that picks another
    GPU, which that line names (``--device``, or explain's ``--target``)."""

    __slots__ = ("device", "said", "option")

    def __init__(self) -> None:
        self.device = DEVICES[DEFAULT]
        self.said = False
        self.option = "--device"  # how the user picks another GPU, for the one line on stderr


_s = _State()


def choose(name: str) -> EmulatedDevice:
    """The GPU the emulated driver answers for from now on."""
    _s.device = device(name)
    return _s.device


def chosen() -> tuple[EmulatedDevice, str]:
    """The GPU answered for now and the option that picks it (to put back with :func:`restore`)."""
    return _s.device, _s.option


def restore(previous: tuple[EmulatedDevice, str]) -> None:
    _s.device, _s.option = previous


def choose_target(backend: str, arch: int | str, warp_size: int, option: str) -> EmulatedDevice:
    """Answer for a compilation target (``deuteron explain --target``): the named GPU of that
    architecture, else the default one's numbers under that architecture. The caller puts the
    previous choice back when done (:func:`chosen`, :func:`restore`)."""
    found = next((d for d in DEVICES.values() if (d.backend, d.arch) == (backend, arch)), None)
    if found is None:
        base = DEVICES[DEFAULT]
        found = EmulatedDevice(
            f"{backend}:{arch}",
            backend,
            arch,
            warp_size,
            base.multiprocessor_count,
            base.max_shared_mem,
            base.max_num_regs,
            base.sm_clock_rate,
            base.mem_clock_rate,
            base.mem_bus_width,
        )
    _s.device, _s.option = found, option
    return found


GROUP = "triton.emulated_driver"


def acquire() -> None:
    """Let Triton find the emulated driver where it has none (one shared group, counted)."""
    MANAGER.acquire(GROUP, patches)


def release() -> None:
    MANAGER.release(GROUP)


def _say_once() -> None:
    if _s.said:
        return
    _s.said = True
    d = _s.device
    article = "an" if d.name[0] in "aefhilmnorsx" else "a"  # as the letter is spoken: "an H100"
    print(
        f"deuteron: no GPU here, so Triton's driver answers as {article} {d.name.upper()} ({d.target_name}, "
        f"{d.multiprocessor_count} SMs) and kernels run in the interpreter; choose another GPU with "
        f"{_s.option}",
        file=sys.stderr,
    )


class _Event:
    """A CUDA event's timing API on the CPU's clock."""

    def __init__(self, enable_timing: bool = False, **_: Any) -> None:
        self.t = 0.0

    def record(self, *_: Any) -> None:
        self.t = time.perf_counter()

    def elapsed_time(self, end: _Event) -> float:
        return (end.t - self.t) * 1e3

    def synchronize(self) -> None:
        return None


class _DeviceInterface:
    """The ``torch.cuda``-like module ``do_bench`` and the autotuner use: events and synchronize."""

    Event = _Event

    @staticmethod
    def synchronize(*_: Any) -> None:
        return None

    @staticmethod
    def current_device() -> int:
        return 0

    @staticmethod
    def device_count() -> int:
        return 1

    @staticmethod
    def is_available() -> bool:
        return True


class _Utils:
    """The driver's ``utils``, of which scripts call only ``get_device_properties`` (tutorial 02
    sizes its grid from it), reached as ``driver.active.utils.get_device_properties(0)``."""

    @staticmethod
    def get_device_properties(*_: Any) -> dict[str, int]:
        _say_once()
        return _s.device.properties()


class EmulatedDriver:
    """Triton's ``DriverBase`` as far as scripts and the runtime use it."""

    utils = _Utils()

    @staticmethod
    def is_active() -> bool:
        return False

    @property
    def backend(self) -> str:
        return _s.device.backend

    def get_current_target(self) -> Any:
        from triton.backends.compiler import GPUTarget

        _say_once()
        d = _s.device
        return GPUTarget(d.backend, d.arch, d.warp_size)

    def get_active_torch_device(self) -> Any:
        import torch

        _say_once()
        return torch.device("cpu")

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, _device: int) -> None:
        return None

    def get_current_stream(self, _device: int | None = None) -> int:
        return 0

    def get_device_interface(self) -> Any:
        return _DeviceInterface

    def get_benchmarker(self) -> Callable[..., Any]:
        return do_bench

    def get_empty_cache_for_benchmark(self) -> Any:
        import torch

        return torch.empty(1 << 20, dtype=torch.int8)  # a CPU has no L2 to flush worth 256 MB

    def clear_cache(self, cache: Any) -> None:
        cache.zero_()


# Interpreted launches are slow, so a benchmark repeats only while it stays within ``rep`` ms.
MAX_REPEATS = 1000


def do_bench(
    fn: Callable[[], Any],
    warmup: float = 25,
    rep: float = 100,
    grad_to_none: Sequence[Any] | None = None,
    quantiles: Sequence[float] | None = None,
    return_mode: str = "mean",
    **_: Any,
) -> Any:
    """``triton.testing.do_bench`` on the CPU's clock: one warm-up call, then calls while they fit in
    ``rep`` ms (at least one), in milliseconds, summarized as Triton does."""
    import numpy as np

    if return_mode not in ("min", "max", "mean", "median", "all"):
        raise ValueError(f"return_mode must be min, max, mean, median or all, not {return_mode!r}")
    fn()
    times: list[float] = []
    spent = 0.0
    while not times or (spent < rep and len(times) < MAX_REPEATS):
        if grad_to_none is not None:
            for x in grad_to_none:
                x.grad = None
        start = time.perf_counter()
        fn()
        took = (time.perf_counter() - start) * 1e3
        times.append(took)
        spent += took
    values = np.array(times)
    if quantiles is not None:
        out = [float(q) for q in np.quantile(values, list(quantiles))]
        return out[0] if len(out) == 1 else out
    if return_mode == "all":
        return times
    return float(getattr(np, return_mode)(values))


def do_bench_graph(
    fn: Callable[[], Any],
    rep: float = 20,
    grad_to_none: Sequence[Any] | None = None,
    quantiles: Sequence[float] | None = None,
    return_mode: str = "mean",
) -> Any:
    """``triton.testing.do_bench_cudagraph``'s signature; no graphs on a CPU, so :func:`do_bench`."""
    return do_bench(fn, rep=rep, grad_to_none=grad_to_none, quantiles=quantiles, return_mode=return_mode)


def patches() -> list[Patch]:
    """Where Triton finds no driver of its own, it gets this one (decided on Triton's first
    question, not now: probing a GPU early would initialise CUDA before the script forks), and
    ``triton.testing.do_bench`` times on the CPU's clock when it does."""
    import importlib

    from triton import testing
    from triton.runtime import driver

    module = importlib.import_module("triton.runtime.driver")
    original_create = module._create_driver
    original_bench = testing.do_bench

    def _create_driver() -> Any:
        try:
            return original_create()
        except RuntimeError as exc:
            if "0 active drivers" not in str(exc):
                raise
            return EmulatedDriver()

    def bench(*args: Any, **kwargs: Any) -> Any:
        if isinstance(driver.active, EmulatedDriver):
            return do_bench(*args, **kwargs)
        return original_bench(*args, **kwargs)

    def forget() -> None:  # a later real session must ask Triton again
        for attr in ("_active", "_default"):
            if isinstance(getattr(driver, attr, None), EmulatedDriver):
                setattr(driver, attr, None)

    found: list[Patch] = [
        CallbackPatch(lambda: None, forget),
        AttributePatch(module, "_create_driver", _create_driver),
        AttributePatch(testing, "do_bench", bench),
    ]
    if hasattr(testing, "do_bench_cudagraph"):
        original_graph = testing.do_bench_cudagraph

        def bench_graph(*args: Any, **kwargs: Any) -> Any:
            if isinstance(driver.active, EmulatedDriver):
                return do_bench_graph(*args, **kwargs)
            return original_graph(*args, **kwargs)

        found.append(AttributePatch(testing, "do_bench_cudagraph", bench_graph))
    return found
