"""``deuteron run``: run a script, a module or pytest under a profiling session.

The target sees its own ``sys.argv``, ``__name__ == "__main__"`` and exit code. The profile
is written however the target ends: normally, by an exception, by ``sys.exit``, or by
SIGINT/SIGTERM (then the exit code is 128 + the signal number, as a shell would report).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

from deuteron.cli.program import USAGE, add_device_argument, add_target_arguments, choose_device, parse_target
from deuteron.collect import api
from deuteron.collect.backends import NAMES as BACKENDS
from deuteron.collect.backends import resolve
from deuteron.collect.context import ContextSpecError, parse_context
from deuteron.collect.flags import flags
from deuteron.collect.session import disabled_by
from deuteron.formats.files import OutputError
from deuteron.process.program import Program, exit_code, run_to_end
from deuteron.process.program import run as run_target
from deuteron.process.signals import Deferred
from deuteron.process.terminal import printable, say
from deuteron.triton import enable_interpreter_mode


def add_parser(sub: Any) -> None:
    """Registers ``deuteron run``: one argparse table, in the order ``-h`` shows it.

    ``-c`` is checked here by :func:`_context`, so a bad context list fails before the target starts;
    ``-n``, ``-b``, ``-c`` and ``-k`` are ``proton.start``'s name, backend, context and hook.
    """
    p = sub.add_parser(
        "run",
        help="run a script, module or pytest and profile it",
        description=(
            "Run a Python script, a module (-m) or pytest and profile every kernel launch and scope.\n"
            "Writes NAME.hatchet (and NAME.chrome_trace with --trace).\n\n"
            "examples:\n"
            "  deuteron run train.py --epochs 1        # the script's own options stay its own\n"
            "  deuteron run -c torch train.py          # nn.Module path > aten op > kernel, backward too\n"
            "  deuteron run -c python,torch train.py   # the calling Python line, then the modules\n"
            "  deuteron run -c jax train_jax.py        # jitted function > named_scope path > HLO op\n"
            "  deuteron run -c python,native app.py    # the Python line, then each launch's C/C++ frames\n"
            "  deuteron run -m mypkg.train             # a module, as python -m"
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
        type=_context,
        help=(
            "a comma list: shadow (scopes; the default), python (Python call paths), torch (nn.Module "
            "path > aten op, backward under its module, CPU time and flops per module and op), jax (jitted "
            "function > named_scope path > primitive > HLO op, on a GPU), native (the C/C++ frames of each "
            "launch, on a GPU; not with torch or jax), e.g. -c torch or -c python,jax"
        ),
    )
    p.add_argument(
        "-k",
        "--hook",
        default=None,
        choices=["triton"],
        help="triton: use each kernel's launch_metadata (name, flops, bytes), as Proton does",
    )
    p.add_argument("--trace", action="store_true", help="also write a Chrome trace of scopes and launches")
    add_device_argument(p)
    add_target_arguments(p)
    p.set_defaults(handler=run_command)


def _context(value: str) -> str:
    try:
        parse_context(value)
    except ContextSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def run_command(args: argparse.Namespace) -> int:
    """Profile the target and write its profile however it ends; returns the target's exit code.

    Kept as one function because its order is the contract: everything that can fail (the backend,
    the output paths) is checked before the target runs, the interpreter is switched on before the
    target imports triton, and once the target has ended SIGINT and SIGTERM are only noted until the
    files are on disk (while it runs they stop it as usual), so a Ctrl-C never leaves half a profile.
    """
    target = parse_target(args)
    choose_device(args)
    which = disabled_by()
    if which is not None:
        print(f"deuteron: {which} is set; running without profiling", file=sys.stderr)
        return _run_unprofiled(target)
    backend = resolve(args.backend)  # fails early, with the reason, before the target runs
    if backend.name == "interpreter":
        enable_interpreter_mode()  # before the target imports triton
    command = ["deuteron", "run", *sys.argv[2:]] if sys.argv[1:2] == ["run"] else [target.name, *target.args]
    formats = ("hatchet", "chrome_trace") if args.trace else ("hatchet",)
    # The output files are checked (and their paths fixed) here, before the target runs.
    flags.command_line = True
    sid = api.start_session(
        args.name,
        backend=backend.name,
        context=args.context,
        hook=args.hook,
        command=command,
        outputs=formats,
        for_command=True,
    )
    failure = ""
    files = []
    owner = os.getpid()
    live = api.current_profile(sid) if sid is not None else None
    # From here until the profile is on disk, SIGINT/SIGTERM outside the target are noted, not obeyed.
    with Deferred(redeliver=False, note="finishing the profile first") as late:
        try:
            code, ended_by = run_to_end(target)
        finally:  # a profile is never lost: also written when the module is missing
            if os.getpid() == owner:
                try:
                    files = api.finalize(sid, ",".join(formats))
                except OutputError as exc:
                    failure = str(exc)
    if os.getpid() != owner:
        return code  # a child the target forked ends as it chose: the profile is the parent's
    names = ", ".join(str(f) for f in files)
    if failure:
        say(f"deuteron: error: {failure}")
        return code or 1
    if late.exit_code is not None:
        name = signal.Signals(late.received[0]).name
        print(
            printable(f"deuteron: {name} arrived while the profile was written; wrote {names}"),
            file=sys.stderr,
        )
        return late.exit_code
    if ended_by:
        say(f"deuteron: {ended_by}; wrote the partial profile to {names}")
    else:
        say(f"deuteron: wrote {names}")
    if live is not None and not any(n.metrics for n in live.root.walk()):
        say(f"deuteron: {_nothing_recorded(args.context)}")
    return code


def _nothing_recorded(context: str) -> str:
    """Why a profile came out empty, and what would fill it."""
    if "torch" in context:
        return "nothing was recorded: the program ran no kernel and no torch op while profiled"
    if "jax" in context:
        return (
            "nothing was recorded: -c jax places GPU kernels (add -b cupti on a machine with an "
            "NVIDIA GPU); JAX on the CPU launches none"
        )
    return (
        "nothing was recorded: no kernel ran and no scope had metrics. For a PyTorch script on "
        "the CPU, add -c torch (CPU time and flops per nn.Module and op)"
    )


def _run_unprofiled(target: Program) -> int:
    try:
        return run_target(target)
    except SystemExit as exc:
        return exit_code(exc)
