"""Issue 29: a run that recorded nothing never replaces an earlier profile, and says why it is
empty in words that fit the case (real ``deuteron run`` processes, real files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.paths import EXAMPLES

KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def bump(x_ptr, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) + 1, mask=o < n)


x = torch.zeros(8)
bump[(1,)](x, 8, BLOCK=8)
"""


@pytest.fixture
def earlier(tmp_path: Path) -> bytes:
    """A real profile of one kernel, written by an earlier run in ``tmp_path``."""
    (tmp_path / "kernel.py").write_text(KERNEL)
    proc = run_cli("run", "kernel.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return (tmp_path / "deuteron.hatchet").read_bytes()


def _last_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("deuteron:")]


def test_failing_run_keeps_the_earlier_profile_byte_for_byte(tmp_path: Path, earlier: bytes) -> None:
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(3)\n")
    proc = run_cli("run", "exits.py", cwd=tmp_path)
    assert proc.returncode == 3
    assert (tmp_path / "deuteron.hatchet").read_bytes() == earlier
    (line,) = _last_lines(proc.stderr)
    assert line.startswith(
        "deuteron: nothing was recorded (the program exited with code 3 before any kernel ran)"
    )
    assert "kept the earlier deuteron.hatchet (written " in line
    assert "-c torch" not in proc.stderr and "wrote" not in proc.stderr


def test_raising_run_keeps_the_earlier_profile(tmp_path: Path, earlier: bytes) -> None:
    (tmp_path / "raises.py").write_text("raise ValueError('no input')\n")
    proc = run_cli("run", "raises.py", cwd=tmp_path)
    assert proc.returncode == 1 and "ValueError: no input" in proc.stderr
    assert (tmp_path / "deuteron.hatchet").read_bytes() == earlier
    assert "the program raised ValueError before any kernel ran" in proc.stderr
    assert "kept the earlier deuteron.hatchet" in proc.stderr and "-c torch" not in proc.stderr


def test_deuteron_option_after_the_script_says_where_it_goes(tmp_path: Path, earlier: bytes) -> None:
    script = str(EXAMPLES / "vector_add.py")
    proc = run_cli("run", script, "-n", "mine", cwd=tmp_path)
    assert proc.returncode == 2 and "unrecognized arguments: -n mine" in proc.stderr
    assert (tmp_path / "deuteron.hatchet").read_bytes() == earlier
    assert not (tmp_path / "mine.hatchet").exists()
    lines = _last_lines(proc.stderr)
    assert lines[0].startswith("deuteron: nothing was recorded (the program exited with code 2")
    assert "kept the earlier deuteron.hatchet" in lines[0]
    assert "deuteron's options go before the script name: " in lines[1]
    assert lines[1].endswith(f"deuteron run -n mine {script}")
    assert "-c torch" not in proc.stderr


def test_sys_exit_without_earlier_profile_gets_no_torch_hint(tmp_path: Path) -> None:
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(3)\n")
    proc = run_cli("run", "exits.py", cwd=tmp_path)
    assert proc.returncode == 3
    (line,) = _last_lines(proc.stderr)
    assert line == (
        "deuteron: nothing was recorded (the program exited with code 3 before any kernel ran); "
        "wrote the empty profile to deuteron.hatchet"
    )


def test_torch_script_without_kernels_still_gets_the_torch_hint(tmp_path: Path) -> None:
    (tmp_path / "cpu.py").write_text("import torch\nprint(float((torch.ones(3) + 1).sum()))\n")
    proc = run_cli("run", "cpu.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = _last_lines(proc.stderr)
    assert lines[0] == (
        "deuteron: nothing was recorded (no kernel ran and no scope had metrics); "
        "wrote the empty profile to deuteron.hatchet"
    )
    assert "add -c torch" in lines[1]


def test_partial_profile_is_written_when_the_program_raises_after_a_kernel(
    tmp_path: Path, earlier: bytes
) -> None:
    (tmp_path / "late.py").write_text(KERNEL + "raise RuntimeError('after the kernel')\n")
    proc = run_cli("run", "late.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert (
        "deuteron: the program raised RuntimeError; wrote the partial profile to deuteron.hatchet"
        in proc.stderr
    )
    assert "nothing was recorded" not in proc.stderr
    written = (tmp_path / "deuteron.hatchet").read_bytes()
    assert written != earlier and "bump" in json.dumps(json.loads(written))
