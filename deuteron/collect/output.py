"""What a session writes, and the run metadata that travels with it."""

from __future__ import annotations

import os
import platform
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from deuteron.collect import job
from deuteron.formats import chrome_trace, hatchet
from deuteron.formats.files import OutputError, atomic_write
from deuteron.model.trace import TraceEvent
from deuteron.model.tree import Profile
from deuteron.process.signals import Deferred
from deuteron.process.terminal import say
from deuteron.version import __version__

OUTPUT_FORMATS = ("hatchet", "hatchet_msgpack", "chrome_trace")


def parse_formats(output_format: str) -> list[str]:
    """The formats named in ``"hatchet,chrome_trace"``; ValueError names an unknown one."""
    formats = [f.strip() for f in output_format.split(",") if f.strip()]
    for f in formats:
        if f not in OUTPUT_FORMATS:
            raise ValueError(f"unknown output format {f!r}; choose from: {', '.join(OUTPUT_FORMATS)}")
    return formats


def paths(base: Path, formats: list[str]) -> list[Path]:
    """The files ``formats`` write for ``base`` (``run`` -> ``run.hatchet``, ``run.chrome_trace``);
    in a distributed job each rank writes its own (``run.rank1.hatchet``): ranks share a folder,
    and one file for all would keep only the last rank's profile."""
    if base.suffix in (".hatchet", ".hatchet_msgpack", ".chrome_trace", ".json"):
        base = base.with_suffix("")
    r = job.current().rank  # see deuteron.collect.job: torchrun, srun, mpirun
    if r is not None and not base.name.endswith(f".rank{r}"):
        base = base.with_name(f"{base.name}.rank{r}")
    return [base.with_name(base.name + "." + f) for f in formats]


# What a framework context does to a profile before it is written (torch.compile's kernels placed
# under their modules: context/torch/inductor.py), each once, in the order added.
finishers: list[Callable[[Profile], object]] = []

_keeping: ContextVar[list[Path] | None] = ContextVar("keeping_earlier", default=None)


def holds_nothing(profile: Profile) -> bool:
    """No kernel ran and no scope had metrics: the profile has no value anywhere."""
    return not any(n.metrics for n in profile.root.walk())


@contextmanager
def keeping_earlier() -> Iterator[list[Path]]:
    """While open, a :func:`write` of a profile that holds nothing writes no file where one of
    its files exists already (an earlier run's profile is worth more than an empty one); the
    list yielded gets the files so kept. ``deuteron run`` writes its profile inside one."""
    kept: list[Path] = []
    token = _keeping.set(kept)
    try:
        yield kept
    finally:
        _keeping.reset(token)


def write(
    profile: Profile,
    formats: list[str],
    base: Path,
    trace: Callable[[], tuple[list[TraceEvent], dict[int, str]]],
) -> list[Path]:
    """Write ``base.hatchet`` and/or ``base.chrome_trace``; the trace's events are made only if asked.

    Inside :func:`keeping_earlier`, an empty profile leaves existing files alone and writes
    nothing. SIGINT and SIGTERM wait until the files are on disk (then take effect). A file whose folder
    cannot take it any more (removed by the program, say) is written to the temporary folder
    instead, and stderr says where; OutputError only when that fails too."""
    kept = _keeping.get()
    if kept is not None and holds_nothing(profile):
        earlier = [p for p in paths(base, formats) if p.is_file()]
        if earlier:
            kept.extend(earlier)
            return []
    for finish in finishers:
        finish(profile)
    written = []
    with Deferred(note="finishing the profile first"):
        for target, f in zip(paths(base, formats), formats, strict=True):
            text: str | bytes
            if f == "hatchet":
                text = "".join(hatchet.chunks(profile))
            elif f == "hatchet_msgpack":
                text = hatchet.to_msgpack(profile)
            else:
                text = trace_text(*trace(), profile.metadata)
            written.append(_write_or_rescue(target, text))
        if "chrome_trace" not in formats:
            _remove_stale_trace(paths(base, ["chrome_trace"])[0])
    return written


def trace_text(events: list[TraceEvent], lane_names: dict[int, str], metadata: dict[str, Any]) -> str:
    """A session's Chrome trace: its events, its lanes' names, and its run beside them."""
    return chrome_trace.text(events, pid=os.getpid(), lane_names=lane_names, other=trace_other(metadata))


def _remove_stale_trace(path: Path) -> None:
    """A trace of ours left by an earlier run of the same name would sit beside the new profile
    and look like its trace: removed (only ours, recognised by its format name at its start)."""
    try:
        if not path.is_file():
            return
        with open(path, "rb") as f:
            head = f.read(200)
        if chrome_trace.FORMAT.encode() in head:
            path.unlink()
    except OSError:  # not ours to fight over: leave it
        return


def _write_or_rescue(target: Path, text: str | bytes) -> Path:
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


def trace_other(metadata: dict[str, Any]) -> dict[str, Any]:
    """What a trace says of its run beside its events: its job (rank, world size, job id), its host,
    and its clock, so that ``deuteron serve`` of several ranks' traces can put them on one clock.

    Every event of a session is on ``time.perf_counter_ns`` (CLOCK_MONOTONIC on Linux; CUPTI's
    kernel times are calibrated onto it), which all processes of one host share; ``wall_minus_clock_ns``
    (wall clock minus that clock, read now) places the trace roughly among other hosts' traces,
    which a collective's end then aligns exactly (see :mod:`deuteron.view.rank_traces`)."""
    other: dict[str, Any] = {
        key: metadata[key]
        for key in ("rank", "world_size", "local_rank", "launcher", "job_id", "host", "pid")
        if key in metadata
    }
    other["clock"] = "perf_counter_ns"
    other["wall_minus_clock_ns"] = time.time_ns() - time.perf_counter_ns()
    return other


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
    meta.update(job.current().metadata())  # rank, world size, launcher, the job's id
    triton = sys.modules.get("triton")
    if triton is not None:
        meta["triton"] = getattr(triton, "__version__", "")
    return meta
