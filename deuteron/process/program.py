"""What ``deuteron run``, ``check`` and ``explain`` run: a script, a module (-m) or pytest, as Python would.

The program sees its own ``sys.argv`` and ``__name__ == "__main__"``; its exit code comes back
as an int however it ended (return, ``sys.exit``); SIGTERM arrives as :class:`Signalled` so the
caller can still write what it collected. Used by the command line and by the library entry
points (``deuteron.check.run``, ``deuteron.explain.run``) alike.
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import signal
import sys
import threading
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType

from deuteron.model.errors import DeuteronError

KINDS = ("script", "module", "pytest")


class TargetError(DeuteronError, ValueError):
    """Nothing runnable was named: a missing script, a folder, an unknown module. (A public name
    from before "target" came to mean a GPU compile target only; kept for the library's users.)"""


@dataclass(frozen=True)
class Program:
    """A program to run: ``kind`` is script, module or pytest; ``args`` its own argv after its name."""

    kind: str
    name: str
    args: tuple[str, ...] = ()

    @classmethod
    def script(cls, path: str, *args: str) -> Program:
        return cls.parse([path, *args])

    @classmethod
    def module(cls, name: str, *args: str) -> Program:
        return cls("module", name, tuple(args))

    @classmethod
    def pytest(cls, *args: str) -> Program:
        return cls("pytest", "pytest", tuple(args))

    @classmethod
    def parse(cls, argv: Sequence[str], module: str | None = None) -> Program:
        """From a command line's words: ``script.py [args]``, ``pytest [args]``, or ``-m module [args]``
        (``module`` given, ``argv`` its arguments). A missing script is a one-line error."""
        if module:
            _check_top_level(module)
            return cls("module", module, tuple(argv))
        if not argv:
            raise TargetError("nothing to run: give a script, -m MODULE, or pytest [args]")
        first, rest = argv[0], tuple(argv[1:])
        if first == "pytest":
            return cls("pytest", first, rest)
        if not os.path.exists(first):
            raise TargetError(f"script {first!r} does not exist")
        if os.path.isdir(first):
            raise TargetError(f"{first!r} is a directory; give a .py script (or -m package)")
        return cls("script", first, rest)


def _check_top_level(module: str) -> None:
    """A module whose top-level package cannot be found is one line before anything runs (found
    without importing anything: a package's ``__init__`` may import triton, which must wait for
    ``TRITON_INTERPRET``). Deeper names are checked when the program runs."""
    top = module.split(".", 1)[0]
    if not top or not all(part.isidentifier() for part in module.split(".")):
        raise TargetError(f"{module!r} is not a module name")
    path = list(sys.path)
    sys.path.insert(0, os.getcwd())  # as python -m puts it first
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        found = None
    finally:
        sys.path[:] = path
    if found is None:
        raise TargetError(f"no module named {top!r}")


class Signalled(BaseException):
    """Raised in the main thread when SIGTERM arrives, so the caller can still write its output."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def run(program: Program) -> int:
    """Run the program in this process; its exit code (``SystemExit`` and signals are the caller's).

    The program gets its own ``sys.argv`` and its folder on ``sys.path``; the caller's are put back
    afterwards, so a library call leaves the calling program as it was."""
    argv, path = sys.argv, list(sys.path)
    try:
        return _run(program)
    finally:
        sys.argv = argv
        sys.path[:] = path


def _run(program: Program) -> int:
    rest = list(program.args)
    if program.kind == "pytest":
        import pytest

        return int(pytest.main(rest))
    if program.kind == "module":
        sys.argv = [program.name, *rest]
        sys.path.insert(0, os.getcwd())
        try:
            found = importlib.util.find_spec(program.name)  # imports its parent packages, as python -m does
        except ModuleNotFoundError:
            found = None
        if found is None:
            raise TargetError(f"no module named {program.name!r}")
        runpy.run_module(program.name, run_name="__main__", alter_sys=True)
        return 0
    path = os.path.abspath(program.name)
    sys.argv = [program.name, *rest]
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
    ours = (str(Path(__file__).resolve().parents[1]), os.path.abspath(runpy.__file__))  # deuteron/
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(ours):
        tb = tb.tb_next
    return tb


def on_sigterm(signum: int, _frame: FrameType | None) -> None:
    raise Signalled(signum)


def _install() -> tuple[object, object] | None:
    """While the program runs: SIGTERM raises Signalled, SIGINT raises KeyboardInterrupt (as in any
    Python program). Only the main thread can set handlers; elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return (
        signal.signal(signal.SIGTERM, on_sigterm),
        signal.signal(signal.SIGINT, signal.default_int_handler),
    )


def _restore(previous: tuple[object, object] | None) -> None:
    if previous is not None:
        signal.signal(signal.SIGTERM, previous[0])  # type: ignore[arg-type]
        signal.signal(signal.SIGINT, previous[1])  # type: ignore[arg-type]


def _reset_in_child() -> None:
    """A forked child (a multiprocessing worker, say) does not inherit our SIGTERM handler: the
    parent's program is not the child's, and a pool's terminate() must end it quietly."""
    if signal.getsignal(signal.SIGTERM) is on_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_in_child)


def run_to_end(program: Program, stops: tuple[tuple[type[BaseException], str], ...] = ()) -> tuple[int, str]:
    """Run the program however it ends, so the caller can still write what it collected.

    Returns (exit code, why it ended early or ""). ``stops`` are the caller's own control-flow
    exceptions (found directly or as a cause) and what to say about them. A user's exception
    prints as Python would print it; our one-line ``TargetError`` (no such module) goes up.
    """
    previous = _install()
    try:
        return run(program), ""
    except SystemExit as exc:
        return exit_code(exc), ""
    except KeyboardInterrupt:
        return 128 + signal.SIGINT, "interrupted (SIGINT)"
    except Signalled as sig:
        return 128 + sig.signum, f"terminated ({signal.Signals(sig.signum).name})"
    except TargetError:
        raise
    except BaseException as exc:
        for stop, why in stops:
            if isinstance(exc, stop) or isinstance(exc.__cause__, stop):
                return 1, why
        traceback.print_exception(type(exc), exc, user_traceback(exc.__traceback__))
        return 1, f"the program raised {type(exc).__name__}"
    finally:
        _restore(previous)
