"""``deuteron view --advise`` is right or silent (issue 39): every row of evidence is above a
threshold its advice states, advice without a row is not given, repeated modules are one row,
library calls are no fusion candidates, and a sampled file without lines still names its stalls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deuteron.formats import hatchet
from deuteron.model.metrics import CPU_TIME, EXC, TIME
from deuteron.model.tree import KERNEL, Node, Profile
from deuteron.view.advise import Advice, advise, render
from tests.helpers.cli import run_cli
from tests.helpers.rank_traces import unpacked

ATTENTION_BACKWARD = "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x64_kernel0_0"
# Proton's PC-sampling columns (third_party/proton/csrc/include/Data/Metric.h, PCSamplingMetric)
PROTON_STALLS = (
    "stalled_branch_resolving", "stalled_no_instruction", "stalled_short_scoreboard", "stalled_wait",
    "stalled_long_scoreboard", "stalled_tex_throttle", "stalled_barrier", "stalled_membar",
    "stalled_imc_miss", "stalled_mio_throttle", "stalled_math_pipe_throttle", "stalled_drain",
    "stalled_lg_throttle", "stalled_not_Selected", "stalled_misc", "stalled_dispatch_stall",
    "stalled_sleeping", "stalled_selected",
)  # fmt: skip


def _kernel(parent: Node, p: Profile, name: str, launches: int, ns: int) -> None:
    p.add_metrics(parent.child(name, KERNEL), {"count": launches, TIME: ns})


def _op(parent: Node, p: Profile, name: str, calls: int) -> Node:
    node = parent.child(name)
    p.add_metrics(node, {"calls": calls})
    return node


def _frame(name: str, metrics: dict[str, object], children: list[dict[str, object]]) -> dict[str, object]:
    return {"frame": {"name": name, "type": "function"}, "metrics": metrics, "children": children}


def test_proton_pc_sampling_file_without_lines_names_the_dominant_stall(tmp_path: Path) -> None:
    """Proton's own file keeps kernel totals (every frame a function, no line frames; its
    ``num_samples`` counts each sample twice): the stall holding 46% of the kernel is named."""
    samples = 100_000
    stalls = dict.fromkeys(PROTON_STALLS, 0)
    stalls.update(
        stalled_mio_throttle=46_000, stalled_long_scoreboard=20_000, stalled_short_scoreboard=14_000,
        stalled_wait=12_000, stalled_selected=8_000,
    )  # fmt: skip
    kernel = {"count": 30, "device_id": "0", "device_type": "CUDA", "time (ns)": 9_000_000}
    kernel.update(num_samples=2 * samples, num_stalled_samples=samples, **stalls)
    small = {
        "count": 3,
        "time (ns)": 10_000,
        "num_samples": 40,
        "num_stalled_samples": 20,
        "stalled_wait": 20,
    }
    root_metrics = dict.fromkeys(["count", "time (ns)", "num_samples", "num_stalled_samples", *stalls], 0)
    tree = _frame(
        "ROOT",
        root_metrics,
        [_frame("train", {}, [_frame("_attn_fwd", kernel, []), _frame("fill", small, [])])],
    )
    path = tmp_path / "proton_pcsampling.hatchet"
    h200 = {
        "arch": "90",
        "bus_width": 6016,
        "clock_rate": 1980000,
        "memory_clock_rate": 3201000,
        "num_sms": 132,
    }
    path.write_text(json.dumps([tree, {"CUDA": {"0": h200}}]))
    (found,) = [a for a in advise(hatchet.read(path)) if a.kind == "stalls"]
    assert found.title.startswith("_attn_fwd: 100,000 PC samples (100% of the run's), without source lines")
    assert (
        "46% of its samples mio_throttle: it waits because the memory-input/output queue is full"
        in found.title
    )
    assert "try: issue fewer of them" in found.title  # the change, as hot_lines says it for lines
    assert "Stalls listed from 10% of the kernel's samples; one is named from 30%" in found.title
    rows = [(row["stall"], row["samples"], row["share"]) for row in found.evidence]
    assert rows == [
        ("mio_throttle", 46_000, "46%"),
        ("long_scoreboard", 20_000, "20%"),
        ("short_scoreboard", 14_000, "14%"),
        ("wait", 12_000, "12%"),
    ]  # the stalls from 10% of the kernel's samples; "fill" is under 5% of the run's: not hot
    shown = run_cli("view", str(path), "--advise", cwd=tmp_path).stdout
    assert "nothing to flag" not in shown and "[stalls] _attn_fwd: 100,000 PC samples" in shown


def _layers(count: int) -> Profile:
    """A model of ``count`` identical layers whose norm's backward takes 4x its forward."""
    p = Profile()
    model = p.root.child("Model")
    for i in range(count):
        norm = model.child(f"layers.{i} (Block)").child("norm (RMSNorm)")
        _kernel(_op(norm, p, "aten::mul", 1), p, "fwd_kernel", 1, 1_000_000)
        _kernel(norm.child("backward"), p, "bwd_kernel", 1, 4_000_000)
    return p


def test_repeated_layers_are_one_row_with_their_count() -> None:
    (found,) = [a for a in advise(_layers(4)) if a.kind == "backward"]
    rows = {row["path"]: row.get("folded") for row in found.evidence}
    assert rows == {
        "Model": None,
        "Model > layers.* (Block)": 4,
        "Model > layers.* (Block) > norm (RMSNorm)": 4,
    }
    row = found.evidence[-1]
    assert row["forward_gpu_ms"] == 4.0 and row["backward_gpu_ms"] == 16.0
    assert "folded= says how many" in found.title
    text = render([found])
    assert "> layers.0" not in text and "(folded=4, ratio=4.00, forward_gpu_ms=4.000" in text
    unfolded = [a for a in advise(_layers(4), fold=False) if a.kind == "backward"][0]
    assert len(unfolded.evidence) == 5  # the top 5 of 9 rows: a layer each, as before folding
    assert all("folded" not in row for row in unfolded.evidence)


def test_library_kernels_are_no_fusion_candidates() -> None:
    """cuDNN's fused attention backward launches several short kernels per call, as an unfused
    elementwise chain does; only the chain is a candidate, and the rule is said."""
    p = Profile()
    attention = _op(p.root.child("backward"), p, "aten::_scaled_dot_product_cudnn_attention_backward", 10)
    for name in (ATTENTION_BACKWARD, "compute_dot_do_o", "convert_dq_to_16bits", "fill_kernel"):
        _kernel(attention, p, name, 10, 10 * 5_000)
    chain = _op(p.root.child("norm (RMSNorm)"), p, "aten::rms_norm", 10)
    for name in ("pow_kernel", "mean_kernel", "rsqrt_kernel", "mul_kernel"):
        _kernel(chain, p, name, 10, 10 * 5_000)
    (fusion,) = [a for a in advise(p) if a.kind == "fusion"]
    assert [row["path"] for row in fusion.evidence] == ["norm (RMSNorm) > aten::rms_norm"]
    assert (
        "An op that runs a library's kernel (cuBLAS, cuDNN, CUTLASS, flash attention, NCCL, CUB)"
        in fusion.title
    )
    assert "is left out: it is a fused library call, not an elementwise chain" in fusion.title


def _gpu_run() -> Profile:
    """A run with GPU kernels, 100 ms of CPU time, one sync op of 0.01 ms and one of 5 ms."""
    p = Profile()
    p.kinds[CPU_TIME] = EXC
    step = p.root.child("step")
    p.add_metrics(step, {CPU_TIME: 100_000_000})
    _kernel(_op(step, p, "aten::addmm", 10), p, "gemm", 10, 50_000_000)
    p.add_metrics(_op(step, p, "aten::equal", 3), {CPU_TIME: 10_000})
    p.add_metrics(_op(step, p, "aten::item", 4), {CPU_TIME: 5_000_000})
    return p


def test_evidence_below_its_stated_threshold_is_dropped() -> None:
    (copies,) = [a for a in advise(_gpu_run()) if a.kind == "copies"]
    assert [row["path"] for row in copies.evidence] == ["step > aten::item"]  # aten::equal's 0.01 ms: dropped
    assert copies.evidence[0] == {"path": "step > aten::item", "calls": 4, "cpu_ms": 5.0}
    assert "listed from 1% of the run's CPU time, and 1 ms" in copies.title
    quiet = _gpu_run()
    quiet.root.children[("step", "function")].children.pop(("aten::item", "function"))
    assert not [a for a in advise(quiet) if a.kind == "copies"]  # no row left: no advice
    # without a GPU nothing waits for one: no [copies] on a CPU run
    cpu = Profile(kinds={CPU_TIME: EXC})
    p_item = _op(cpu.root, cpu, "aten::item", 78)
    cpu.add_metrics(p_item, {CPU_TIME: 50_000_000})
    assert advise(cpu) == []


def test_no_headline_without_its_rows() -> None:
    """A title that promises rows gets them; advice without rows is not printed at all."""
    text = render(
        [Advice("copies", "waits", []), Advice("idle", "the GPU was idle", [{"path": "x", "n": 1}])]
    )
    assert text == "[idle] the GPU was idle\n    x  (n=1)"
    assert render([Advice("copies", "waits", [])]).startswith("advice: nothing to flag")
    for profile in (_gpu_run(), _layers(2)):
        for line in render(advise(profile)).splitlines():
            assert not line.rstrip().endswith(("follow", "follows")), line


@pytest.mark.broken_profile  # the recorded DDP files predate: a module's CPU time covers its backward
def test_idle_is_measured_over_the_steps_where_the_trace_is_beside(tmp_path: Path) -> None:
    """The recorded DDP rank: 67% idle over the whole process (loading included), 6% over its two
    steps, under the 10% from which idle is advised."""
    folder = unpacked("ddp", tmp_path)
    source = str(folder / "deuteron.rank0.hatchet")
    profile = hatchet.read(source)
    (whole,) = [a for a in advise(profile) if a.kind == "idle"]
    assert whole.title.startswith("the GPU was idle 67% (advised from 10%) over the whole process")
    assert whole.evidence[0] == {
        "path": "whole process",
        "busy_ms": 260.558,
        "window_ms": 779.33,
        "idle": "67%",
    }
    assert not [a for a in advise(profile, source=source) if a.kind == "idle"]
    kinds = {a.kind for a in advise(profile, source=source)}
    assert "fusion" not in kinds  # embedding's backward sorts with CUB: a library call
