"""The lines before the tree: GPU busy share, forward/backward/optimizer kernel time, top kernels."""

from __future__ import annotations

from pathlib import Path

from deuteron.formats import hatchet
from deuteron.model.metrics import CPU_TIME, EXC, TIME
from deuteron.model.tree import KERNEL, Profile
from deuteron.view.summary import summary_lines
from tests.helpers.cli import run_cli

MANGLED = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_"


def _step() -> Profile:
    p = Profile()
    model = p.root.child("Model")
    p.add_metrics(model.child("linear (Linear)").child("gemm", KERNEL), {TIME: 3_000_000})
    p.add_metrics(model.child("backward").child("gemm", KERNEL), {TIME: 5_000_000})
    p.add_metrics(p.root.child("optimizer.step (AdamW)").child(MANGLED, KERNEL), {TIME: 2_000_000})
    p.metadata.update(gpu_busy_ns=10_000_000, gpu_window_ns=40_000_000)
    return p


def test_busy_share_split_and_top_kernels() -> None:
    lines = summary_lines(_step())
    assert lines[0] == "GPU busy 10.00 ms of the 40.00 ms from its first kernel to its last (25.0%)"
    split = "forward and other 3.00 ms (30%), backward 5.00 ms (50%), optimizer 2.00 ms (20%)"
    assert lines[1] == f"kernel time 10.00 ms: {split}"
    assert lines[2] == "top kernels: gemm 80%, vectorized_elementwise_kernel<…> 20%"


def test_a_cpu_profile_and_an_empty_one() -> None:
    p = Profile()
    p.kinds[CPU_TIME] = EXC
    p.add_metrics(p.root.child("Model"), {CPU_TIME: 7_500_000})
    p.add_metrics(p.root.child("Model").child("aten::linear"), {CPU_TIME: 5_000_000})
    p.add_metrics(p.root.child("optimizer.step (AdamW)"), {CPU_TIME: 1_000_000})
    # ROOT's CPU time as the tree shows it: its frames' sum, the nested op inside its module's time
    assert summary_lines(p) == ["CPU time 8.50 ms, the tree's total (no GPU kernels in this profile)"]
    assert summary_lines(Profile()) == []


def test_view_prints_it_when_asked_and_not_into_pipes(tmp_path: Path) -> None:
    path = tmp_path / "s.hatchet"
    hatchet.write(_step(), path)
    asked = run_cli("view", str(path), "--summary", cwd=tmp_path).stdout.splitlines()
    assert asked[0].startswith("GPU busy 10.00 ms") and asked[3].split() == ["time/ms", "name"]
    piped = run_cli("view", str(path), cwd=tmp_path).stdout.splitlines()
    assert piped[0].split() == ["time/ms", "name"]


def test_one_device_list_for_run_view_and_explain(tmp_path: Path) -> None:
    """``--device`` names the same parts in every command (one table, ``model.devices``)."""
    from deuteron.model.devices import NAMED_DEVICES
    from deuteron.triton.runtime.emulated_driver import DEVICES

    assert list(DEVICES) == list(NAMED_DEVICES)
    listed = ", ".join(NAMED_DEVICES)
    for command in ("run", "view", "explain"):
        text = " ".join(run_cli(command, "--help", cwd=tmp_path).stdout.split())
        assert listed in text, command
