"""Proton's ``specs`` module: a device's peak flops and bandwidth from its device-table row.

The models are :class:`deuteron.model.devices.DeviceSpec`'s (the ones ``util`` and the roofline
use), so a script calling ``specs.max_flops`` gets the numbers ``deuteron view`` shows. Units are
Proton's: clocks in kHz, bus width in bits; results in flop/s and byte/s.
"""

from deuteron.model.devices import AMD_BYTES_PER_S, AMD_FP8_FLOPS_PER_CLOCK_PER_CU, max_bps, max_flops

amd_bps_by_arch = AMD_BYTES_PER_S  # Proton's names for the AMD tables
amd_fp8_flops_by_arch = AMD_FP8_FLOPS_PER_CLOCK_PER_CU

__all__ = ["amd_bps_by_arch", "amd_fp8_flops_by_arch", "max_bps", "max_flops"]
