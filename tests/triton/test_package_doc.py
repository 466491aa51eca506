"""The triton package's docstring is its map: every module it names is where it says."""

from __future__ import annotations

import re
from pathlib import Path

import deuteron.triton

PACKAGE = Path(deuteron.triton.__file__).parent


def test_every_module_the_docstring_names_exists() -> None:
    doc = deuteron.triton.__doc__ or ""
    named = set(re.findall(r":mod:`\.([\w.]+)`", doc))
    named |= set(re.findall(r"``((?:interpreter|runtime|compiler)\.\w+)``", doc))
    assert {"language", "instrument", "interpreter.checking", "interpreter.sanitizer_protocol"} <= named
    missing = [
        name
        for name in sorted(named)
        if not (PACKAGE / (name.replace(".", "/") + ".py")).exists()
        and not (PACKAGE / name.replace(".", "/") / "__init__.py").exists()
    ]
    assert not missing, missing
