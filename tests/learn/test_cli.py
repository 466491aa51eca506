"""``deuteron learn`` as a learner types it: bad input is one line and exit 2; a check exits 0 or 1
and keeps progress; hints come one at a time; records open in ``deuteron serve``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deuteron.cli import main
from deuteron.formats import access_record, check_json
from deuteron.learn import find
from tests.conftest import run_cli


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


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    env = {"DEUTERON_DATA_DIR": str(tmp_path / "data")}
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
        (["learn", "check", "1", "--solution", "--timeout", "0"], ["--timeout"]),
        (["learn", "frobnicate"], ["invalid choice"]),
        (["learn", "--notebook", "no/such/folder/x.ipynb"], ["does not exist"]),
    ]
    for words, expected in cases:
        _one_line_error(run_cli(*words, cwd=tmp_path, env=env), *expected)
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
