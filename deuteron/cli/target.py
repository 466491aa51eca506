"""What ``deuteron run`` and ``deuteron check`` run: a script, a module (-m) or pytest, as Python would.

The target sees its own ``sys.argv`` and ``__name__ == "__main__"``; its exit code comes back
as an int however it ended (return, ``sys.exit``); SIGTERM arrives as :class:`Signalled` so the
caller can still write what it collected.
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

from ..session import SessionError

USAGE = "(script.py [args] | -m module [args] | pytest [args])"


class Signalled(BaseException):
    """Raised in the main thread when SIGTERM arrives, so the caller can still write its output."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def add_target_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a module as with python -m")
    p.add_argument("target", nargs=argparse.REMAINDER, help="script.py and its arguments, or pytest and its")


def unwritable(path: str | None, option: str) -> str | None:
    """Why an output file cannot be written, found before the target runs (not after); None if it can."""
    if path is None:
        return None
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return f"{option} {path}: folder {folder} does not exist"
    if os.path.isdir(path):
        return f"{option} {path} is a folder; give a file name"
    return None


def parse_target(args: argparse.Namespace) -> tuple[str, str, list[str]]:
    """(kind, target, rest): kind is script, module or pytest; a missing script is a one-line error."""
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


def run_target(kind: str, target: str, rest: list[str]) -> int:
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


def exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def user_traceback(tb: TracebackType | None) -> TracebackType | None:
    """Skip our own and runpy's frames so the traceback starts in the user's code."""
    ours = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.abspath(runpy.__file__))
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(ours):
        tb = tb.tb_next
    return tb


def on_sigterm(signum: int, _frame: FrameType | None) -> None:
    raise Signalled(signum)


def install_sigterm() -> object:
    return signal.signal(signal.SIGTERM, on_sigterm)


def run_to_end(
    kind: str, target: str, rest: list[str], stops: tuple[tuple[type[BaseException], str], ...] = ()
) -> tuple[int, str]:
    """Run the target however it ends, so the caller can still write what it collected.

    Returns (exit code, why it ended early or ""). ``stops`` are the caller's own control-flow
    exceptions (found directly or as a cause) and what to say about them. A user's exception
    prints as Python would print it; our one-line ``SessionError`` (no such module) goes up.
    """
    previous = install_sigterm()
    try:
        return run_target(kind, target, rest), ""
    except SystemExit as exc:
        return exit_code(exc), ""
    except KeyboardInterrupt:
        return 128 + signal.SIGINT, "interrupted (SIGINT)"
    except Signalled as sig:
        return 128 + sig.signum, f"terminated ({signal.Signals(sig.signum).name})"
    except SessionError:
        raise
    except BaseException as exc:
        for stop, why in stops:
            if isinstance(exc, stop) or isinstance(exc.__cause__, stop):
                return 1, why
        traceback.print_exception(type(exc), exc, user_traceback(exc.__traceback__))
        return 1, f"the program raised {type(exc).__name__}"
    finally:
        signal.signal(signal.SIGTERM, previous)  # type: ignore[arg-type]
