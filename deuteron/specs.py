"""Proton's ``specs`` module: a device's peak flops and bandwidth from its device-table row.

The models are :class:`deuteron.model.devices.DeviceSpec`'s (the ones ``util`` and the roofline
use), so a script calling ``specs.max_flops`` gets the numbers ``deuteron view`` shows. Units are
Proton's: clocks in kHz, bus width in bits; results in flop/s and byte/s.
"""

from __future__ import annotations

from .model.devices import AMD_BYTES_PER_S, AMD_FP8_FLOPS_PER_CLOCK_PER_CU, DeviceSpec

amd_bps_by_arch = AMD_BYTES_PER_S  # Proton's names for the AMD tables
amd_fp8_flops_by_arch = AMD_FP8_FLOPS_PER_CLOCK_PER_CU


def max_flops(device_type: str, arch: str, width: int, num_sms: int, clock_rate: float) -> float:
    """Dense matrix peak for ``width``-bit operands (``ValueError`` for a device with no model)."""
    spec = DeviceSpec(device_type, str(arch), num_sms, clock_rate, 0, 0)  # type: ignore[arg-type]
    return spec.peak_flops(width)


def max_bps(device_type: str, arch: str, bus_width: int, memory_clock_rate: float) -> float:
    """Peak memory bandwidth (HBM is double data rate; AMD's comes from the architecture)."""
    spec = DeviceSpec(device_type, str(arch), 0, 0, memory_clock_rate, bus_width)  # type: ignore[arg-type]
    return spec.peak_bytes_per_s()
