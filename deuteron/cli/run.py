"""``deuteron run``: run a script, a module or pytest under a profiling session.

The program sees its own ``sys.argv``, ``__name__ == "__main__"`` and exit code. The profile
is written however the program ends: normally, by an exception, by ``sys.exit``, or by
SIGINT/SIGTERM (then the exit code is 128 + the signal number, as a shell would report).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import Any

from deuteron.cli.arguments import add_command, number_in
from deuteron.cli.program import (
    USAGE,
    add_device_argument,
    add_program_arguments,
    choose_device,
    parse_program,
)
from deuteron.collect import api, output
from deuteron.collect.backends import NAMES as BACKENDS
from deuteron.collect.backends import resolve
from deuteron.collect.context import ContextSpecError, parse_context
from deuteron.collect.flags import flags
from deuteron.collect.flushing import FlushEvery, parse_every
from deuteron.collect.session import SessionError
from deuteron.collect.start_options import disabled_by
from deuteron.formats.files import OutputError
from deuteron.process.program import Program, exit_code, run_to_end
from deuteron.process.program import run as run_program
from deuteron.process.signals import Deferred
from deuteron.process.terminal import printable, say, short_path
from deuteron.repro import record
from deuteron.triton import enable_interpreter_mode

_interval = number_in(
    int, "a whole number of cycles", lambda cycles: cycles > 0, "the interval must be positive, not {}"
)


DESCRIPTION = """\
Run a Python script, a module (-m) or pytest and profile every kernel launch and scope.
Writes NAME.hatchet (and NAME.chrome_trace with --trace).

examples:
  deuteron run train.py --epochs 1        # the script's own options stay its own
  deuteron run -c torch train.py          # nn.Module path > aten op > kernel, backward too
  deuteron run -c python,torch train.py   # the calling Python line, then the modules
  deuteron run -c jax train_jax.py        # jitted function > named_scope path > HLO op
  deuteron run -c python,native app.py    # the Python line, then each launch's C/C++ frames
  deuteron run -m mypkg.train             # a module, as python -m
  deuteron run -b instrumentation k.py    # the kernels' pl.scopes, per CTA and warp (GPU)
  deuteron run -b interpreter k.py        # pl.scopes per program, without a GPU
  deuteron run --sample k.py              # kernel > source line, samples, stall reasons (GPU)
  deuteron run --record-launches -n p k.py   # then: deuteron repro p.hatchet (one launch, alone)"""


def add_parser(sub: Any) -> None:
    """Registers ``deuteron run``: one argparse table, in the order ``-h`` shows it.

    ``-c`` is checked here by :func:`_context`, so a bad context list fails before the program starts;
    ``-n``, ``-b``, ``-c`` and ``-k`` are ``proton.start``'s name, backend, context and hook.
    """
    p = add_command(
        sub,
        "run",
        "run a script, module or pytest and profile it",
        DESCRIPTION,
        usage=f"deuteron run [options] {USAGE}",
    )
    p.add_argument("-n", "--name", default="deuteron", help="output name: NAME.hatchet (default: deuteron)")
    p.add_argument(
        "-b",
        "--backend",
        default="auto",
        choices=BACKENDS,
        help=(
            "auto (CUPTI on a usable NVIDIA GPU, else the interpreter), interpreter, cupti, instrumentation "
            "(the kernels' pl.scopes per CTA and warp, on a GPU), cupti,instrumentation (both, same launches)"
        ),
    )
    p.add_argument(
        "--mode",
        default=None,
        metavar="MODE",
        help=(
            "Proton's instrumentation mode for -b instrumentation, e.g. default, "
            "default:granularity=warp:buffer_size=4096, "
            "default:sampling_strategy=selective:sampling_options=0,2"
        ),
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
    p.add_argument(
        "--sample",
        action="store_true",
        help="sample each SM's instruction (CUPTI PC sampling, GPU): kernel > source line with samples and "
        "stall reasons; Proton's mode=pcsampling",
    )
    p.add_argument(
        "--interval",
        type=_interval,
        default=None,
        metavar="CYCLES",
        help="cycles between samples with --sample, rounded to a power of two from 32 to 2^31 (default 1024)",
    )
    p.add_argument("--trace", action="store_true", help="also write a Chrome trace of scopes and launches")
    p.add_argument(
        "--record-launches",
        action="store_true",
        help="also keep what each Triton launch needs to be rerun alone (deuteron repro): NAME.launches.npz, "
        f"tensor values up to {record.LIMIT_ENV} bytes in all (default 64 MiB), statistics past it",
    )
    p.add_argument(
        "--flush-every",
        type=_flush_every,
        default=None,
        metavar="SECONDS|STEPS",
        help="append the profile to NAME.hatchet_stream every so often while the program runs (30s, 5m, "
        "100steps: a 'step' scope or torch's optimizer.step), so a killed run keeps what it recorded; "
        "NAME.hatchet is written from it at the end",
    )
    add_device_argument(p)
    add_program_arguments(p)
    p.set_defaults(handler=run_command)


def _sampling_mode(args: argparse.Namespace) -> None:
    """``--sample [--interval N]`` as Proton's ``mode="pcsampling:interval=N"``."""
    if args.interval is not None and not args.sample:
        raise SessionError("--interval sets the PC sampling interval: add --sample")
    if not args.sample:
        return
    if args.mode:
        raise SessionError("--sample is a mode of its own (pcsampling); drop --mode")
    args.mode = "pcsampling" + (f":interval={args.interval}" if args.interval is not None else "")


def _flush_every(value: str) -> FlushEvery:
    try:
        return parse_every(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--flush-every ")) from None


def _context(value: str) -> str:
    try:
        parse_context(value)
    except ContextSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def run_command(args: argparse.Namespace) -> int:
    """Profile the program and write its profile however it ends; returns the program's exit code.

    Kept as one function because its order is the contract: everything that can fail (the backend,
    the output paths) is checked before the program runs, the interpreter is switched on before the
    program imports triton, and once the program has ended SIGINT and SIGTERM are only noted until the
    files are on disk (while it runs they stop it as usual), so a Ctrl-C never leaves half a profile.
    """
    program = parse_program(args)
    choose_device(args)
    which = disabled_by()
    if which is not None:
        print(f"deuteron: {which} is set; running without profiling", file=sys.stderr)
        return _run_unprofiled(program)
    _sampling_mode(args)
    api.check_mode(args.mode, args.backend)
    backend = resolve(args.backend, args.mode)  # fails early, with the reason, before the program runs
    if backend.name == "interpreter":
        enable_interpreter_mode()  # before the program imports triton
    command = (
        ["deuteron", "run", *sys.argv[2:]] if sys.argv[1:2] == ["run"] else [program.name, *program.args]
    )
    formats = ("hatchet", "chrome_trace") if args.trace else ("hatchet",)
    # The output files are checked (and their paths fixed) here, before the program runs.
    flags.command_line = True
    hatchet = output.paths(Path(os.path.abspath(args.name)), ["hatchet"])[0]
    recording = record.path_beside(hatchet) if args.record_launches else None  # checked before the program
    sid = api.start_session(
        args.name,
        backend=backend.name,
        context=args.context,
        hook=args.hook,
        command=command,
        outputs=formats,
        for_command=True,
        mode=args.mode,
        flush_every=args.flush_every,
    )
    failure = ""
    files: list[Path] = []
    kept: list[Path] = []
    owner = os.getpid()
    started_in = os.getcwd()
    live = api.current_profile(sid) if sid is not None else None
    recorder = _start_recording(sid) if recording is not None else None
    # From here until the profile is on disk, SIGINT/SIGTERM outside the program are noted, not obeyed.
    with Deferred(redeliver=False, note="finishing the profile first") as late:
        try:
            with _StderrTail() as tail:
                code, ended_by = run_to_end(program)
        finally:  # a profile is never lost: also written when the module is missing
            if os.getpid() == owner:
                recorded: list[Path] = []
                try:
                    recorded = record.finish(recorder, recording, live.metadata if live is not None else {})
                except OutputError as exc:
                    failure = str(exc)
                try:
                    with output.keeping_earlier() as kept:  # an empty profile never replaces one
                        files = api.finalize(sid, ",".join(formats))
                except OutputError as exc:
                    failure = failure or str(exc)
                files += [Path(short_path(p)) for p in recorded]
    if os.getpid() != owner:
        return code  # a child the program forked ends as it chose: the profile is the parent's
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
    empty = live is not None and output.holds_nothing(live)
    if not empty:
        say(
            f"deuteron: {ended_by}; wrote the partial profile to {names}"
            if ended_by
            else f"deuteron: wrote {names}"
        )
        return code
    why = _why_empty(code, ended_by, args.context, args.backend)
    if kept:
        shown = ", ".join(_named(p, args.name, started_in) for p in kept)
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(kept[0].stat().st_mtime))
        say(f"deuteron: nothing was recorded ({why}); kept the earlier {shown} (written {when})")
    else:
        say(f"deuteron: nothing was recorded ({why}); wrote the empty profile to {names}")
    hint = _hint(program, code, ended_by, args.context, tail.text())
    if args.backend == "instrumentation":
        hint = ""  # why-empty already says what to do; -c torch would not fill it
    if hint:
        say(f"deuteron: {hint}")
    return code


def _start_recording(sid: int | None) -> record.Recorder:
    """Record launches from now on: after the session started, so its own patches of a launch
    (the interpreter's timing) run inside ours and never time the recorder's copies."""
    try:
        return record.start()
    except BaseException:
        api.finalize(sid, None)
        raise


def _why_empty(code: int, ended_by: str, context: str, backend: str = "auto") -> str:
    """Why a profile came out empty: how the program ended when it failed, else what ran."""
    if ended_by:
        return f"{ended_by} before any kernel ran"
    if code != 0:
        return f"the program exited with code {code} before any kernel ran"
    if backend == "instrumentation":  # it records scopes only: kernels without one leave nothing
        return (
            "no kernel that ran has a pl.scope, and -b instrumentation records only scopes; "
            "add pl.scope to a kernel, or -b cupti,instrumentation for every kernel's time too"
        )
    if "torch" in context:
        return "the program ran no kernel and no torch op while profiled"
    return "no kernel ran and no scope had metrics"


def _hint(program: Program, code: int, ended_by: str, context: str, stderr: str) -> str:
    """What would fill an empty profile, only where it fits: deuteron's own options given after
    the script (the script's argparse refused them); ``-c torch`` for a program that imported
    torch and ran to its end without a kernel. Nothing after any other failure: the program's own
    error is the news."""
    if code != 0 or ended_by:
        moved, rest = _misplaced(program.args, stderr)
        if not moved:
            return ""
        words = sys.argv[2:] if sys.argv[1:2] == ["run"] else []
        head = (
            words[: len(words) - len(program.args)]
            if words[len(words) - len(program.args) :] == list(program.args)
            else [program.name]
        )
        fixed = " ".join(shlex.quote(w) for w in ["deuteron", "run", *moved, *head, *rest])
        return (
            f"{moved[0]} came after the script name, so the script got it; "
            f"deuteron's options go before the script name: {fixed}"
        )
    if "jax" in context:
        return (
            "-c jax places GPU kernels (add -b cupti on a machine with an NVIDIA GPU); "
            "JAX on the CPU launches none"
        )
    if "torch" not in context and "torch" in sys.modules:
        return "for a PyTorch script on the CPU, add -c torch (CPU time and flops per nn.Module and op)"
    return ""


# deuteron run's own options a script's argparse may refuse, and whether each takes a value
# (-m and -h are left out: after the script they are far more likely the script's own).
OWN_OPTIONS = {
    "-n": True, "--name": True, "-b": True, "--backend": True, "-c": True, "--context": True,
    "-k": True, "--hook": True, "--device": True, "--trace": False, "--flush-every": True,
    "--record-launches": False,
}  # fmt: skip
_USAGE_ERROR = re.compile(r"^\S.*: error: (.*)$", re.MULTILINE)


def _misplaced(args: tuple[str, ...], stderr: str) -> tuple[list[str], list[str]]:
    """(the words of deuteron's options that the script's argparse named in a usage error, the
    script's other words); ([], ...) when stderr shows no such error."""
    named = set()
    for error in _USAGE_ERROR.findall(stderr):
        for word in re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", error):
            if word in OWN_OPTIONS:
                named.add(word)
    moved: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        option = args[i].split("=", 1)[0]
        if option in named:
            takes_value = OWN_OPTIONS[option] and "=" not in args[i] and i + 1 < len(args)
            moved.extend(args[i : i + 2] if takes_value else args[i : i + 1])
            i += 2 if takes_value else 1
        else:
            rest.append(args[i])
            i += 1
    return moved, rest


def _named(path: Path, name: str, started_in: str) -> str:
    """A file as the user named it: relative while in the folder the run started in."""
    if not os.path.isabs(name) and os.getcwd() == started_in:
        return os.path.relpath(path, started_in)
    return str(path)


class _StderrTail:
    """Keeps the last few thousand characters the program writes to ``sys.stderr`` (passing all
    of it on), so an empty profile's message can tell an argparse usage error it caused."""

    KEEP = 8192

    def __init__(self) -> None:
        self.inner: Any = None
        self.proxy: Any = None

    def __enter__(self) -> _StderrTail:
        self.inner = sys.stderr
        self.proxy = _Tee(self.inner, self.KEEP)
        sys.stderr = self.proxy
        return self

    def __exit__(self, *exc: object) -> None:
        if sys.stderr is self.proxy:  # a program that set its own stderr keeps it
            sys.stderr = self.inner

    def text(self) -> str:
        return "".join(self.proxy.kept) if self.proxy is not None else ""


class _Tee:
    """A stand-in for a text stream that remembers the tail of what is written; everything else is
    the stream's own."""

    def __init__(self, inner: Any, keep: int) -> None:
        self._inner = inner
        self._keep = keep
        self.kept: list[str] = []
        self._size = 0

    def write(self, text: str) -> int:
        n = self._inner.write(text)
        if isinstance(text, str):
            self.kept.append(text)
            self._size += len(text)
            while self._size > self._keep and len(self.kept) > 1:
                self._size -= len(self.kept.pop(0))
        return int(n) if n is not None else len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _run_unprofiled(program: Program) -> int:
    try:
        return run_program(program)
    except SystemExit as exc:
        return exit_code(exc)
