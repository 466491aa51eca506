"""``deuteron explain`` of kernels ``torch.compile`` generated: Inductor launches them through its
own launchers, so each is keyed from Inductor's description (signature, alignment, configs). The
fixtures are files torch 2.11's Inductor wrote on an H200; explained here on the CPU."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO

FIXTURES = REPO / "tests" / "fixtures" / "inductor_kernels"


def test_every_config_of_inductors_kernels_is_explained(tmp_path: Path) -> None:
    out = tmp_path / "ex.json"
    proc = run_cli(
        "explain", "--target", "cuda:90", "--json", str(out), str(FIXTURES / "pointwise.py"),
        cwd=tmp_path, env={"COLUMNS": "200"}, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    kernels = json.loads(out.read_text())["kernels"]
    # Inductor's two configs of a pointwise kernel: XBLOCK 1024 on 4 warps, 512 on 8
    got = sorted((k["num_warps"], k["args"][-1]) for k in kernels)
    assert got == [(4, "XBLOCK=1024"), (8, "XBLOCK=512")], got
    for k in kernels:
        assert k["name"] == "triton_poi_fused_add_mul_relu_0" and k["origin"] == "inductor"
        assert k["launches"] == 0 and k["registers"] > 0
        assert k["file"].endswith("pointwise.py") and k["line"] == 10  # its first decorator, Inductor's
        # the pointers are 16-byte aligned (Inductor said so), the scalar a stand-in: no value shown
        assert k["args"][:4] == [
            "in_ptr0: *fp32 (16-byte aligned)", "in_ptr1: *fp32 (16-byte aligned)",
            "out_ptr0: *fp32 (16-byte aligned)", "xnumel: i32 (divisible by 16)",
        ]  # fmt: skip
    # aligned, so each thread's loads are vectors: 8 floats a thread (1024 / 128) in 128-bit loads
    four = next(k for k in kernels if k["num_warps"] == 4)
    assert four["sass"]["global_loads"] == {"128-bit": 4}, four["sass"]
    assert "a config of Inductor's" in proc.stdout and "0 launches" not in proc.stdout


def test_a_reduction_maps_its_ir_to_the_generated_lines() -> None:
    proc = run_cli(
        "explain", "--target", "cuda:90", "--stage", "ptx", "--line", "34",
        str(FIXTURES / "persistent_reduction.py"), cwd=REPO, env={"COLUMNS": "200"}, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = [r for r in proc.stdout.splitlines() if " | " in r]
    assert rows and all(r.split(" | ")[0].strip() == "34" for r in rows)
    assert any("ld.global" in r for r in rows), rows[:5]
