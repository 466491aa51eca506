"""What every command's argument table is built from: the command's parser, and option values
that must be a number in a range."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, TypeVar

Number = TypeVar("Number", int, float)


def add_command(sub: Any, name: str, help: str, description: str, **more: Any) -> argparse.ArgumentParser:
    """A command's parser; its description and epilog are shown as written, their examples one a line."""
    return sub.add_parser(
        name, help=help, description=description, formatter_class=argparse.RawDescriptionHelpFormatter, **more
    )


def number_in(
    convert: Callable[[str], Number], what: str, allowed: Callable[[Number], bool], refusal: str
) -> Callable[[str], Number]:
    """An option's ``type=``: the text as a number (``not WHAT: 'TEXT'`` when it is none), refused
    with ``refusal`` (``{}`` is the number) when ``allowed`` says no."""

    def parse(text: str) -> Number:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None
        if not allowed(value):
            raise argparse.ArgumentTypeError(refusal.format(value))
        return value

    return parse
