"""The command-line side of a program: ``script.py [args] | -m module [args] | pytest [args]``."""

from __future__ import annotations

import argparse

from deuteron.process.program import Program
from deuteron.triton.runtime import emulated_driver

USAGE = "(script.py [args] | -m module [args] | pytest [args])"


def add_program_arguments(p: argparse.ArgumentParser) -> None:
    """Shown in ``-h``; the words themselves are split off by :func:`split_program` before argparse."""
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a module as with python -m")
    p.add_argument("target", nargs=argparse.REMAINDER, help="script.py and its arguments, or pytest and its")


def parse_program(args: argparse.Namespace) -> Program:
    return Program.parse(args.target, module=args.module)


def split_program(
    parser: argparse.ArgumentParser, words: list[str]
) -> tuple[list[str], str | None, list[str]]:
    """A command's words as (Deuteron's own options, the ``-m`` module or None, the program's words).

    Everything from the script, ``pytest`` or ``-m MODULE`` on belongs to the program and is never
    parsed here: argparse alone would read ``-m pkg.train --epochs 1``'s ``--epochs`` as ours (an
    error) and ``--n 100`` as an abbreviation of one of ours. Only options spelled exactly as ours
    (``-n NAME``, ``--name=NAME``, ``-nNAME``) are taken before the program; anything else that looks
    like an option is left to argparse to refuse. An option whose value is optional (``nargs="?"``,
    ``--pdb[=all]``) takes it only after ``=``: the word after it is the program's."""
    actions = parser._option_string_actions  # argparse's own table of our option strings
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            return words[:i], None, words[i + 1 :]
        if word == "-m":
            if i + 1 == len(words):
                return words, None, []  # argparse says "-m: expected one argument"
            return words[:i], words[i + 1], words[i + 2 :]
        if word.startswith("-m") and not word.startswith("--") and "-m" in actions:
            return words[:i], word[2:], words[i + 1 :]  # -mpkg.train, as python accepts it
        if not word.startswith("-") or word == "-":
            return words[:i], None, words[i:]
        name = word.split("=", 1)[0]
        action = actions.get(name)
        if action is None and not word.startswith("--"):
            action = actions.get(word[:2])  # -nNAME
            if action is not None and action.nargs != 0:
                i += 1
                continue
        if action is not None and action.nargs not in (0, "?") and "=" not in word:
            i += 1  # its value
        i += 1
    return words, None, []


def add_device_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--device",
        default=emulated_driver.DEFAULT,
        metavar="NAME",
        help="with no GPU here, the GPU Triton's driver answers for (target, SM count, shared memory): "
        f"{', '.join(emulated_driver.DEVICES)} (default: {emulated_driver.DEFAULT})",
    )


def choose_device(args: argparse.Namespace) -> None:
    """Fails with one line, before the program runs, for an unknown name."""
    emulated_driver.choose(args.device)
