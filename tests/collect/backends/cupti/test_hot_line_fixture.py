"""PC samples recorded on a GPU, replayed here: does every sample land on the line it belongs to?

``tests/fixtures/cupti_hot_line`` holds a run of ``benchmarks/hot_line_kernel.py``, two kernels
whose time sits on one ``# HOT`` line each (a loop of ``tl.sin``/``tl.exp``, a loop of
``tl.sum``), recorded on a GPU machine by::

    DEUTERON_CUPTI_RECORD=tests/fixtures/cupti_hot_line deuteron run --sample benchmarks/hot_line_kernel.py

The replay maps the recorded cubins' PCs with the code under test, so a change to the line
mapping is measured against real samples: each ``# HOT`` line must hold 90% of its kernel's
samples, ``<no source line>`` under 2% (``benchmarks/hot_line_check.py`` says both). The older
``cupti_sampling`` fixture (``examples/hot_line.py``) is held to the same unplaced share.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from deuteron.collect.backends.cupti import replay
from deuteron.collect.session import Session
from deuteron.explain.pc_lines import NO_LINE, PLACEMENTS, UNPLACED
from deuteron.formats import hatchet
from deuteron.model.names import parse_source_frame
from deuteron.model.tree import KERNEL, Node
from tests.helpers.paths import FIXTURES_DIR, REPO

HOT_LINE = FIXTURES_DIR / "cupti_hot_line"
SAMPLING = FIXTURES_DIR / "cupti_sampling"
RECORD = (
    "DEUTERON_CUPTI_RECORD=tests/fixtures/cupti_hot_line deuteron run --sample benchmarks/hot_line_kernel.py"
)
recorded = pytest.mark.skipif(
    not (HOT_LINE / "samples_000.json").exists(),
    reason=f"tests/fixtures/cupti_hot_line is not recorded yet: on a GPU machine, run {RECORD}",
)


def _replayed(folder: Path) -> Session:
    session = Session(0, "fixture", backend="interpreter", context="shadow")
    replay(folder, session)
    return session


def _kernels(session: Session, name: str) -> list[Node]:
    return [n for n in session.profile.root.walk() if n.type == KERNEL and n.name == name]


def _samples(node: Node) -> int:
    return sum(int(n.metrics.get("num_samples", 0) or 0) for n in node.walk())  # type: ignore[call-overload]


@recorded
def test_each_hot_line_holds_its_kernels_samples(tmp_path: Path) -> None:
    path = hatchet.write(_replayed(HOT_LINE).profile, tmp_path / "hot_line.hatchet")
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "hot_line_check.py"), str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(": ok") == 2, proc.stdout


@recorded
def test_the_inlined_sum_is_below_its_line_and_the_file_says_how_samples_were_placed() -> None:
    session = _replayed(HOT_LINE)
    meta = session.profile.metadata["pc_sampling"]
    assert isinstance(meta, dict)
    for name in ("sin_exp_loop", "row_sum_loop"):
        entry = meta["kernels"][name]
        assert set(entry["placement"]) == set(PLACEMENTS)
        assert sum(entry["placement"].values()) == entry["samples"]
        assert entry["no_line_share"] < 0.02
    lines = [c for k in _kernels(session, "row_sum_loop") for c in k.children.values()]
    assert not any((p := parse_source_frame(c.name)) and p[0].endswith("standard.py") for c in lines)
    hot = max(lines, key=_samples)
    callees = [c.name for c in hot.children.values()]
    # named by its function where this machine has the recorded Triton's file, else by file:line
    assert any(c.startswith(("tl.sum (standard.py:", "standard.py:")) for c in callees), callees


def test_the_recorded_hot_line_run_leaves_under_2_percent_unplaced() -> None:
    session = _replayed(SAMPLING)
    meta = session.profile.metadata["pc_sampling"]
    assert isinstance(meta, dict)
    for name in ("rms_scale", "gather_add"):
        entry = meta["kernels"][name]
        placed = entry["placement"]
        assert sum(placed.values()) == entry["samples"] and placed[UNPLACED] / entry["samples"] < 0.02
        unplaced = sum(
            _samples(c) for k in _kernels(session, name) for c in k.children.values() if c.name == NO_LINE
        )
        assert unplaced == placed[UNPLACED]
