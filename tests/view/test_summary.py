"""The lines before the tree: GPU busy share (over the steps where the run's trace is beside, the
whole process apart and labelled), kernel time by forward, backward, optimizer and collectives,
top kernels, and what ``<other threads>`` is."""

from __future__ import annotations

from pathlib import Path

import pytest

from deuteron.formats import hatchet
from deuteron.model.metrics import CPU_TIME, EXC, TIME
from deuteron.model.tree import KERNEL, Profile
from deuteron.view.summary import OTHER_THREADS, summary_lines
from tests.helpers.cli import run_cli
from tests.helpers.rank_traces import unpacked

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
    assert lines[0] == (
        "GPU busy 10.00 ms of the 40.00 ms from its first kernel to its last (25.0%): the whole process, "
        "loading, compilation and warm-up included; the share over the training steps needs the run's "
        "trace beside the profile (--trace)"
    )  # optimizer.step (AdamW) marks training steps
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


def test_collectives_are_their_own_part_of_the_kernel_time() -> None:
    """NCCL's kernels wait for the other ranks inside them: that time is no backward's."""
    p = _step()
    backward = p.root.children[("Model", "function")].children[("backward", "function")]
    p.add_metrics(backward.child("ncclDevKernel_AllReduce_Sum_f32_RING_LL", KERNEL), {TIME: 10_000_000})
    split = (
        "forward and other 3.00 ms (15%), backward 5.00 ms (25%), optimizer 2.00 ms (10%), "
        "collectives (waits included) 10.00 ms (50%)"
    )
    assert summary_lines(p)[1] == f"kernel time 20.00 ms: {split}"


def test_other_threads_are_said_for_what_they_are() -> None:
    from deuteron.collect.placement import OTHER_THREADS as MADE

    assert OTHER_THREADS == MADE  # the frame the collector makes
    p = Profile()
    scope = p.root.child("train")
    p.add_metrics(scope.child("gemm", KERNEL), {TIME: 52_000_000, "num_samples": 5200})
    p.add_metrics(scope.child(OTHER_THREADS).child("loader_kernel", KERNEL), {TIME: 48_000_000})
    p.add_metrics(
        scope.child(OTHER_THREADS).child("loader_kernel", KERNEL).child("/a.py:3@k"), {"num_samples": 4800}
    )
    assert summary_lines(p)[-1] == (
        "<other threads> holds 48% of the kernel time and 48% of the PC samples: kernels launched by "
        "threads that never opened a scope of their own (autograd's backward threads, data-loader or "
        "library worker threads), filed under the scope the starting thread was in"
    )
    assert not any(OTHER_THREADS in line for line in summary_lines(_step()))


@pytest.mark.broken_profile  # the recorded DDP files predate: a module's CPU time covers its backward
def test_busy_over_the_steps_from_the_trace_beside_and_the_whole_process_apart(tmp_path: Path) -> None:
    """The recorded DDP rank was busy 33% of the whole process (loading included), 94% of its
    last two steps; its NCCL waits are not backward time."""
    source = str(unpacked("ddp", tmp_path) / "deuteron.rank0.hatchet")
    lines = summary_lines(hatchet.read(source), source=source)
    assert lines[0] == (
        "GPU busy 93.6% over the 2 steps (the kernels launched in them, from the trace beside the "
        "profile): 80.08 ms of 85.56 ms"
    )
    assert lines[1] == (
        "whole process: GPU busy 260.56 ms of the 779.33 ms from its first kernel to its last (33.4%), "
        "loading, compilation and warm-up included"
    )
    assert lines[2] == (
        "kernel time 311.21 ms: forward and other 34.69 ms (11%), backward 70.73 ms (23%), optimizer "
        "6.98 ms (2%), collectives (waits included) 198.81 ms (64%)"
    )
    alone = summary_lines(hatchet.read(source))  # no path given: the whole process only, labelled
    assert alone[0].startswith(
        "GPU busy 260.56 ms of the 779.33 ms from its first kernel to its last (33.4%)"
    )
