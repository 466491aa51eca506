"""``deuteron explain`` on a GPU: kernels launch for real, and what we report for the local target
matches what the driver says about the kernel Triton itself compiled and launched."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli import run_cli

SCRIPT = """
import json, sys, torch
from tests.explain_corpus.vector_copy import copy_kernel
from tests.explain_corpus.matmul import matmul_kernel

seen = {}
for offset in (0, 3):
    src = torch.arange(4096 + 64, dtype=torch.float32, device="cuda")
    dst = torch.empty(4096, device="cuda")
    k = copy_kernel[(4,)](src, dst, offset, BLOCK=1024)
    assert torch.equal(dst, src[offset:offset + 4096])
    seen[f"copy_kernel/{offset}"] = [k.n_regs, k.n_spills, k.metadata.shared]
a = torch.randn(128, 128, dtype=torch.float16, device="cuda")
b = torch.randn(128, 128, dtype=torch.float16, device="cuda")
c = torch.empty(128, 128, device="cuda")
k = matmul_kernel[(2, 2)](a, b, c, 128, 128, 128, 128, 128, 128, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-2, rtol=1e-2)
seen["matmul_kernel"] = [k.n_regs, k.n_spills, k.metadata.shared]
json.dump(seen, open("driver.json", "w"))
print("ran on", torch.cuda.get_device_name())
"""


def test_explain_reports_what_the_driver_loaded(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(SCRIPT)
    proc = run_cli("explain", "--json", "e.json", "script.py", cwd=tmp_path, timeout=500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("ran on "), proc.stdout
    driver = json.loads((tmp_path / "driver.json").read_text())
    report = json.loads((tmp_path / "e.json").read_text())
    kernels = report["kernels"]
    assert len(kernels) == 3  # two copy specializations (offset 0 and 3 differ in divisibility) + matmul
    local = kernels[0]["target"]
    assert local.startswith("cuda:") and all(k["target"] == local for k in kernels)
    copies = sorted((k for k in kernels if k["name"] == "copy_kernel"), key=lambda k: k["args"][2])
    for k, key in zip(copies, ("copy_kernel/0", "copy_kernel/3"), strict=True):
        regs, spills, shared = driver[key]
        assert (k["registers"], k["spills"], k["shared_bytes"]) == (regs, spills, shared), (key, k)
    (mm,) = (k for k in kernels if k["name"] == "matmul_kernel")
    assert (mm["registers"], mm["spills"], mm["shared_bytes"]) == tuple(driver["matmul_kernel"])
    assert mm["sass"]["tensor_core"] > 0
    unaligned = [f for f in copies[1]["findings"] if f["kind"] == "unvectorized-load"]
    assert unaligned and "`offset` = 3" in unaligned[0]["message"]
