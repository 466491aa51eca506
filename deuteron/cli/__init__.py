"""``deuteron`` command line: one module per command; every user error is one line and exit 2."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from deuteron.cli import bisect, check, explain, learn, repro, run, serve, view
from deuteron.cli.program import split_program
from deuteron.model.errors import DeuteronError
from deuteron.process.terminal import printable
from deuteron.version import __version__


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr (and exit 2), not the whole usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"deuteron: error: {message} (see '{self.prog} -h')\n")


TARGET_COMMANDS = ("run", "check", "explain")  # commands whose words end with a program to run
INTERMIXED_COMMANDS = ("serve",)


class _Exact(_Parser):
    """No prefix matching anywhere: ``--n`` is never ``--name``."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        allow_abbrev=False,
        prog="deuteron",
        description="See inside GPU programs written with Triton and PyTorch.",
        epilog="Run 'deuteron COMMAND -h' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"deuteron {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Exact)
    run.add_parser(sub)
    check.add_parser(sub)
    explain.add_parser(sub)
    repro.add_parser(sub)
    view.add_parser(sub)
    view.add_diff_parser(sub)
    serve.add_parser(sub)
    learn.add_parser(sub)
    bisect.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None, server: Callable[..., Any] | None = None) -> int:
    """Run one command. ``server`` makes ``deuteron serve``'s HTTP server (given by the entry
    point, :mod:`deuteron.__main__`: the web server is a leaf this package does not import)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not args_list:
        parser.print_help(sys.stderr)
        return 2
    command = args_list[0]
    if command in TARGET_COMMANDS:
        sub = _subparser(parser, command)
        head, module, words = split_program(sub, args_list[1:])
        args = parser.parse_args([command, *head])
        args.module, args.target = module, words
    elif command in INTERMIXED_COMMANDS:  # files before and after options: `a.hatchet --base b c.json`
        args = _subparser(parser, command).parse_intermixed_args(args_list[1:])
        args.command = command
    else:
        args = parser.parse_args(args_list)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    args.server = server
    try:
        return int(args.handler(args))
    except DeuteronError as exc:
        print(f"deuteron: error: {printable(exc)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `deuteron view ... | head`
        return 0
    except OSError as exc:  # ours (the program's own errors end inside the program's run): one line
        print(f"deuteron: error: {printable(exc)}", file=sys.stderr)
        return 2


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[command]  # type: ignore[no-any-return]
    raise KeyError(command)
