"""``deuteron check --program``: only the chosen programs run (the others' outputs stay as they
were), ``breakpoint()`` in a kernel stops once, in that program, driven through stdin; and what a
kernel prints under the check (``tl.device_print``, ``print``) is shaped like its blocks and
prefixed by the program id, where stock Triton's interpreter is not. Real kernels, real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deuteron.check.errors import CheckError
from deuteron.check.grid_programs import ProgramSpec, parse_spec
from deuteron.formats import check_json
from tests.helpers.paths import REPO
from tests.helpers.pdb_session import DEBUG_ME, answers, check

TWO_LAUNCHES = """\
import json
import torch
from examples.debug_me import scale_rows

def launch(x):
    out = torch.full_like(x, -1.0)
    scale_rows[(4,)](x, out, 15, BLOCK_R=4, COLS=8, FIXED=True, PRINT=False, STOP=False)
    return [i for i, row in enumerate(out.tolist()) if row != [-1.0] * 8]  # the rows written

x = torch.arange(120.0).reshape(15, 8)
print(json.dumps({"first": launch(x), "second": launch(x + 1)}))
"""


def written(proc: subprocess.CompletedProcess[str]) -> dict[str, list[int]]:
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("specs", "first", "second", "notes"),
    [
        (  # every launch: only program 1, rows 4..7; the rest of out stays -1
            ["1"],
            [4, 5, 6, 7],
            [4, 5, 6, 7],
            [
                "launch 1 of scale_rows: ran 1 of 4 programs (1, 0, 0); 3 skipped, their outputs untouched",
                "launch 2 of scale_rows: ran 1 of 4 programs (1, 0, 0); 3 skipped, their outputs untouched",
            ],
        ),
        (  # the second launch only; the first runs whole
            ["2,0,0@2"],
            list(range(15)),
            [8, 9, 10, 11],
            ["launch 2 of scale_rows: ran 1 of 4 programs (2, 0, 0); 3 skipped, their outputs untouched"],
        ),
        (  # two programs, by kernel name
            ["0@scale_rows", "3@scale_rows"],
            [0, 1, 2, 3, 12, 13, 14],
            [0, 1, 2, 3, 12, 13, 14],
            [
                "launch 1 of scale_rows: ran 2 of 4 programs (0, 0, 0), (3, 0, 0); 2 skipped, "
                "their outputs untouched"
            ],
        ),
    ],
)
def test_only_the_chosen_programs_run(
    tmp_path: Path, specs: list[str], first: list[int], second: list[int], notes: list[str]
) -> None:
    (tmp_path / "two.py").write_text(TWO_LAUNCHES)
    args = [word for spec in specs for word in ("--program", spec)]
    proc = check(*args, "--json", "report.json", "two.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert written(proc) == {"first": first, "second": second}
    for note in notes:
        assert f"deuteron check: {note}" in proc.stderr
    skipped = check_json.read(tmp_path / "report.json").skipped  # the JSON says it too
    assert set(notes) <= set(skipped) and all(f"deuteron check: {line}" in proc.stderr for line in skipped)
    # Skipped programs' rows are unwritten on purpose: no store-coverage finding says otherwise
    assert "store-coverage" not in proc.stderr and "0 info" in proc.stderr


def test_a_program_no_launch_has_is_said(tmp_path: Path) -> None:
    (tmp_path / "two.py").write_text(TWO_LAUNCHES)
    proc = check("--program", "9", "--program", "0@5", "two.py", cwd=tmp_path)
    assert proc.returncode == 0
    assert written(proc) == {"first": [], "second": []}
    assert "launch 1 of scale_rows: ran 0 of 4 programs; 4 skipped, their outputs untouched" in proc.stderr
    assert "--program 9 matched no program in any launch (grids there: (4, 1, 1))" in proc.stderr
    assert "--program 0@5 matched no program in launch 5 (the run made 2 launches)" in proc.stderr


def test_breakpoint_in_a_kernel_stops_once_in_the_chosen_program(tmp_path: Path) -> None:
    commands = "p pid\np x.handle.data.shape\nc\n"
    proc = check("--program", "2", DEBUG_ME, "--stop", stdin=commands, cwd=tmp_path)
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr
    assert out.count("(Pdb) ") == 3  # one stop: three commands read, then the run went on
    assert answers(out)[:2] == ["array([2], dtype=int32)", "(4, 8)"]  # pdb's own view: Triton tensors
    assert "debug_me.py" in out and "-> tl.store(out_ptr + rows * COLS + cols, y" in out
    assert "rows computed: 4 of 15; all match" in out
    assert "launch 1 of scale_rows: ran 1 of 4 programs (2, 0, 0)" in proc.stderr


def test_pdb_with_program_stops_only_in_the_chosen_program(tmp_path: Path) -> None:
    clean = check("--pdb", "--program", "1", DEBUG_ME, cwd=tmp_path)  # the bug is in program 3 only
    assert clean.returncode == 0 and "(Pdb)" not in clean.stdout, clean.stdout + clean.stderr
    proc = check("--pdb", "--program", "3", DEBUG_ME, stdin="p pid\nc\n", cwd=tmp_path)
    assert answers(proc.stdout)[0] == "3" and proc.returncode == 1
    assert "rows computed: 3 of 15; all match" in proc.stdout


PRINTS = """\
import torch, triton, triton.language as tl

@triton.jit
def show(x_ptr, HEX: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * 4 + tl.arange(0, 2)[:, None] * 2 + tl.arange(0, 2)[None, :]
    x = tl.load(x_ptr + offs)
    tl.device_print("x", x, hex=HEX)
    print("x", x)
    print("pid", pid)

x = torch.arange(1, 9, dtype=torch.float32)
show[(2,)](x, HEX=False)
"""


def _plain(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The script under stock Triton's interpreter, without Deuteron."""
    env = {k: v for k, v in os.environ.items() if k != "DEUTERON_DISABLE"}
    env["TRITON_INTERPRET"] = "1"
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=script.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_kernel_prints_are_shaped_and_name_the_program(tmp_path: Path) -> None:
    script = tmp_path / "prints.py"
    script.write_text(PRINTS)
    stock = _plain(script)
    assert stock.returncode == 0, stock.stderr
    # Stock Triton: the block's second row on a line of its own that names no program, and
    # Python's print with no program at all (a scalar shown as a 1-element array)
    assert "(1, 0, 0)  x:  [[5. 6.]\n [7. 8.]]" in stock.stdout
    assert "x [[5. 6.]\n [7. 8.]]" in stock.stdout and "pid [1]" in stock.stdout
    checked = check("prints.py", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.splitlines() == [
        "pid (0, 0, 0) x: [[1. 2.] [3. 4.]]",
        "pid (0, 0, 0) x [[1. 2.] [3. 4.]]",
        "pid (0, 0, 0) pid 0",
        "pid (1, 0, 0) x: [[5. 6.] [7. 8.]]",
        "pid (1, 0, 0) x [[5. 6.] [7. 8.]]",
        "pid (1, 0, 0) pid 1",
    ]


def test_hex_and_a_long_block_print_under_the_check(tmp_path: Path) -> None:
    script = tmp_path / "prints.py"
    script.write_text(PRINTS.replace("HEX=False", "HEX=True"))
    hexed = check("prints.py", cwd=tmp_path)
    one, two, three, four = (f"0x1.{m}000000000000p+{e}" for m, e in (("0", 0), ("0", 1), ("8", 1), ("0", 2)))
    assert f"pid (0, 0, 0) x: [[{one} {two}] [{three} {four}]]" in hexed.stdout, hexed.stdout + hexed.stderr
    # A block too wide for one line keeps its rows, each under the first, none unattributed
    proc = check("--program", "1", DEBUG_ME, "--print", cwd=tmp_path)
    lines = proc.stdout.splitlines()
    head = "pid (1, 0, 0) "
    assert lines[0] == head + "y: [[128. 132. 136. 140. 144. 148. 152. 156.]"
    pad = " " * len(head + "y: ")  # each row under the first row's
    assert lines[1:4] == [
        pad + " [200. 205. 210. 215. 220. 225. 230. 235.]",
        pad + " [288. 294. 300. 306. 312. 318. 324. 330.]",
        pad + " [392. 399. 406. 413. 420. 427. 434. 441.]]",
    ]
    assert lines[4] == head + "rows [[4] [5] [6] [7]]"


def test_program_specs_parse_or_fail_in_one_line() -> None:
    assert parse_spec("3") == ProgramSpec((3, 0, 0), text="3")
    assert parse_spec("3, 1 ,2@2") == ProgramSpec((3, 1, 2), launch=2, text="3, 1 ,2@2")
    assert parse_spec("0,4@softmax_kernel") == ProgramSpec(
        (0, 4, 0), kernel="softmax_kernel", text="0,4@softmax_kernel"
    )
    for bad in ("abc", "1,2,3,4", "-1", "1@0", "", "1.5", "1@", "@2"):
        with pytest.raises(CheckError) as err:
            parse_spec(bad)
        assert "\n" not in str(err.value) and "--program" in str(err.value)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--program", "abc", DEBUG_ME], "--program 'abc': expected X[,Y[,Z]][@LAUNCH]"),
        (["--program", "1,2,3,4", DEBUG_ME], "--program '1,2,3,4': expected X[,Y[,Z]][@LAUNCH]"),
        (["--program", "1@0", DEBUG_ME], "--program '1@0': launches are numbered from 1"),
        (["--program", "-1", DEBUG_ME], "--program '-1': expected"),
        (["--program", "1", "pytest", "-n2", "tests"], "--program needs the tests in this process"),
        (["--program"], "expected one argument"),
    ],
)
def test_bad_program_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    proc = check(*args, cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("deuteron: error:") and message in lines[0], proc.stderr
