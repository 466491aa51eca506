"""``deuteron run``: run a script, a module or pytest under a profiling session.

The target sees its own ``sys.argv``, ``__name__ == "__main__"`` and exit code. The profile
is written however the target ends: normally, by an exception, by ``sys.exit``, or by
SIGINT/SIGTERM (then the exit code is 128 + the signal number, as a shell would report).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .. import api
from ..collect.backends import NAMES as BACKENDS
from ..collect.backends import resolve
from ..collect.context import CONTEXTS
from ..collect.session import disabled
from ..target import Target, exit_code, run_to_end
from ..target import run as run_target
from ..triton import enable_interpreter_mode
from .target import USAGE, add_target_arguments, parse_target


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="run a script, module or pytest and profile it",
        description=(
            "Run a Python script, a module (-m) or pytest and profile every kernel launch and scope.\n"
            "Writes NAME.hatchet (and NAME.chrome_trace with --trace)."
        ),
        usage=f"deuteron run [options] {USAGE}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-n", "--name", default="deuteron", help="output name: NAME.hatchet (default: deuteron)")
    p.add_argument(
        "-b",
        "--backend",
        default="auto",
        choices=BACKENDS,
        help="auto (CUPTI on a usable NVIDIA GPU, else the interpreter), interpreter, cupti",
    )
    p.add_argument(
        "-c",
        "--context",
        default="shadow",
        choices=CONTEXTS,
        help="shadow: scopes; python: Python call paths (default: shadow)",
    )
    p.add_argument(
        "-k",
        "--hook",
        default=None,
        choices=["triton"],
        help="triton: use each kernel's launch_metadata (name, flops, bytes), as Proton does",
    )
    p.add_argument("--trace", action="store_true", help="also write a Chrome trace of scopes and launches")
    add_target_arguments(p)
    p.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    target = parse_target(args)
    if disabled():
        print("deuteron: DEUTERON_DISABLE is set; running without profiling", file=sys.stderr)
        return _run_unprofiled(target)
    backend = resolve(args.backend)  # fails early, with the reason, before the target runs
    if backend.name == "interpreter":
        enable_interpreter_mode()  # before the target imports triton
    command = ["deuteron", "run", *sys.argv[2:]] if sys.argv[1:2] == ["run"] else [target.name, *target.args]
    sid = api.start(args.name, backend=backend.name, context=args.context, hook=args.hook, command=command)
    try:
        code, ended_by = run_to_end(target)
    finally:  # a profile is never lost: also written when the module is missing
        formats = "hatchet,chrome_trace" if args.trace else "hatchet"
        files = api.finalize(sid, formats)
    names = ", ".join(str(f) for f in files)
    if ended_by:
        print(f"deuteron: {ended_by}; wrote the partial profile to {names}", file=sys.stderr)
    else:
        print(f"deuteron: wrote {names}", file=sys.stderr)
    return code


def _run_unprofiled(target: Target) -> int:
    try:
        return run_target(target)
    except SystemExit as exc:
        return exit_code(exc)
