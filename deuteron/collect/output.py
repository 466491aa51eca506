"""What a session writes, and the run metadata that travels with it."""

from __future__ import annotations

import os
import platform
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import __version__
from ..formats import chrome_trace, hatchet
from ..model.trace import TraceEvent
from ..model.tree import Profile

OUTPUT_FORMATS = ("hatchet", "chrome_trace")


def parse_formats(output_format: str) -> list[str]:
    """The formats named in ``"hatchet,chrome_trace"``; ValueError names an unknown one."""
    formats = [f.strip() for f in output_format.split(",") if f.strip()]
    for f in formats:
        if f not in OUTPUT_FORMATS:
            raise ValueError(f"unknown output format {f!r}; choose from: {', '.join(OUTPUT_FORMATS)}")
    return formats


def write(
    profile: Profile,
    formats: list[str],
    base: Path,
    trace: Callable[[], tuple[list[TraceEvent], dict[int, str]]],
) -> list[Path]:
    """Write ``base.hatchet`` and/or ``base.chrome_trace``; the trace's events are made only if asked."""
    if base.suffix in (".hatchet", ".chrome_trace", ".json"):
        base = base.with_suffix("")
    written = []
    for f in formats:
        if f == "hatchet":
            written.append(hatchet.write(profile, base.with_name(base.name + ".hatchet")))
        else:
            events, lane_names = trace()
            target = base.with_name(base.name + ".chrome_trace")
            written.append(chrome_trace.write(events, target, pid=os.getpid(), lane_names=lane_names))
    return written


def run_metadata(
    name: str, backend: str, context: str, hook: str | None, command: list[str] | None
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "tool": "deuteron",
        "version": __version__,
        "name": name,
        "backend": backend,
        "context": context,
        "hook": hook or "",
        "command": " ".join(command if command is not None else sys.argv),
        "start_time": time.time(),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "python": platform.python_version(),
    }
    if "RANK" in os.environ:
        meta["rank"] = os.environ["RANK"]
    triton = sys.modules.get("triton")
    if triton is not None:
        meta["triton"] = getattr(triton, "__version__", "")
    return meta
