"""Shared test setup. Kernels run in Triton's interpreter: CI has no GPU.

TRITON_INTERPRET must be set before any test module imports triton, which is why it is set
here, at conftest import time. GPU tests (``*_gpu.py`` files beside their CPU twins, marked
``gpu`` here, run on the device machine) opt out with DEUTERON_TEST_GPU=1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

if os.environ.get("DEUTERON_TEST_GPU") != "1":
    os.environ["TRITON_INTERPRET"] = "1"

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
FIXTURES_DIR = REPO / "tests" / "fixtures"  # recorded device buffers, Proton's files, hand-made inputs
PROTON_FIXTURES = REPO / "tests" / "fixtures" / "proton"  # written by Proton itself; see its README


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test in a ``*_gpu.py`` file is a GPU test: marked ``gpu``, and skipped, with the
    reason, where the CUPTI backend cannot run."""
    from deuteron.collect.backends.cupti import unavailable_reason

    why = unavailable_reason()
    for item in items:
        if item.path.name.endswith("_gpu.py") or item.get_closest_marker("gpu"):
            item.add_marker(pytest.mark.gpu)
            if why is not None:
                item.add_marker(pytest.mark.skip(reason=f"needs the CUPTI backend: {why}"))


@pytest.fixture
def proton_fixtures() -> Path:
    if not PROTON_FIXTURES.is_dir():
        pytest.fail(
            f"Proton fixtures missing at {PROTON_FIXTURES}"
        )
    return PROTON_FIXTURES


@pytest.fixture(autouse=True)
def _no_leftover_sessions() -> Iterator[None]:
    """Each test starts and ends with no open session, so one test's session cannot leak into another's."""
    import deuteron.collect.api as api

    yield
    leftover = list(api._sessions)
    if leftover:
        api.finalize(output_format=None)
        pytest.fail(f"test left sessions open: {leftover}")


def run_cli(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m deuteron ARGS`` in a fresh process, as a user would run it (``stdin``: what is
    typed at it, say pdb's commands; None leaves this process's stdin to it)."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "DEUTERON_DISABLE")}
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "deuteron", *args],
        cwd=cwd,
        env=full_env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
