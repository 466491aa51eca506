"""``deuteron diff --kernel``: one kernel in two profiles (time, samples per line), or one kernel
compiled from two reproducers (resources, occupancy, IR stages, outputs); ``deuteron diff``'s
other form, two whole profiles, stays :func:`deuteron.cli.view.run_view`'s."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from typing import Any

from deuteron.formats import profile_stream
from deuteron.model.errors import DeuteronError
from deuteron.process.terminal import printable, say

STAGES = ("ttir", "ttgir", "llir", "ptx", "sass", "amdgcn")
SCRIPT_ONLY = (("gpu_target", "--target"), ("stage", "--stage"), ("no_run", "--no-run"), ("no_ir", "--no-ir"))


def add_kernel_options(p: argparse.ArgumentParser) -> None:
    """The options of ``deuteron diff`` that compare one kernel (its other options, the tree's)."""
    group = p.add_argument_group("one kernel (--kernel; two reproducers .py)")
    group.add_argument(
        "-k",
        "--kernel",
        metavar="NAME",
        help="compare this kernel only (its name or a part of it): time, calls and time per launch "
        "side by side, and samples per source line when the profiles are sampled",
    )
    group.add_argument(
        "--lines",
        type=int,
        default=20,
        metavar="N",
        help="sampled source lines to show, most samples first (default 20; 0: all)",
    )
    group.add_argument(
        "--target",
        dest="gpu_target",
        metavar="T",
        help="two reproducers: the GPU target to compile for (cuda:80, cuda:90, ...; default: the local "
        "GPU, else cuda:90)",
    )
    group.add_argument(
        "--stage",
        metavar="S",
        help=f"two reproducers: the IR stages to diff, comma-separated ({', '.join(STAGES)}; "
        "default ttir,ttgir,ptx)",
    )
    group.add_argument(
        "--no-ir", action="store_true", help="two reproducers: each stage's size, not its diff"
    )
    group.add_argument(
        "--no-run",
        action="store_true",
        help="two reproducers: do not run both on the CPU to compare their outputs",
    )


def is_kernel_diff(args: argparse.Namespace) -> bool:
    """Whether ``deuteron diff`` compares one kernel (``--kernel``, or two ``.py`` files); refuses
    the reproducers' options on profiles and a profile against a script."""
    scripts = [str(p).endswith(".py") for p in (args.old, args.profile)]
    if any(scripts) and not all(scripts):
        raise DeuteronError("diff compares two profiles or two reproducers (.py files), not one of each")
    if not all(scripts):
        for dest, flag in SCRIPT_ONLY:
            if getattr(args, dest, None):
                raise DeuteronError(f"{flag} applies to two reproducers (.py files), not to profiles")
    if args.lines is not None and args.lines < 0:
        raise DeuteronError("--lines must be 0 or more")
    return all(scripts) or args.kernel is not None


def run_kernel_diff(args: argparse.Namespace) -> int:
    for path in (args.old, args.profile):
        if not os.path.isfile(path):
            raise DeuteronError(f"{path}: no such file")
    if str(args.old).endswith(".py"):
        return _scripts(args)
    return _profiles(args)


def _profiles(args: argparse.Namespace) -> int:
    from deuteron.view.kernel_diff import diff_kernel, text_lines

    before = profile_stream.read_profile(args.old)
    after = profile_stream.read_profile(args.profile)
    diff = diff_kernel(before, after, args.kernel, args.old, args.profile)
    if args.json:
        print(json.dumps(diff.as_json(), indent=1))
        return 0
    for line in text_lines(diff, full_names=bool(args.full_names), top=args.lines):
        print(printable(line))
    return 0


def _scripts(args: argparse.Namespace) -> int:
    """Compile the kernel of each script, print what changed, then compare the outputs.

    Exit code 1 when the outputs differ, else 0. What the scripts print themselves goes to stderr,
    so stdout is the comparison alone.
    """
    from deuteron.explain.kernel_diff import diff_compiled, text_lines

    stages = None
    if args.stage:
        stages = [s.strip() for s in args.stage.split(",") if s.strip()]
        unknown = [s for s in stages if s not in STAGES]
        if unknown or not stages:
            raise DeuteronError(f"--stage {args.stage}: choose among {', '.join(STAGES)}")
    if args.gpu_target and "," in args.gpu_target:
        raise DeuteronError("--target: diff compares one target at a time, e.g. --target cuda:90")
    pending = None
    if not args.no_run:  # started first: the two run while the two compile
        from deuteron.repro.outputs import OutputRun

        pending = OutputRun(args.old, args.profile)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            diff = diff_compiled(args.old, args.profile, args.kernel, args.gpu_target, stages)
    except BaseException:
        if pending is not None:
            pending.cancel()
        raise
    outputs = pending.finish() if pending is not None else None
    if args.json:
        doc: dict[str, Any] = diff.as_json()
        if outputs is not None:
            doc["outputs"] = {"compared": outputs.compared, "differ": outputs.differ, "lines": outputs.lines}
        print(json.dumps(doc, indent=1))
    else:
        for line in text_lines(diff, show_ir=not args.no_ir):
            print(printable(line))
        if outputs is not None:
            print()
            for line in outputs.lines:
                print(printable(line))
    if outputs is not None and not outputs.compared:
        say("deuteron diff: " + outputs.lines[0])
    return 1 if outputs is not None and outputs.differ else 0
