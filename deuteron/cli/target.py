"""The command-line side of a target: ``script.py [args] | -m module [args] | pytest [args]``."""

from __future__ import annotations

import argparse

from ..target import Target
from ..triton import emulated_driver

USAGE = "(script.py [args] | -m module [args] | pytest [args])"


def add_target_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a module as with python -m")
    p.add_argument("target", nargs=argparse.REMAINDER, help="script.py and its arguments, or pytest and its")


def parse_target(args: argparse.Namespace) -> Target:
    return Target.parse(args.target, module=args.module)


def add_device_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--device",
        default=emulated_driver.DEFAULT,
        metavar="NAME",
        help="with no GPU here, the GPU Triton's driver answers for (target, SM count, shared memory): "
        f"{', '.join(emulated_driver.DEVICES)} (default: {emulated_driver.DEFAULT})",
    )


def choose_device(args: argparse.Namespace) -> None:
    """Fails with one line, before the target runs, for an unknown name."""
    emulated_driver.choose(args.device)
