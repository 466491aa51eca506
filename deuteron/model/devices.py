"""Devices: the table rows Proton writes (clocks in kHz, bus width in bits) and the peaks derived
from them, plus the named parts a user can judge a CPU profile against (``--device h100``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from deuteron.model.errors import MetricError

# AMD peaks as Proton models them: HBM bandwidth per architecture, and dense FP8 matrix flops per
# clock per compute unit (INT8 on gfx90a, which has no FP8 matrix ops), halving as width doubles.
AMD_BYTES_PER_S = {"gfx90a": 3.2e12, "gfx942": 5.3e12, "gfx950": 8.0e12}
AMD_FP8_FLOPS_PER_CLOCK_PER_CU = {"gfx90a": 1024, "gfx942": 4096, "gfx950": 8192}


# The columns of a row of Proton's device table, in its order (the device type is the table's key).
TABLE_COLUMNS = ("arch", "bus_width", "clock_rate", "memory_clock_rate", "num_sms")


@dataclass(frozen=True)
class DeviceSpec:
    """One row of a device table, in Proton's units (clocks in kHz, bus width in bits)."""

    device_type: str
    arch: str
    num_sms: int
    clock_rate: int
    memory_clock_rate: int
    bus_width: int

    def peak_bytes_per_s(self) -> float:
        if self.device_type == "CUDA":
            # HBM/GDDR is double data rate: two transfers per memory clock.
            return 2 * self.bus_width * self.memory_clock_rate * 1e3 / 8
        if self.device_type == "HIP":
            try:
                return AMD_BYTES_PER_S[self.arch]
            except KeyError:
                raise MetricError(f"no bandwidth model for AMD {self.arch}") from None
        raise MetricError(f"no bandwidth model for device type {self.device_type!r}")

    def peak_flops(self, width: int) -> float:
        """Dense matrix-core peak for operands of ``width`` bits (halves as width doubles)."""
        scale = width / 8
        clock_hz = self.clock_rate * 1e3
        if self.device_type == "HIP":
            try:
                return AMD_FP8_FLOPS_PER_CLOCK_PER_CU[self.arch] * self.num_sms * clock_hz / scale
            except KeyError:
                raise MetricError(f"no flop model for AMD {self.arch}") from None
        if self.device_type != "CUDA":
            raise MetricError(f"no flop model for device type {self.device_type!r}")
        if self.arch == "80":
            return 624e12 / scale
        if self.arch == "89":
            return 330.3e12 / scale
        if self.arch == "90":
            # 1513 dense fp8 TFLOP/s on the 114-SM H100 PCIe at 1755 MHz, scaled by SMs and clock.
            return self.num_sms / 114 * clock_hz / 1.755e9 * 1513e12 / scale
        if self.arch == "100":
            return self.num_sms * 16384 * clock_hz / scale
        raise MetricError(f"no flop model for CUDA arch sm_{self.arch}")

    def as_table_row(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in TABLE_COLUMNS}


# Boost clocks and memory interfaces of the SXM parts (the H200 row matches Proton's own file).
NAMED_DEVICES: dict[str, DeviceSpec] = {
    "a100": DeviceSpec("CUDA", "80", 108, 1410000, 1593000, 5120),
    "l40s": DeviceSpec("CUDA", "89", 142, 2520000, 2250000, 384),
    "h100": DeviceSpec("CUDA", "90", 132, 1980000, 2619000, 5120),
    "h200": DeviceSpec("CUDA", "90", 132, 1980000, 3201000, 6016),
    "b200": DeviceSpec("CUDA", "100", 148, 1965000, 4000000, 8192),
    # AMD: compute units as num_sms, peak engine clock; bandwidth comes from the architecture
    "mi250x": DeviceSpec("HIP", "gfx90a", 220, 1700000, 1600000, 8192),
    "mi300x": DeviceSpec("HIP", "gfx942", 304, 2100000, 1300000, 8192),
    "mi350x": DeviceSpec("HIP", "gfx950", 256, 2400000, 4000000, 8192),
}


def named_device(name: str) -> DeviceSpec:
    try:
        return NAMED_DEVICES[name.lower()]
    except KeyError:
        known = ", ".join(sorted(NAMED_DEVICES))
        raise MetricError(f"unknown device {name!r}; known devices: {known}") from None


def device_from_table_row(device_type: str, row: Mapping[str, object]) -> DeviceSpec:
    try:
        return DeviceSpec(
            device_type=device_type,
            arch=str(row["arch"]),
            num_sms=int(row["num_sms"]),  # type: ignore[call-overload]
            clock_rate=int(row["clock_rate"]),  # type: ignore[call-overload]
            memory_clock_rate=int(row["memory_clock_rate"]),  # type: ignore[call-overload]
            bus_width=int(row["bus_width"]),  # type: ignore[call-overload]
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise MetricError(f"device table row for {device_type} is incomplete: {exc}") from None


def max_flops(device_type: str, arch: str, width: int, num_sms: int, clock_rate: float) -> float:
    """Proton's ``specs.max_flops``: the dense matrix peak for ``width``-bit operands, in Proton's
    units (clock in kHz) and from the model ``util`` uses (``ValueError`` for a device with none)."""
    spec = DeviceSpec(device_type, str(arch), num_sms, clock_rate, 0, 0)  # type: ignore[arg-type]
    return spec.peak_flops(width)


def max_bps(device_type: str, arch: str, bus_width: int, memory_clock_rate: float) -> float:
    """Proton's ``specs.max_bps``: peak memory bandwidth (HBM is double data rate; AMD's comes from
    the architecture); bus width in bits, memory clock in kHz."""
    spec = DeviceSpec(device_type, str(arch), 0, 0, memory_clock_rate, bus_width)  # type: ignore[arg-type]
    return spec.peak_bytes_per_s()


# -- Links between GPUs: what a collective's bus bandwidth is compared with ------------------------
# Per direction, per GPU, as nccl-tests compares its bus bandwidth ("busbw"): an all-reduce's busbw
# approaches the slowest link's one-way bandwidth. The datasheets give NVLink's bidirectional total.


@dataclass(frozen=True)
class Link:
    """One kind of link between GPUs, with its peak bandwidth per direction per GPU."""

    name: str
    bytes_per_s: float  # one direction, one GPU (or one port, for a network)
    source: str  # where the figure comes from


LINKS: dict[str, Link] = {
    # NVIDIA H100 Tensor Core GPU datasheet (SXM): "NVLink: 900GB/s" (18 NVLink 4 links, both
    # directions) -> 450 GB/s each way; the H200 datasheet (SXM) gives the same "NVIDIA NVLink:
    # 900GB/s", and its device row (arch 90, 132 SMs) is an H100 SXM's.
    "nvlink4": Link("NVLink 4", 450e9, "NVIDIA H100 and H200 datasheets: 900 GB/s both ways (SXM)"),
    # NVIDIA A100 Tensor Core GPU datasheet (SXM): "NVLink: 600GB/s" (12 NVLink 3 links).
    "nvlink3": Link("NVLink 3", 300e9, "NVIDIA A100 datasheet: 600 GB/s both ways (SXM)"),
    # NVIDIA HGX B200 / DGX B200 datasheet: "1.8TB/s" NVLink 5 per GPU, both directions.
    "nvlink5": Link("NVLink 5", 900e9, "NVIDIA B200 datasheet: 1.8 TB/s both ways"),
    # NVIDIA A100 PCIe datasheet: "PCIe Gen4: 64GB/s" (x16, both directions).
    "pcie4": Link("PCIe Gen4 x16", 32e9, "NVIDIA A100 PCIe datasheet: 64 GB/s both ways"),
    # NVIDIA H100 PCIe datasheet: "PCIe Gen5: 128GB/s" (x16, both directions).
    "pcie5": Link("PCIe Gen5 x16", 64e9, "NVIDIA H100 PCIe datasheet: 128 GB/s both ways"),
    # NVIDIA ConnectX-7 datasheet: InfiniBand NDR, 400 Gb/s per port (one port per GPU, as DGX H100).
    "ib-ndr": Link("InfiniBand NDR", 50e9, "NVIDIA ConnectX-7 datasheet: 400 Gb/s per port"),
}

# The link a part's GPUs most likely talk over within one host, by (arch, SMs) of the device table:
# the SXM parts have NVLink; a PCIe part (114-SM H100 PCIe, the L40S) only PCIe.
_HOST_LINKS = {("90", 132): "nvlink4", ("90", 114): "pcie5", ("80", 108): "nvlink3", ("89", 142): "pcie4"}
_PARTS = {
    ("90", 132): "H100/H200 SXM",
    ("90", 114): "H100 PCIe",
    ("80", 108): "A100 SXM",
    ("89", 142): "L40S",
}


def assumed_link(
    devices: Mapping[str, Mapping[str, Mapping[str, object]]], hosts: int
) -> tuple[Link | None, str]:
    """The link a job's collectives most likely ran over, and why it is assumed: a job over several
    hosts is held to its network (InfiniBand NDR, a port per GPU, as on DGX systems); within one
    host, the link of the part the device table names (NVLink on an H100 SXM, ...). (None, why)
    where the table names no part we know: a profile says its GPUs, not how they are wired."""
    if hosts > 1:
        return LINKS["ib-ndr"], f"{hosts} hosts: their network"
    rows = devices.get("CUDA")
    for row in rows.values() if isinstance(rows, Mapping) else ():
        if not isinstance(row, Mapping):
            continue
        arch, sms = str(row.get("arch")), row.get("num_sms")
        if arch == "100":
            return LINKS["nvlink5"], "one host of B200s"
        key = (arch, sms if isinstance(sms, int) else -1)
        if key in _HOST_LINKS:
            return LINKS[_HOST_LINKS[key]], f"one host of {_PARTS[key]}s"
    return None, "no link known for these GPUs"
