"""What the CUPTI backend tells a session when it stops: the devices' rows, its counters in the
file's metadata, and warnings for what was lost (records dropped, graphs whose capture was not
seen, launches with no kernel records at all)."""

from __future__ import annotations

import warnings
from typing import Protocol

from deuteron.collect.backends.cupti.join import Join
from deuteron.collect.backends.cupti.library import CONFLICT_FIX, loaded_library, shim
from deuteron.collect.backends.port import Recorder
from deuteron.collect.placement import CAPTURED_AT
from deuteron.process.terminal import say


def write_devices(devices: set[int], session: Recorder) -> None:
    """One device row per GPU that ran a kernel (what ``util`` and the roofline need)."""
    for device in sorted(devices):
        try:
            info = shim.device_info(device)
        except OSError:
            continue
        session.add_device(
            "CUDA",
            str(device),
            {
                "arch": f"{info['cc_major']}{info['cc_minor']}",
                "bus_width": info["bus_width"],
                "clock_rate": info["clock_rate"],
                "memory_clock_rate": info["memory_clock_rate"],
                "num_sms": info["num_sms"],
            },
        )


class Counted(Protocol):
    """The CUPTI backend's counts, as the report reads them (``told_graphs`` it updates)."""

    join: Join
    counters: dict[str, int]
    finalize_seconds: float
    drains: int
    told_graphs: set[int]


def report(session: Recorder, backend: Counted) -> None:
    """The backend's counters in the session's metadata, and a warning for each loss a user would
    otherwise never see (its words Proton's where Proton has them, so scripts find them)."""
    c = backend.join.counters
    counters = backend.counters
    source = loaded_library()
    session.note(
        cupti_library=f"{source[1]} ({source[0]})" if source else "",
        kernels=c.kernels,
        dropped_records=counters.get("dropped", 0),
        lost_launches=counters.get("lost_launches", 0),
        lost_kernels=counters.get("lost_kernels", 0),
        unmatched_kernels=c.unmatched,
        graph_kernels_without_capture=c.graph_without_capture,
        finalize_seconds=round(backend.finalize_seconds, 4),
        drains=backend.drains,
    )
    lost = counters.get("dropped", 0) + counters.get("lost_kernels", 0)
    if lost:
        warnings.warn(f"deuteron: CUPTI dropped {lost} kernel records (out of buffer memory)", stacklevel=3)
    for graph in sorted(backend.join.uncaptured_graphs - backend.told_graphs):
        # Proton's words, one line per graph, so scripts that look for them find them
        say(
            f"deuteron: Cannot find graph for graphExecId: {graph}; its kernels are filed under the "
            f"graph launch, not where they were captured ({CAPTURED_AT}). To see that, start "
            "profiling before the graph is created"
        )
    backend.told_graphs |= backend.join.uncaptured_graphs
    launches_seen = len(backend.join.pending) > 0 or c.expired_launches > 0
    if c.kernels == 0 and counters.get("buffers", 0) == 0 and launches_seen:
        warnings.warn(
            "deuteron: launches were seen but CUPTI delivered no kernel records; another CUPTI client "
            f"(torch.profiler, Proton, nsys) may have taken the activity buffers. {CONFLICT_FIX}",
            stacklevel=3,
        )
