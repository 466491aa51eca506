"""``deuteron check`` with CUDA tensors: Triton's interpreter copies them to the host, the checks
run on the host copies, and the results come back to the device."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli import run_cli

SCRIPT = """
import torch
from tests.check_corpus import buggy

x, y = torch.rand(1000, device="cuda"), torch.rand(1000, device="cuda")
out = torch.zeros(1000, device="cuda")
buggy.add_unmasked_load_kernel[(4,)](x, y, out, 1000, BLOCK=256)
assert out.is_cuda and torch.allclose(out, x + y)
print("ok", torch.cuda.get_device_name())
"""


def test_check_with_cuda_tensors(tmp_path: Path):
    (tmp_path / "script.py").write_text(SCRIPT)
    proc = run_cli("check", "--json", "r.json", "script.py", cwd=tmp_path, timeout=300)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert proc.stdout.startswith("ok "), proc.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    (finding,) = report["findings"]
    assert (finding["kind"], finding["tensor"], finding["program"]) == ("out-of-bounds", "x_ptr", [3, 0, 0])
    assert "first element 1000..1023" in finding["message"]
    assert (report["launches"], report["programs"]) == (1, 4)


POINTER_ARRAY = """
import torch
from tests.check_corpus import patterns

got, want = patterns.pointer_array(device="cuda")
assert got.is_cuda and torch.allclose(got, want)
patterns.pointer_array(extra=5, device="cuda")
print("ok")
"""


def test_a_pointer_array_of_device_addresses_is_followed_into_host_copies(tmp_path: Path) -> None:
    """Tutorial 08's pattern on a GPU: the array holds device addresses; the interpreter runs on the
    host, so each target is copied there for the launch, checked as itself, and copied back (the
    first launch's results reach the device: the script asserts them)."""
    (tmp_path / "script.py").write_text(POINTER_ARRAY)
    proc = run_cli("check", "--json", "r.json", "script.py", cwd=tmp_path, timeout=300)
    assert proc.returncode == 1 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["launches"] == 2
    findings = report["findings"]
    assert {f["kind"] for f in findings} == {"out-of-bounds"}  # only the second launch's strays
    assert sorted(f["index"][0] for f in findings) == [37, 64, 100]
    assert all("tensor from a pointer in memory" in f["tensor"] for f in findings)
