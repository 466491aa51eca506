"""What a recorded profile says each kernel cost, and how far each is from the device's roofline.

``deuteron explain --profile`` joins these numbers with compile-time facts, so a kernel's
advice can be ranked by what fixing it could win: ``opportunity`` = time × (1 − util), the
time the kernel spends beyond what its flops or bytes need at the device's peak.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from deuteron.model.devices import DeviceSpec, device_from_table_row
from deuteron.model.errors import MetricError
from deuteron.model.metrics import BYTES, COUNT, FLOPS, FLOPS_WIDTHS, TIME, roofline_seconds
from deuteron.model.tree import FUNCTION, KERNEL, Node, Profile

_SUMMED = (TIME, COUNT, FLOPS, BYTES, *(f"{FLOPS}{w}" for w in FLOPS_WIDTHS))


@dataclass(frozen=True)
class KernelCost:
    """One kernel name's totals over every call path, judged against one device."""

    name: str
    time_ns: float
    count: int
    flops: float | None
    bytes: float | None
    tflops_per_s: float | None
    gbytes_per_s: float | None
    flop_util: float | None
    byte_util: float | None
    util: float | None
    bound: str | None
    opportunity_ns: float

    def as_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def profile_device(profile: Profile) -> DeviceSpec | None:
    """The first complete row of the profile's device table: the hardware the times were taken on.

    Rows without a model (incomplete ones) are skipped rather than fatal, as ``deuteron view`` does.
    """
    for device_type in sorted(profile.devices):
        table = profile.devices[device_type]
        for dev_id in sorted(table, key=lambda i: (len(i), i)):
            try:
                return device_from_table_row(device_type, table[dev_id])
            except MetricError:
                continue
    return None


def _is_kernel(node: Node) -> bool:
    # Deuteron types its kernel frames; Proton writes every frame as a "function" and marks
    # kernels only by the device they ran on.
    return node.type == KERNEL or (node.type == FUNCTION and "device_type" in node.metrics)


def _kernel_nodes(root: Node) -> Iterator[tuple[Node, list[Node]]]:
    """Each kernel frame with the frames that hold its metrics: itself and its non-kernel
    descendants (state frames), so every recorded value is counted exactly once."""
    stack = [root]
    while stack:
        node = stack.pop()
        if not _is_kernel(node):
            stack.extend(node.children.values())
            continue
        parts = [node]
        below = list(node.children.values())
        while below:
            child = below.pop()
            if _is_kernel(child):
                stack.append(child)
            else:
                parts.append(child)
                below.extend(child.children.values())
        yield node, parts


def _sums(profile: Profile) -> dict[str, dict[str, float]]:
    if profile.inclusive:
        raise ValueError(
            "kernel_costs needs the recorded tree, whose nodes hold their own values: "
            "pass the profile before processors.inclusive"
        )
    out: dict[str, dict[str, float]] = {}
    for kernel, parts in _kernel_nodes(profile.root):
        total = out.setdefault(kernel.name, {})
        for part in parts:
            for metric in _SUMMED:
                value = part.metrics.get(metric)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    total[metric] = total.get(metric, 0.0) + value
    return out


def _seconds(work: dict[str, float], device: DeviceSpec | None) -> float | None:
    """The least time ``work`` needs at peak; None without a device or a model for it."""
    if device is None or not work:
        return None
    try:
        return roofline_seconds(work, device)
    except MetricError:
        return None


def _cost(name: str, m: dict[str, float], device: DeviceSpec | None) -> KernelCost:
    time_ns = m.get(TIME, 0.0)
    seconds = time_ns * 1e-9
    flop_work = {k: v for k, v in m.items() if k.startswith(FLOPS)}
    flops = m.get(FLOPS)
    if flops is None and flop_work:
        flops = sum(flop_work.values())
    byte_work = {BYTES: m[BYTES]} if BYTES in m else {}
    nbytes = byte_work.get(BYTES)
    flop_s, byte_s = _seconds(flop_work, device), _seconds(byte_work, device)

    def per_time(value: float | None) -> float | None:
        return value / seconds if value is not None and seconds > 0 else None

    flop_util, byte_util = per_time(flop_s), per_time(byte_s)
    utils = [u for u in (flop_util, byte_util) if u is not None]
    util = max(utils) if utils else None
    # Metrics that overstate the work push util past 1; such a kernel has nothing left to win.
    opportunity = time_ns * max(0.0, 1.0 - util) if util is not None else time_ns
    tflops = per_time(flops)
    gbytes = per_time(nbytes)
    return KernelCost(
        name=name,
        time_ns=time_ns,
        count=int(m.get(COUNT, 0)),
        flops=flops,
        bytes=nbytes,
        tflops_per_s=tflops / 1e12 if tflops is not None else None,
        gbytes_per_s=gbytes / 1e9 if gbytes is not None else None,
        flop_util=flop_util,
        byte_util=byte_util,
        util=util,
        bound=_bound(bool(flop_work), flop_s, bool(byte_work), byte_s),
        opportunity_ns=opportunity,
    )


def _bound(has_flops: bool, flop_s: float | None, has_bytes: bool, byte_s: float | None) -> str | None:
    """Which peak limits the kernel: the side whose work takes longer at peak.

    Comparing times at peak is the ridge-point test (flops/bytes against peak_flops/peak_bytes)
    that also holds when flops come in several widths. A known quantity the device cannot model
    leaves the answer unknown rather than guessed from the other side.
    """
    if (has_flops and flop_s is None) or (has_bytes and byte_s is None) or not (has_flops or has_bytes):
        return None
    f, b = flop_s or 0.0, byte_s or 0.0
    if f == b == 0.0:
        return None
    return "compute" if f > b else "memory"


def kernel_costs(profile: Profile, device: DeviceSpec | None) -> dict[str, KernelCost]:
    """Each kernel name's cost, judged against the profile's own device when it recorded one
    (the times were measured there), else against ``device``."""
    chosen = profile_device(profile) or device
    return {name: _cost(name, m, chosen) for name, m in _sums(profile).items()}


def ranked(costs: Iterable[KernelCost]) -> list[KernelCost]:
    """Largest opportunity first; ties by time, then by name so the order is stable."""
    return sorted(costs, key=lambda c: (-c.opportunity_ns, -c.time_ns, c.name))


def _few(names: Iterable[str], most: int = 4) -> str:
    names = sorted(set(names))
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def no_match(costs: Mapping[str, KernelCost], captured: Iterable[str], source: str) -> str | None:
    """One line when the profile's kernels and the captured ones share no name (a profile of
    another program, or of kernels renamed since): otherwise the ranking is silently empty.
    None when at least one kernel matches or nothing was captured."""
    launched = set(captured)
    if not launched or launched & set(costs):
        return None
    if not costs:
        return f"{source} holds no kernel, so no captured kernel ({_few(launched)}) is ranked"
    return f"{source} matches no captured kernel: it has {_few(costs)}; the program launched {_few(launched)}"
