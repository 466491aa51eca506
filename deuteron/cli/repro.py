"""``deuteron repro``: one recorded Triton launch, alone in a file to change and rerun. The engine
is :mod:`deuteron.repro`; the launches come from ``deuteron run --record-launches``."""

from __future__ import annotations

import argparse
from typing import Any

from deuteron.cli.arguments import add_command, number_in
from deuteron.process.terminal import printable, say, short_path
from deuteron.repro.api import open_recording, write_repro

DESCRIPTION = """\
Write one Triton launch recorded by `deuteron run --record-launches` as a standalone script: the
kernel's source and its helpers', its arguments as the kernel saw them (their values in an .npz
of the same name beside it), the launch with its grid, constexprs and options. `python FILE`
runs it alone; `python FILE --check` also compares its outputs with the recorded ones (exit 1 on
a mismatch).

examples:
  deuteron run --record-launches -n prof app.py      # records every launch beside prof.hatchet
  deuteron repro --list prof.hatchet                 # the kernels and their launches
  deuteron repro prof.hatchet --kernel add_kernel --launch 2 -o repro.py
  python repro.py --check                            # the launch alone, its outputs compared"""

_launch_number = number_in(int, "a launch number", lambda n: n >= 1, "launches are numbered from 1, not {}")


def add_parser(sub: Any) -> None:
    p = add_command(sub, "repro", "write a recorded Triton launch as a standalone script", DESCRIPTION)
    p.add_argument("profile", metavar="PROFILE", help="a profile written by deuteron run --record-launches")
    p.add_argument("--list", action="store_true", help="list the recorded kernels and their launches")
    p.add_argument("-k", "--kernel", metavar="NAME", help="the kernel (needed when several were recorded)")
    p.add_argument(
        "-l", "--launch", type=_launch_number, metavar="N", help="its Nth launch, from 1 (default: its last)"
    )
    p.add_argument("-o", "--output", metavar="FILE", help="the script to write (default: repro_KERNEL_N.py)")
    p.set_defaults(handler=repro_command)


def repro_command(args: argparse.Namespace) -> int:
    recording = open_recording(args.profile)
    if args.list:
        _print_list(recording)
        return 0
    path, values, kernel, number = write_repro(recording, args.kernel, args.launch, args.output)
    shown = short_path(path)
    say(
        f"deuteron: wrote {shown} and {short_path(values)}: {kernel.name}, launch {number} of "
        f"{len(kernel.launches)} (python {shown} --check runs it and compares its outputs)"
    )
    return 0


def _print_list(recording: Any) -> None:
    kernels = recording.kernels()
    header = recording.file.header
    total = sum(len(k.launches) for k in kernels)
    kept = header.get("kept_bytes", 0) / (1 << 20)
    limit = header.get("limit", 0) / (1 << 20)
    print(
        printable(
            f"{recording.shown}: {total} recorded launches of {len(kernels)} kernels "
            f"(values: {kept:.1f} of {limit:.0f} MiB)"
        )
    )
    width = max([len("kernel"), *(len(k.name) for k in kernels)])
    print(f"{'kernel':<{width}}  launches  from statistics")
    for k in kernels:
        print(printable(f"{k.name:<{width}}  {len(k.launches):>8}  {k.from_statistics:>15}"))
    for note in header.get("notes", []):
        print(printable(f"note: {note}"))
