"""Session inputs made once per test run, however many pytest-xdist workers ask for them.

Why: a session fixture runs once per worker, and the web tests' inputs cost several fresh
deuteron processes (an explain among them); made by every worker they cost that many times the
CPU on a two-core CI machine. The first worker to ask makes them in the run's shared temporary
folder under a file lock; the others wait on the lock, then read what it made.
"""

from __future__ import annotations

import fcntl
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

Made = TypeVar("Made")


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], Made]) -> Made:
    """``make(folder)``'s result, ``folder`` a fresh folder called ``name``; under xdist, the one
    result of the first worker that asked (every result must pickle)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:  # not an xdist worker: nothing to share
        return make(tmp_path_factory.mktemp(name))
    shared = tmp_path_factory.getbasetemp().parent  # the run's folder, above each worker's own
    folder = shared / name
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        made = shared / f"{name}.pickle"
        if made.exists():
            result: Made = pickle.loads(made.read_bytes())
            return result
        folder.mkdir(exist_ok=True)
        result = make(folder)
        made.write_bytes(pickle.dumps(result))
        return result
