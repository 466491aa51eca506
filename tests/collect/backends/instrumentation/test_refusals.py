"""What ``deuteron run`` says when instrumentation cannot run or is asked wrongly: one line, exit 2,
before the program starts (its script would print "ran")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cli import run_cli


def _script(tmp_path: Path) -> str:
    (tmp_path / "s.py").write_text("print('ran')\n")
    return "s.py"


def _one_line_refusal(tmp_path: Path, *args: str) -> str:
    proc = run_cli("run", *args, _script(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "ran" not in proc.stdout and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_without_a_gpu_it_says_what_to_use_instead(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: instrumentation can run")
    line = _one_line_refusal(tmp_path, "-b", "instrumentation")
    assert "instrumentation backend is unavailable" in line and "--backend interpreter" in line


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("default:granularity=warp_3", "Unknown granularity: warp_3 (choose one of: cta, warp,"),
        ("default:buffer_size=lots", "buffer_size must be a whole number of bytes, not 'lots'"),
        ("default:sampling_strategy=selective", "sampling_options must list the warps to keep"),
        ("default:optimizations=fast", "Unknown optimization: fast (choose from: time_shift"),
        ("default:granularity", "malformed instrumentation option 'granularity'"),
        ("dense", "unknown instrumentation mode 'dense'; choose one of: default, mma"),
    ],
)
def test_a_bad_mode_is_one_line(tmp_path: Path, mode: str, said: str) -> None:
    line = _one_line_refusal(tmp_path, "-b", "instrumentation", "--mode", mode)
    assert said in line


def test_a_mode_needs_the_instrumentation_backend(tmp_path: Path) -> None:
    line = _one_line_refusal(tmp_path, "-b", "interpreter", "--mode", "default")
    assert "instruments kernels: start with backend='instrumentation'" in line


def test_an_unknown_backend_lists_the_choices(tmp_path: Path) -> None:
    proc = run_cli("run", "-b", "cupti,interpreter", _script(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2 and "instrumentation" in proc.stderr and "Traceback" not in proc.stderr


def test_an_instrumented_run_without_scopes_says_why_it_is_empty() -> None:
    """Found on Triton's tutorial 01 on an H200: -b instrumentation recorded nothing (no pl.scope)
    and the hint said to add -c torch; it now says what instrumentation records."""
    from deuteron.cli.run import _why_empty

    said = _why_empty(0, "", "shadow", "instrumentation")
    assert "no kernel that ran has a pl.scope" in said and "-b cupti,instrumentation" in said
    assert "pl.scope" not in _why_empty(0, "", "shadow", "auto")
