"""Issue 29: ``deuteron explain --profile`` with a profile of other kernels says so in one line."""

from __future__ import annotations

from pathlib import Path

from deuteron.explain.roofline import kernel_costs, no_match
from deuteron.formats import hatchet
from tests.helpers.cli import run_cli

KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def {name}(x_ptr, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) + 1, mask=o < n)


x = torch.zeros(8)
{name}[(1,)](x, 8, BLOCK=8)
"""


def test_explain_with_a_profile_of_other_kernels_says_so(tmp_path: Path) -> None:
    (tmp_path / "measured.py").write_text(KERNEL.format(name="measured_kernel"))
    (tmp_path / "explained.py").write_text(KERNEL.format(name="explained_kernel"))
    proc = run_cli("run", "measured.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("explain", "--profile", "deuteron.hatchet", "explained.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "matches no captured kernel" in line]
    assert lines == [
        "deuteron explain: --profile deuteron.hatchet matches no captured kernel: it has measured_kernel; "
        "the program launched explained_kernel"
    ]
    # the same profile with the kernel it measured: no such line
    proc = run_cli("explain", "--profile", "deuteron.hatchet", "measured.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "matches no captured kernel" not in proc.stderr


def test_no_match_names_a_few_of_each(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(KERNEL.format(name="k0"))
    assert run_cli("run", "k.py", cwd=tmp_path).returncode == 0
    costs = kernel_costs(hatchet.read(tmp_path / "deuteron.hatchet"), None)
    assert no_match(costs, ["k0"], "p") is None
    assert no_match(costs, [], "p") is None
    many = [f"c{i}" for i in range(6)]
    assert (
        no_match(costs, many, "p")
        == "p matches no captured kernel: it has k0; the program launched c0, c1, c2, c3 and 2 more"
    )
    assert no_match({}, ["c0"], "p") == "p holds no kernel, so no captured kernel (c0) is ranked"
