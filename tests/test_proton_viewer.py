"""Proton's own proton-viewer (from the triton wheel, with llnl-hatchet) reads our files unchanged."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import deuteron
from deuteron.formats import hatchet
from tests import kernels as k
from tests.helpers import H200_TABLE


def proton_viewer(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from triton.profiler.viewer import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def our_profile(tmp_path: Path) -> Path:
    with deuteron.profile("ours", backend="interpreter", output_format="hatchet") as p:
        with deuteron.scope("train", metrics={"flops": 1e6}):
            k.add(torch.rand(1000), torch.rand(1000))
            k.matmul(torch.rand(64, 64), torch.rand(64, 64))
    target = tmp_path / "ours.hatchet"
    p.files[0].replace(target)
    return target


def test_proton_viewer_lists_and_shows_our_metrics(our_profile: Path):
    listed = proton_viewer("-l", str(our_profile))
    assert listed.returncode == 0, listed.stderr
    for metric in ("time", "count", "bytes", "flops"):
        assert f"- {metric}\n" in listed.stdout
    shown = proton_viewer("-m", "time/ms,gbyte/s", str(our_profile))
    assert shown.returncode == 0, shown.stderr
    assert "train" in shown.stdout and "add_kernel" in shown.stdout and "matmul_kernel" in shown.stdout
    assert "deuteron:metadata" not in shown.stdout


def test_proton_viewer_counts_match_ours(our_profile: Path):
    shown = proton_viewer("-m", "bytes", str(our_profile))
    assert shown.returncode == 0, shown.stderr
    ours = hatchet.read(our_profile)
    add_bytes = next(n for n in ours.root.walk() if n.name == "add_kernel").metrics["bytes"]
    line = next(ln for ln in shown.stdout.splitlines() if ln.rstrip().endswith("add_kernel"))
    assert float(line.split()[-2]) == pytest.approx(add_bytes)


def test_proton_viewer_diffs_and_uses_our_device_table(tmp_path: Path, our_profile: Path):
    prof = hatchet.read(our_profile)
    for node in prof.root.walk():
        if node.type == "kernel":
            node.metrics["device_type"] = "CUDA"
    prof.devices = copy.deepcopy(H200_TABLE)
    gpu_like = hatchet.write(prof, tmp_path / "gpu_like.hatchet")
    util = proton_viewer("-m", "util", str(gpu_like))
    assert util.returncode == 0, util.stderr
    diff = proton_viewer("-m", "time/ns", "-diff", str(our_profile), str(gpu_like))
    assert diff.returncode == 0, diff.stderr
    assert "add_kernel" in diff.stdout
