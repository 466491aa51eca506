"""Shared test setup: hooks and fixtures only (what tests import lives in tests/helpers/).
Kernels run in Triton's interpreter: CI has no GPU.

TRITON_INTERPRET must be set before any test module imports triton, which is why it is set
here, at conftest import time. GPU tests (``*_gpu.py`` files beside their CPU twins, marked
``gpu`` here, run on the device machine) opt out with DEUTERON_TEST_GPU=1.

A run that leaves a file in the repository (every test writes under its own temporary folder)
says so at its end, and fails where DEUTERON_REQUIRE_CLEAN_TREE=1 (CI sets it).

Every profile and trace a test writes under its ``tmp_path`` is checked after the test against
the rules of ``deuteron view --check`` (issue 39, ``tests/helpers/written_files.py``); a test that
writes a broken one on purpose is marked ``broken_profile``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.clean_tree import uncommitted_entries
from tests.helpers.paths import PROTON_FIXTURES
from tests.helpers.written_files import broken_written_files, checking

if os.environ.get("DEUTERON_TEST_GPU") != "1":
    os.environ["TRITON_INTERPRET"] = "1"

# torch.compile's code cache (Inductor keeps it even with its FX and autograd caches off, which
# -c torch turns off) goes into a folder of this run, removed at its end, not into
# /tmp/torchinductor_<user>, where it outlived every run (2.2 GB seen). xdist's workers inherit
# the folder from the process that started them, which removes it.
INDUCTOR_CACHE: str | None = None
if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
    INDUCTOR_CACHE = tempfile.mkdtemp(prefix="deuteron-tests-inductor-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = INDUCTOR_CACHE

TREE_BEFORE = pytest.StashKey[set[str]]()
TREE_LEFT = pytest.StashKey[list[str]]()


def started_the_run(config: pytest.Config) -> bool:
    """True in the process the user started (a plain run, or xdist's controller), False in an
    xdist worker: the repository is checked once, by the process that started the workers."""
    return not hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    if started_the_run(session.config):
        before = uncommitted_entries()
        if before is not None:
            session.config.stash[TREE_BEFORE] = before


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if INDUCTOR_CACHE is not None:
        shutil.rmtree(INDUCTOR_CACHE, ignore_errors=True)
    before = session.config.stash.get(TREE_BEFORE, None)
    after = uncommitted_entries() if before is not None else None
    if before is None or after is None or not (left := sorted(after - before)):
        return
    session.config.stash[TREE_LEFT] = left
    if os.environ.get("DEUTERON_REQUIRE_CLEAN_TREE") == "1" and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    left = config.stash.get(TREE_LEFT, [])
    if left:
        terminalreporter.section("new in the repository since the run began", red=True)
        terminalreporter.write_line(
            "a test's leftovers (write under tmp_path instead), or files made meanwhile by someone else:"
        )
        for line in left:
            terminalreporter.write_line(f"  {line}")


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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """After a test that passed and used ``tmp_path``: the profiles and traces it wrote there keep
    every rule (a failure of the test itself, naming each break), unless it is marked
    ``broken_profile``."""
    result = yield
    folder = getattr(item, "funcargs", {}).get("tmp_path")
    if isinstance(folder, Path) and checking() and not item.get_closest_marker("broken_profile"):
        broken = broken_written_files(folder)
        if broken:
            pytest.fail(
                "a file this test wrote breaks a rule of deuteron view --check (mark the test "
                "broken_profile if on purpose):\n" + "\n".join(broken),
                pytrace=False,
            )
    return result


@pytest.fixture
def proton_fixtures() -> Path:
    if not PROTON_FIXTURES.is_dir():
        pytest.fail(f"Proton fixtures missing at {PROTON_FIXTURES}")
    return PROTON_FIXTURES


@pytest.fixture(autouse=True)
def _no_leftover_sessions() -> Iterator[None]:
    """Each test starts and ends with no open session, so one test's session cannot leak into another's."""
    from deuteron.collect import lifecycle

    yield
    leftover = list(lifecycle.sessions)
    if leftover:
        lifecycle.finalize(output_format=None)
        pytest.fail(f"test left sessions open: {leftover}")
