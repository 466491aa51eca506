"""``deuteron run``: run a script, a module or pytest under a profiling session.

The target sees its own ``sys.argv``, ``__name__ == "__main__"`` and exit code. The profile
is written however the target ends: normally, by an exception, by ``sys.exit``, or by
SIGINT/SIGTERM (then the exit code is 128 + the signal number, as a shell would report).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import runpy
import signal
import sys
import traceback
from types import FrameType, TracebackType
from typing import Any

from .. import api
from ..backends import NAMES as BACKENDS
from ..backends import resolve
from ..backends.interpreter import enable_interpreter_mode
from ..session import CONTEXTS, SessionError, disabled


class _Signalled(BaseException):
    """Raised in the main thread when SIGTERM arrives, so the profile can still be written."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="run a script, module or pytest and profile it",
        description=(
            "Run a Python script, a module (-m) or pytest and profile every kernel launch and scope.\n"
            "Writes NAME.hatchet (and NAME.chrome_trace with --trace)."
        ),
        usage="deuteron run [options] (script.py [args] | -m module [args] | pytest [args])",
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
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a module as with python -m")
    p.add_argument("target", nargs=argparse.REMAINDER, help="script.py and its arguments, or pytest and its")
    p.set_defaults(handler=run_command)


def _check_target(args: argparse.Namespace) -> tuple[str, str, list[str]]:
    if args.module:
        return "module", args.module, list(args.target)
    if not args.target:
        raise SessionError("nothing to run: give a script, -m MODULE, or pytest [args]")
    first, rest = args.target[0], list(args.target[1:])
    if first == "pytest":
        return "pytest", first, rest
    if not os.path.exists(first):
        raise SessionError(f"script {first!r} does not exist")
    if os.path.isdir(first):
        raise SessionError(f"{first!r} is a directory; give a .py script (or -m package)")
    return "script", first, rest


def _run_target(kind: str, target: str, rest: list[str]) -> int:
    if kind == "pytest":
        import pytest

        return int(pytest.main(rest))
    if kind == "module":
        sys.argv = [target, *rest]
        sys.path.insert(0, os.getcwd())
        if importlib.util.find_spec(target) is None:
            raise SessionError(f"no module named {target!r}")
        runpy.run_module(target, run_name="__main__", alter_sys=True)
        return 0
    path = os.path.abspath(target)
    sys.argv = [target, *rest]
    sys.path.insert(0, os.path.dirname(path))
    runpy.run_path(path, run_name="__main__")
    return 0


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _user_traceback(tb: TracebackType | None) -> TracebackType | None:
    """Skip our own and runpy's frames so the traceback starts in the user's code."""
    ours = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.abspath(runpy.__file__))
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(ours):
        tb = tb.tb_next
    return tb


def run_command(args: argparse.Namespace) -> int:
    kind, target, rest = _check_target(args)
    if disabled():
        print("deuteron: DEUTERON_DISABLE is set; running without profiling", file=sys.stderr)
        return _run_unprofiled(kind, target, rest)
    backend = resolve(args.backend)  # fails early, with the reason, before the target runs
    if backend.name == "interpreter":
        enable_interpreter_mode()  # before the target imports triton
    command = ["deuteron", "run", *sys.argv[2:]] if sys.argv[1:2] == ["run"] else [target, *rest]
    sid = api.start(args.name, backend=backend.name, context=args.context, hook=args.hook, command=command)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    code = 0
    ended_by = ""
    try:
        code = _run_target(kind, target, rest)
    except SystemExit as exc:
        code = _exit_code(exc)
    except KeyboardInterrupt:
        code, ended_by = 128 + signal.SIGINT, "interrupted (SIGINT)"
    except _Signalled as sig:
        code, ended_by = 128 + sig.signum, f"terminated ({signal.Signals(sig.signum).name})"
    except SessionError:
        raise
    except BaseException as exc:  # the user's own error: show it as Python would, then write the profile
        traceback.print_exception(type(exc), exc, _user_traceback(exc.__traceback__))
        code, ended_by = 1, f"the program raised {type(exc).__name__}"
    finally:
        signal.signal(signal.SIGTERM, previous)
        formats = "hatchet,chrome_trace" if args.trace else "hatchet"
        files = api.finalize(sid, formats)
    names = ", ".join(str(f) for f in files)
    if ended_by:
        print(f"deuteron: {ended_by}; wrote the partial profile to {names}", file=sys.stderr)
    else:
        print(f"deuteron: wrote {names}", file=sys.stderr)
    return code


def _run_unprofiled(kind: str, target: str, rest: list[str]) -> int:
    try:
        return _run_target(kind, target, rest)
    except SystemExit as exc:
        return _exit_code(exc)


def _on_sigterm(signum: int, _frame: FrameType | None) -> None:
    raise _Signalled(signum)
