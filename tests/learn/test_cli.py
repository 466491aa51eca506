"""``deuteron learn`` as a learner types it: bad input is one line and exit 2; a check exits 0 or 1
and keeps progress; hints come one at a time; records open in ``deuteron serve``."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from deuteron.cli import main
from deuteron.formats import access_record, check_json
from deuteron.learn import find
from tests.helpers.cli import run_cli
from tests.helpers.sources import SPIN


@pytest.fixture
def data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("DEUTERON_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "data" / "learn" / "progress.json"


def _one_line_error(proc, *expected: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("deuteron: error: "), proc.stderr
    for text in expected:
        assert text in lines[0], lines[0]


def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each case through ``deuteron.cli.main`` in this process (what ``python -m deuteron`` runs,
    without a fresh interpreter per case); one case in a real process below, as a user runs it."""
    monkeypatch.setenv("DEUTERON_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "syntax.py").write_text("import triton\n@triton.jit\ndef add_kernel(:\n")
    (tmp_path / "empty.py").write_text("x = 1\n")
    cases = [
        (["learn", "show", "13"], ["no exercise '13'"]),
        (["learn", "check", "zero", "x.py"], ["no exercise 'zero'"]),
        (["learn", "check", "1", "missing.py"], ["missing.py: no such file"]),
        (["learn", "check", "1"], ["learn/01_vector_add.py: no such file", "deuteron learn start 1"]),
        (["learn", "check", "1", "syntax.py"], ["syntax.py:3: syntax error"]),
        (["learn", "check", "1", "empty.py"], ["has no function add_kernel"]),
        (["learn", "check", "1", "--solution", "empty.py"], ["not both"]),
        (["learn", "check", "1", "--solution", "--timeout", "0"], ["--timeout", "more than 0"]),
        # nan, inf and a number past what the timer holds: one line, never the timer's traceback
        (["learn", "check", "1", "--solution", "--timeout", "nan"], ["--timeout", "'nan'", "at most 86400"]),
        (["learn", "check", "1", "--solution", "--timeout", "inf"], ["--timeout", "'inf'"]),
        (["learn", "check", "1", "--solution", "--timeout=1e300"], ["--timeout", "'1e300'"]),
        (["learn", "check", "1", "--solution", "--timeout", "-1"], ["--timeout", "'-1'"]),
        (["learn", "check", "1", "--solution", "--timeout", "soon"], ["--timeout", "'soon'"]),
        (["learn", "frobnicate"], ["invalid choice"]),
        (["learn", "--notebook", "no/such/folder/x.ipynb"], ["does not exist"]),
    ]
    for words, expected in cases:
        try:
            code = main(words)
        except SystemExit as exc:  # argparse's refusals
            code = exc.code if isinstance(exc.code, int) else 2
        captured = capsys.readouterr()
        _one_line_error(subprocess.CompletedProcess(words, code, captured.out, captured.err), *expected)
    real = run_cli(*cases[4][0], cwd=tmp_path, env={"DEUTERON_DATA_DIR": str(tmp_path / "data")})
    _one_line_error(real, *cases[4][1])
    assert not (tmp_path / "data").exists()  # nothing recorded for input that never ran


def test_help_has_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["learn", "-h"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "deuteron learn show 3" in out and "deuteron learn --notebook" in out


def test_start_writes_the_starter_and_never_overwrites(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["learn", "start", "3"]) == 0
    path = Path("learn/03_outer_add.py")
    assert path.read_text() == find(3).starter().replace("THIS_FILE", str(path))
    path.write_text("my work")
    assert main(["learn", "start", "3"]) == 2
    assert "exists" in capsys.readouterr().err and path.read_text() == "my work"
    assert main(["learn", "start", "3", "--force"]) == 0
    assert path.read_text() != "my work"
    assert main(["learn", "start", "outer_add", "elsewhere"]) == 0
    assert Path("elsewhere/03_outer_add.py").is_file()


def test_a_check_exits_1_then_0_and_progress_follows(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["learn", "start", "1"]) == 0
    assert main(["learn", "check", "1"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  n=1000" in out and "0 of 3 shapes pass" in out
    assert json.loads(data.read_text())["exercises"]["01_vector_add"]["status"] == "tried"
    main(["learn"])
    assert "  1  tried" in capsys.readouterr().out
    Path("learn/01_vector_add.py").write_text(find(1).solution_path.read_text())
    assert main(["learn", "check", "1", "learn/01_vector_add.py"]) == 0
    out = capsys.readouterr().out
    assert "all 3 shapes pass" in out and "Exercise 1 done" in out
    main(["learn"])
    out = capsys.readouterr().out
    assert "  1  done" in out and "1 of 12 done" in out and "next: deuteron learn show 2" in out


def test_checking_the_solution_touches_no_progress(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["learn", "check", "12", "--solution"]) == 0
    assert "the reference solution" in capsys.readouterr().out
    assert not data.exists()


def test_hints_come_one_at_a_time(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ex = find(4)
    shown = []
    for _ in range(len(ex.hints) + 1):
        assert main(["learn", "hint", "4"]) == 0
        shown.append(capsys.readouterr().out)
    assert ex.hints[0] in shown[0] and ex.hints[1] not in shown[0]
    assert ex.hints[1] in shown[1] and ex.hints[2] not in shown[1]
    assert "every hint" in shown[-1] and "--solution" in shown[-1]
    assert json.loads(data.read_text())["exercises"]["04_row_sum"]["hints"] == len(ex.hints)


def test_show_has_the_signature_the_launch_and_the_shapes(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ex = find(3)
    assert main(["learn", "show", "3"]) == 0
    out = capsys.readouterr().out
    assert ex.signature() in out and ex.launch_text in out
    assert all(c.label in out for c in ex.cases)
    assert main(["learn", "show", "3", "--solution"]) == 0
    assert capsys.readouterr().out.strip() == ex.solution_path.read_text().strip()


def test_record_writes_both_kernels_accesses_and_the_findings(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ex = find(11)
    assert main(["learn", "start", "11"]) == 0
    assert main(["learn", "check", "11", "--record", "rec"]) == 1
    out = capsys.readouterr().out
    assert "your accesses beside the reference's: deuteron serve rec/11_blur_bounds.*" in out
    yours, _, _ = access_record.read("rec/11_blur_bounds.yours.npz")
    reference, _, _ = access_record.read("rec/11_blur_bounds.reference.npz")
    assert [launch["kernel"] for launch in yours["launches"]] == [ex.kernel] * len(ex.cases)
    assert [launch["kernel"] for launch in reference["launches"]] == [ex.kernel] * len(ex.cases)
    report = check_json.read("rec/11_blur_bounds.yours.json")
    (finding,) = report.findings
    # The finding belongs to the learner's launches only: the page marks it there, not on the reference's.
    assert finding.launch in {launch["index"] for launch in yours["launches"]}
    assert finding.launch not in {launch["index"] for launch in reference["launches"]}


def test_record_of_a_kernel_that_never_ends_keeps_the_verdicts_time(tmp_path: Path) -> None:
    (tmp_path / "spin.py").write_text(SPIN)
    env = {"DEUTERON_DATA_DIR": str(tmp_path / "data")}
    (tmp_path / "rec").mkdir()  # an earlier run's records of the learner's kernel: not this run's
    (tmp_path / "rec" / "01_vector_add.yours.npz").write_bytes(b"earlier")
    (tmp_path / "rec" / "01_vector_add.yours.json").write_text("{}")
    proc = run_cli(
        "learn", "check", "1", "spin.py", "--timeout", "1", "--record", "rec", cwd=tmp_path, env=env
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    out = proc.stdout
    assert "stopped after 1 s" in out and out.count("not run: the shape before did not finish") == 2
    # The verdict's time is the check's: the first shape's second, not the recording's (which, run
    # again on every shape, said 4.19 s)
    seconds = float(re.search(r"0 of 3 shapes pass \((\d+\.\d+) s\)", out).group(1))  # type: ignore[union-attr]
    assert 1.0 <= seconds < 2.5, out
    notes = [line for line in out.splitlines() if "not recorded" in line]
    assert notes == ["deuteron learn: your kernel is not recorded: shape n=1 did not finish in 1 s"], out
    assert sorted(p.name for p in (tmp_path / "rec").iterdir()) == ["01_vector_add.reference.npz"]
    assert "see the reference's accesses: deuteron serve" in out  # not "yours beside", none are there
    reference, _, _ = access_record.read(str(tmp_path / "rec" / "01_vector_add.reference.npz"))
    assert len(reference["launches"]) == len(find(1).cases)


def test_a_progress_file_that_is_not_utf8_is_kept_aside_and_said_once(tmp_path: Path) -> None:
    env = {"DEUTERON_DATA_DIR": str(tmp_path / "data")}
    progress = tmp_path / "data" / "learn" / "progress.json"
    progress.parent.mkdir(parents=True)
    damaged = b'{"format": "deuteron-learn-progress", "exercises": {"\xff": 1}}'
    progress.write_bytes(damaged)
    (tmp_path / "mine.py").write_text(find(1).solution_path.read_text())
    proc = run_cli("learn", "check", "1", "mine.py", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"deuteron learn: warning: {progress} is not a progress file (not UTF-8: byte {damaged.index(255)}); "
        "kept it as progress.json.corrupt and started afresh"
    ]
    assert (progress.parent / "progress.json.corrupt").read_bytes() == damaged
    assert json.loads(progress.read_text())["exercises"]["01_vector_add"]["status"] == "done"


def test_a_progress_file_that_cannot_be_read_is_never_replaced(tmp_path: Path) -> None:
    env = {"DEUTERON_DATA_DIR": str(tmp_path / "data")}
    progress = tmp_path / "data" / "learn" / "progress.json"
    progress.mkdir(parents=True)  # unreadable as a file (as one without read permission is, but for root)
    (progress / "mine").write_text("keep")
    warning = (
        f"deuteron learn: warning: cannot read {progress} (Is a directory); progress is not kept this time"
    )
    (tmp_path / "mine.py").write_text(find(1).solution_path.read_text())
    for words in (["hint", "1"], ["check", "1", "mine.py"], ["list"]):
        proc = run_cli("learn", *words, cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.strip().splitlines() == [warning], words  # one warning, not two
    assert [p.name for p in progress.parent.iterdir()] == ["progress.json"]
    assert [p.name for p in progress.iterdir()] == ["mine"] and (progress / "mine").read_text() == "keep"


def test_a_hint_is_not_a_try(tmp_path: Path) -> None:
    env = {"DEUTERON_DATA_DIR": str(tmp_path / "data")}
    assert run_cli("learn", "hint", "4", cwd=tmp_path, env=env).returncode == 0
    listed = run_cli("learn", cwd=tmp_path, env=env)
    assert listed.returncode == 0 and listed.stderr == ""
    assert "  4  new     row_sum" in listed.stdout, listed.stdout
    entry = json.loads((tmp_path / "data" / "learn" / "progress.json").read_text())["exercises"]["04_row_sum"]
    assert entry["status"] == "new" and entry["hints"] == 1 and entry["checks"] == 0
