"""What a session writes, and the run metadata that travels with it."""

from __future__ import annotations

import os
import platform
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import __version__
from ..formats import chrome_trace, hatchet
from ..formats.files import OutputError, atomic_write
from ..model.trace import TraceEvent
from ..model.tree import Profile
from ..render.text import say
from ..signals import Deferred

OUTPUT_FORMATS = ("hatchet", "chrome_trace")


def parse_formats(output_format: str) -> list[str]:
    """The formats named in ``"hatchet,chrome_trace"``; ValueError names an unknown one."""
    formats = [f.strip() for f in output_format.split(",") if f.strip()]
    for f in formats:
        if f not in OUTPUT_FORMATS:
            raise ValueError(f"unknown output format {f!r}; choose from: {', '.join(OUTPUT_FORMATS)}")
    return formats


def paths(base: Path, formats: list[str]) -> list[Path]:
    """The files ``formats`` write for ``base`` (``run`` -> ``run.hatchet``, ``run.chrome_trace``)."""
    if base.suffix in (".hatchet", ".chrome_trace", ".json"):
        base = base.with_suffix("")
    return [base.with_name(base.name + "." + f) for f in formats]


def write(
    profile: Profile,
    formats: list[str],
    base: Path,
    trace: Callable[[], tuple[list[TraceEvent], dict[int, str]]],
) -> list[Path]:
    """Write ``base.hatchet`` and/or ``base.chrome_trace``; the trace's events are made only if asked.

    SIGINT and SIGTERM wait until the files are on disk (then take effect). A file whose folder
    cannot take it any more (removed by the program, say) is written to the temporary folder
    instead, and stderr says where; OutputError only when that fails too."""
    written = []
    with Deferred(note="finishing the profile first"):
        for target, f in zip(paths(base, formats), formats, strict=True):
            if f == "hatchet":
                text = "".join(hatchet.chunks(profile))
            else:
                events, lane_names = trace()
                text = chrome_trace.text(events, pid=os.getpid(), lane_names=lane_names)
            written.append(_write_or_rescue(target, text))
    return written


def _write_or_rescue(target: Path, text: str) -> Path:
    try:
        return atomic_write(target, text)
    except OutputError as first:
        rescue = Path(tempfile.gettempdir()) / target.name
        if rescue.exists():
            rescue = rescue.with_name(f"{target.stem}.{os.getpid()}{target.suffix}")
        try:
            atomic_write(rescue, text)
        except OutputError as second:
            raise OutputError(
                f"{first}; the copy for {tempfile.gettempdir()} failed too ({second})"
            ) from None
        say(f"deuteron: {first}; wrote {rescue} instead")
        return rescue


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
