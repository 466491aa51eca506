"""The command-line side of a target: ``script.py [args] | -m module [args] | pytest [args]``."""

from __future__ import annotations

import argparse

from ..target import Target

USAGE = "(script.py [args] | -m module [args] | pytest [args])"


def add_target_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a module as with python -m")
    p.add_argument("target", nargs=argparse.REMAINDER, help="script.py and its arguments, or pytest and its")


def parse_target(args: argparse.Namespace) -> Target:
    return Target.parse(args.target, module=args.module)
