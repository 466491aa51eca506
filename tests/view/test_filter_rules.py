"""How -i/-e combine with the columns: numbers of what is left, shares of the whole run, patterns
on whole names, and a filter that leaves nothing (or nothing with the column) said in one line."""

from __future__ import annotations

from pathlib import Path

from deuteron.formats import hatchet
from deuteron.model.metrics import TIME
from deuteron.model.tree import KERNEL, Profile
from tests.helpers.cli import run_cli


def _profile(path: Path) -> Path:
    p = Profile()
    for name, ns, calls in (("foo0", 204800, 10), ("foo1", 204800, 1), ("foo2", 409600, 5)):
        p.add_metrics(
            p.root.child("/home/u/train.py:12@step").child(name, KERNEL), {TIME: ns, "count": calls}
        )
    p.add_metrics(p.root.child("/home/u/data.py:3@load"), {"bytes": 100})
    return hatchet.write(p, path)


def _rows(stdout: str) -> dict[str, list[str]]:
    rows = {}
    for line in stdout.splitlines()[1:]:
        words = line.replace("└─", " ").replace("├─", " ").replace("│", " ").split()
        rows[words[-1]] = words[:-1]
    return rows


def test_shares_are_of_the_whole_run_and_totals_of_what_is_left(tmp_path: Path) -> None:
    path = _profile(tmp_path / "p.hatchet")
    proc = run_cli("view", str(path), "-m", "time/%,time/us,count", "-i", ".*foo0", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = _rows(proc.stdout)
    assert rows["foo0"] == ["25.000", "204.800", "10"]
    assert rows["ROOT"] == ["25.000", "204.800", "10"]  # the kept frames: a quarter of the run


def test_patterns_match_whole_names_before_f_shortens_them(tmp_path: Path) -> None:
    path = _profile(tmp_path / "p.hatchet")
    proc = run_cli("view", str(path), "-f", "function_line", "-i", ".*/home/u/train.py.*", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "12@step" in proc.stdout and "load" not in proc.stdout


def test_a_filter_that_leaves_nothing_shows_root_and_says_so(tmp_path: Path) -> None:
    path = _profile(tmp_path / "p.hatchet")
    proc = run_cli("view", str(path), "-e", ".*@", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "ROOT" in proc.stdout and "leaves no frame below ROOT" in proc.stderr


def test_a_filter_that_leaves_frames_without_the_column_says_so(tmp_path: Path) -> None:
    path = _profile(tmp_path / "p.hatchet")
    proc = run_cli("view", str(path), "-i", ".*load", "-m", "time/ms", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "3@load" in proc.stdout or "load" in proc.stdout
    assert "no frame that -i/-e leave in view has time/ms" in proc.stderr
    unfiltered = run_cli("view", str(path), "-m", "flops", cwd=tmp_path)  # nowhere at all: still an error
    assert unfiltered.returncode == 2 and "Traceback" not in unfiltered.stderr
