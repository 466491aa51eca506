"""``deuteron check --pdb``: real processes whose pdb sessions are driven through stdin. Each test
reads what pdb printed back: the banner, the frame it stopped in, and the values of the names it
gave (the failing program, its bad lanes, their offsets, what the load gave the kernel)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.pdb_session import DEBUG_ME, answers, check


def line_of(text: str, path: str = DEBUG_ME) -> int:
    """The 1-based line of ``path`` that holds ``text`` (so the tests follow the example's layout)."""
    return next(i for i, line in enumerate(Path(path).read_text().splitlines(), 1) if text in line)


LOAD = line_of("x = tl.load(")




def test_pdb_stops_at_the_bad_lane_in_the_kernels_frame(tmp_path: Path) -> None:
    commands = [
        "p pid",  # the kernel's own local, as a number
        "p ctx.pid",  # the finding's program
        "p int(bad_lanes.sum()), bad_lanes.shape",
        "p np.argwhere(bad_lanes)[0].tolist()",
        "p offsets[bad_lanes].tolist()",
        "p value[bad_lanes].tolist()",  # what the load gave: other=0.0 where masked off
        "p rows[:, 0].tolist()",  # a kernel local block, as NumPy
        "p type(mask).__name__, mask.shape, ctx.mask.shape",  # the kernel's mask, and the access's
        "p finding.kind, finding.tensor",
        "n",
        "c",
    ]
    proc = check("--pdb", DEBUG_ME, stdin="\n".join(commands) + "\n", cwd=tmp_path)
    out = proc.stdout
    assert proc.returncode == 1, proc.stderr  # the finding still fails the run
    assert "Traceback" not in out + proc.stderr
    assert "deuteron check --pdb: error out-of-bounds in scale_rows at" in out
    assert f"debug_me.py:{LOAD}, program (3, 0, 0), x_ptr[15, 0] (launch 1)" in out
    assert "bad lanes: 8 of 32: lane (3, 0), (3, 1), (3, 2), (3, 3) and 4 more" in out
    assert "pid, mask: the kernel's own; the finding's are ctx.pid, ctx.mask" in out
    # The frame is the kernel's, at the load
    assert f"debug_me.py({LOAD})scale_rows()\n-> x = tl.load(x_ptr + rows * COLS + cols" in out
    got = answers(out)
    assert got[:9] == [
        "3",
        "(3, 0, 0)",
        "(8, (4, 8))",
        "[3, 0]",
        "[120, 121, 122, 123, 124, 125, 126, 127]",
        "[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]",
        "[12, 13, 14, 15]",
        "('ndarray', (4, 1), (4, 8))",
        "('out-of-bounds', 'x_ptr')",
    ]
    # n steps to the kernel's next line; c runs to the end (one error: one stop)
    assert f"debug_me.py({LOAD + 1})scale_rows()\n-> y = x * rows.to(tl.float32)" in out
    assert out.count("deuteron check --pdb:") == 1
    assert "rows computed: 15 of 15; all match" in out
    assert "1 launch and 4 programs checked: 1 error" in proc.stderr


def test_quit_stops_the_run_and_the_report_says_so(tmp_path: Path) -> None:
    proc = check("--pdb", DEBUG_ME, stdin="q\n", cwd=tmp_path)
    assert proc.returncode == 1
    assert "deuteron check: stopped: quit in pdb; the report covers what ran until then" in proc.stderr
    assert "rows computed" not in proc.stdout  # the script did not go on
    assert "Traceback" not in proc.stdout + proc.stderr


def test_pdb_under_pytest_names_the_test_and_lifts_the_capture(tmp_path: Path) -> None:
    (tmp_path / "test_rows.py").write_text(
        "import torch\n"
        "from examples.debug_me import scale_rows\n\n"
        "def test_quiet():\n"
        "    print('captured, never shown')\n\n"
        "def test_rows():\n"
        "    x = torch.arange(15 * 8.0).reshape(15, 8)\n"
        "    out = torch.full_like(x, -1.0)\n"
        "    scale_rows[(4,)](x, out, 15, BLOCK_R=4, COLS=8, FIXED=False, PRINT=False, STOP=False)\n"
        "    assert (out != -1).all()\n"
    )
    proc = check(
        "--pdb",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "test_rows.py",
        stdin="p ctx.pid\nc\n",
        cwd=tmp_path,
    )
    out = proc.stdout
    assert "launched by the test test_rows.py::test_rows" in out
    assert answers(out)[0] == "(3, 0, 0)"  # pdb read stdin: pytest's capture was lifted
    assert "2 passed" in out and "captured, never shown" not in out  # and given back
    assert proc.returncode == 1  # the error fails the run; the tests themselves passed


def test_pytest_quit_ends_the_session(tmp_path: Path) -> None:
    (tmp_path / "test_two.py").write_text(
        "import torch\n"
        "from examples.debug_me import scale_rows\n\n"
        "def run():\n"
        "    x = torch.arange(15 * 8.0).reshape(15, 8)\n"
        "    out = torch.empty_like(x)\n"
        "    scale_rows[(4,)](x, out, 15, BLOCK_R=4, COLS=8, FIXED=False, PRINT=False, STOP=False)\n\n"
        "def test_first():\n    run()\n\n"
        "def test_second():\n    run()\n"
    )
    proc = check("--pdb", "pytest", "-q", "-p", "no:cacheprovider", "test_two.py", stdin="q\n", cwd=tmp_path)
    assert "quit in pdb (deuteron check --pdb)" in proc.stdout
    assert "test_second" not in proc.stdout and "passed" not in proc.stdout
    assert proc.stdout.count("deuteron check --pdb:") == 1


RACE_AND_NAN = """\
import sys
from tests.check_corpus.buggy import run_inplace_shift_race, run_nan_origin
if sys.argv[1:] == ["nan"]:
    run_nan_origin()
else:
    run_inplace_shift_race()
print("script done")
"""


def test_a_finding_made_after_the_programs_stops_at_the_launch(tmp_path: Path) -> None:
    (tmp_path / "race.py").write_text(RACE_AND_NAN)
    proc = check("--pdb", "race.py", stdin="p finding.kind, pid\np offsets.tolist()\nc\n", cwd=tmp_path)
    out = proc.stdout
    assert "deuteron check --pdb: error race in inplace_shift_left_kernel" in out
    assert "no kernel frame is live, so pdb stops where the kernel was launched" in out
    # the frame is the caller's launch line in the corpus, not the kernel
    assert "buggy.py(180)run_inplace_shift_race()\n-> inplace_shift_left_kernel[" in out
    got = answers(out)
    assert got[0] == "('race', (1, 0, 0))"
    assert got[1] == "[256, 512, 768]"
    assert "script done" in out and proc.returncode == 1


def test_warnings_stop_only_with_pdb_all(tmp_path: Path) -> None:
    (tmp_path / "race.py").write_text(RACE_AND_NAN)
    # --pdb: errors only; the NaN is a warning, so pdb never reads stdin (EOF would quit the run)
    quiet = check("--pdb", "race.py", "nan", cwd=tmp_path)
    assert "deuteron check --pdb" not in quiet.stdout and "script done" in quiet.stdout
    assert "warning" in quiet.stderr and quiet.returncode == 0
    proc = check(
        "--pdb=all",
        "race.py",
        "nan",
        stdin="p finding.kind\np bool(np.isnan(value[bad_lanes]).any() or np.isinf(value[bad_lanes]).all())\n"
        "p bool(np.isfinite(value[~bad_lanes & ctx.mask]).all())\nc\n",
        cwd=tmp_path,
    )
    out = proc.stdout
    assert "deuteron check --pdb: warning nan in log_scale_kernel" in out
    assert "buggy.py(192)log_scale_kernel()\n-> tl.store(out_ptr + offs, y * scale, mask=mask)" in out
    assert answers(out)[:3] == ["'nan'", "True", "True"]  # the bad lanes are exactly the non-finite ones
    assert "script done" in out


ASSERTING = """\
import torch, triton, triton.language as tl

@triton.jit
def positive(x_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_assert(x >= 0, "x must be positive")
    tl.store(x_ptr + offs, x + 1)

x = torch.arange(8, dtype=torch.float32) - 5
positive[(2,)](x, BLOCK=4)
print("after", x.tolist())
"""


def test_a_failed_assert_stops_with_its_failing_lanes(tmp_path: Path) -> None:
    (tmp_path / "asserting.py").write_text(ASSERTING)
    commands = "p pid\np np.flatnonzero(bad_lanes).tolist()\np x.tolist()\nc\n"
    proc = check("--pdb", "asserting.py", stdin=commands, cwd=tmp_path)
    out = proc.stdout
    assert "deuteron check --pdb: error assert in positive at asserting.py:7, program (0, 0, 0)" in out
    assert "asserting.py(7)positive()" in out
    assert answers(out)[:3] == ["(0, 0, 0)", "[0, 1, 2, 3]", "[-5.0, -4.0, -3.0, -2.0]"]
    # program 1's lane 0 fails the same assert: not a new finding, so no second stop
    assert out.count("deuteron check --pdb:") == 1
    assert "after [-4.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0]" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pdb=sometimes", DEBUG_ME], "--pdb=sometimes: choose --pdb (errors), --pdb=warning or --pdb=all"),
        (["--pdb=", DEBUG_ME], "--pdb=: choose --pdb (errors), --pdb=warning or --pdb=all"),
        (["--json", "x.json", "--pdb=Warning", "-m", "mod"], "--pdb=Warning: choose --pdb (errors)"),
        (["--pdb", "pytest", "-n", "2", "tests"], "--pdb needs the tests in this process: drop pytest's -n"),
        (["--pdb", "--program", "1,2,3,4", DEBUG_ME], "--program '1,2,3,4': expected X[,Y[,Z]][@LAUNCH]"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    proc = check(*args, cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("deuteron: error:") and message in lines[0], proc.stderr
    assert proc.stdout == ""


ARGV = "import sys\nprint('argv', sys.argv[1:])\n"


@pytest.mark.parametrize("level", ["--pdb", "--pdb=error", "--pdb=warning", "--pdb=all"])
def test_every_pdb_level_is_taken_and_the_targets_own_words_are_its_own(tmp_path: Path, level: str) -> None:
    """The script's own --pdb=foo and --pdb are its words, never read as ours (no kernel runs: pdb
    never stops, so stdin is never read)."""
    (tmp_path / "argv.py").write_text(ARGV)
    proc = check(level, "argv.py", "--pdb=foo", "--pdb", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "argv ['--pdb=foo', '--pdb']" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_the_command_lines_levels_are_the_debuggers() -> None:
    from deuteron.check.debugger import LEVELS
    from deuteron.cli.check import PDB_LEVELS

    assert PDB_LEVELS == LEVELS
