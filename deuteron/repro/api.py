"""``deuteron repro``'s engine: find a profile's recorded launches, list them, write one's reproducer.

A profile made with ``--record-launches`` names its record in its metadata (``recorded_launches``:
the file, beside the profile, and its counts). Launches are numbered per kernel from 1, in the
order they ran; a launch left out means the kernel's last. Every way this can fail is one
:class:`~deuteron.repro.errors.ReproError` line that says what to do instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deuteron.formats import launch_record, profile_stream
from deuteron.formats.files import atomic_open, check_writable
from deuteron.process.terminal import short_path
from deuteron.repro.errors import ReproError
from deuteron.repro.writer import Title, render


@dataclass
class KernelLaunches:
    """One kernel's recorded launches, as ``deuteron repro --list`` shows them."""

    name: str
    launches: list[dict[str, Any]]

    @property
    def from_statistics(self) -> int:
        """Launches with a buffer made from statistics (its values were past the byte limit)."""
        return sum(any(b["before"] is None for b in launch["buffers"]) for launch in self.launches)


@dataclass
class Recording:
    """A profile's record, opened."""

    profile: Path
    file: launch_record.LaunchFile

    @property
    def shown(self) -> str:
        return short_path(self.profile)

    def kernels(self) -> list[KernelLaunches]:
        """Each kernel's launches, in the order the kernels first ran."""
        names = [k["name"] for k in self.file.header["kernels"]]
        found: dict[str, KernelLaunches] = {}
        for launch in self.file.header["launches"]:
            name = names[launch["kernel"]]
            found.setdefault(name, KernelLaunches(name, [])).launches.append(launch)
        return list(found.values())


def open_recording(profile: str | os.PathLike[str]) -> Recording:
    """The record a profile names; ReproError when it has none or the file is gone."""
    path = Path(profile)
    meta = profile_stream.read_profile(path).metadata.get(launch_record.METADATA_KEY)
    shown = short_path(path)
    if not isinstance(meta, dict) or not isinstance(meta.get("file"), str):
        raise ReproError(f"{shown} has no recorded launches: record them with deuteron run --record-launches")
    beside = path.parent / Path(meta["file"]).name  # only beside it, whatever the metadata says
    if not beside.is_file():
        raise ReproError(
            f"{short_path(beside)} is missing: deuteron run --record-launches writes it beside {shown}; "
            "keep the two together, or record again"
        )
    return Recording(path, launch_record.read(beside))


def pick(
    recording: Recording, kernel: str | None, number: int | None
) -> tuple[KernelLaunches, dict[str, Any]]:
    """The kernel's launch ``number`` (1-based; None: its last)."""
    kernels = recording.kernels()
    names = [k.name for k in kernels]
    if not kernels:
        raise ReproError(f"{recording.shown} recorded no launch: did the program launch a Triton kernel?")
    if kernel is None:
        if len(kernels) > 1:
            raise ReproError(
                f"{recording.shown} recorded launches of {len(kernels)} kernels ({', '.join(names)}): "
                "choose one with --kernel NAME"
            )
        chosen = kernels[0]
    else:
        match = [k for k in kernels if k.name == kernel]
        if not match:
            raise ReproError(
                f"no recorded launch of {kernel!r} in {recording.shown}; recorded: {', '.join(names)} "
                f"(deuteron repro --list {recording.shown})"
            )
        chosen = match[0]
    total = len(chosen.launches)
    if number is None:
        return chosen, chosen.launches[-1]
    if not 1 <= number <= total:
        runs = "once" if total == 1 else f"{total} times"
        raise ReproError(
            f"{chosen.name} ran {runs} in {recording.shown}: --launch takes 1 to {total} "
            "(or leave it out for the last)"
        )
    return chosen, chosen.launches[number - 1]


def write_repro(
    recording: Recording, kernel: str | None, number: int | None, output: str | os.PathLike[str] | None
) -> tuple[Path, Path, KernelLaunches, int]:
    """Write the reproducer and its values (``repro.py``, ``repro.npz``); returns both paths, the
    kernel's launches and the launch's number. Nothing is written when anything is wrong."""
    chosen, launch = pick(recording, kernel, number)
    number = chosen.launches.index(launch) + 1
    target = Path(output) if output is not None else Path(f"repro_{chosen.name}_{number}.py")
    values_path = target.with_suffix(".npz")
    if values_path == target:
        raise ReproError(f"{target}: give the reproducer a name ending in .py")
    target, values_path = check_writable(target, "-o"), check_writable(values_path, "-o")
    header = recording.file.header
    kernel_entry = header["kernels"][launch["kernel"]]
    title = Title(chosen.name, number, len(chosen.launches), recording.shown, values_path.name)
    text = render(kernel_entry, launch, title)
    arrays: dict[str, np.ndarray] = {}
    for b in launch["buffers"]:
        dtype = launch_record.DTYPES[b["dtype"]]
        for key, suffix in (("before", ""), ("after", ".after")):
            if b.get(key) is not None:
                arrays[b["name"] + suffix] = recording.file.array(b[key], b["size"], dtype)
    launch_record.write_arrays(arrays, values_path)
    with atomic_open(target) as f:
        f.write(text)
    return target, values_path, chosen, number
