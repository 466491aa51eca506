"""Per-kernel costs from recorded profiles: Proton's own files, an interpreter run, and built trees."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

import deuteron
from deuteron.explain.roofline import kernel_costs, profile_device, ranked
from deuteron.formats import hatchet
from deuteron.model.devices import DeviceSpec, named_device
from deuteron.model.tree import KERNEL, STATE, Node, Profile
from deuteron.view.processors import inclusive
from tests.helpers import kernels as k
from tests.helpers.profiles import H200_TABLE, find

# Hand-computed H100 (SXM) peaks from its boost clock and memory interface.
H100_BYTES_PER_S = 2 * 5120 * 2619000e3 / 8  # 3.35232e12
H100_FP16_FLOPS = 132 / 114 * (1980e6 / 1755e6) * 1513e12 / 2  # ~988.25e12
H200_BYTES_PER_S = 2 * 6016 * 3201000e3 / 8  # 4.814304e12

FOREACH_MUL = (
    "_ZN2at6native57_GLOBAL__N__e658eeb9_24_ForeachBinaryOpScalar_cu_86b9896c25multi_tensor_apply_kernel"
    "INS1_18TensorListMetadataILi1EEENS1_21BinaryOpScalarFunctorIfLi1ELi1ELi0EEEJSt10multipliesIfEfEEEvT_T0_DpT1_"
)


def _kernel(parent: Node, name: str, **metrics: float) -> Node:
    node = parent.child(name, KERNEL)
    for metric, value in metrics.items():
        node.add(metric.replace("time_ns", "time (ns)"), value)
    return node


def _built(tmp_path: Path, devices: dict[str, dict[str, dict[str, object]]] | None = None) -> Profile:
    """A small recorded-shaped profile, written and read back as hatchet."""
    p = Profile(devices=devices or {})
    step = p.root.child("step")
    step.add("flops", 1e18)  # a scope's metric: never a kernel's
    gemm = _kernel(step, "gemm", time_ns=600_000, count=6, flops16=300e9, bytes=0.6e9)
    warm = gemm.child("warm", STATE)  # a state under the kernel holds part of its metrics
    warm.add("time (ns)", 400_000)
    warm.add("count", 4)
    warm.add("flops16", 200e9)
    warm.add("bytes", 0.4e9)
    _kernel(step, "copy", time_ns=300_000, count=1, flops=1e6, bytes=0.9e9)
    _kernel(p.root.child("eval"), "copy", time_ns=300_000, count=2, bytes=0.9e9)
    _kernel(p.root.child("eval"), "mystery", time_ns=200_000, count=1)
    return hatchet.read(hatchet.write(p, tmp_path / "built.hatchet"))


def test_proton_file_sums_a_kernel_over_its_call_paths(proton_fixtures: Path):
    costs = kernel_costs(hatchet.read(proton_fixtures / "proton_python.hatchet"), None)
    assert len(costs) == 25  # 26 kernel frames, one name twice
    mul = costs[FOREACH_MUL]
    assert (mul.time_ns, mul.count) == (25855 + 50304, 3 + 3)
    assert (costs["add_kernel"].time_ns, costs["add_kernel"].count) == (13027, 12)
    # Proton wrote no per-kernel work, so nothing is judged and time is the opportunity.
    assert all(
        c.flops is None and c.bytes is None and c.util is None and c.bound is None for c in costs.values()
    )
    assert mul.opportunity_ns == mul.time_ns


def test_proton_scope_metrics_are_not_a_kernels(proton_fixtures: Path):
    profile = hatchet.read(proton_fixtures / "proton_shadow.hatchet")
    costs = kernel_costs(profile, named_device("h100"))
    assert "train" not in costs  # the scope holding flops=1e9, bytes=2e6
    assert costs["add_kernel"].time_ns == 13120 and costs["add_kernel"].flops is None
    assert profile_device(profile) == named_device("h200")  # Proton's H200 row
    top = ranked(costs.values())[0]
    assert top.name.startswith("_ZN7cutlass7Kernel2I41cutlass_80_simt_sgemm_64x64_8x5_tn")
    assert top.time_ns == 163679


def test_interpreter_run_sums_paths_and_judges_against_the_given_device(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(tmp_path)
    with deuteron.profile("run", backend="interpreter", output_format="hatchet") as p:
        with deuteron.scope("a"):
            k.add(torch.rand(1000), torch.rand(1000))
            k.matmul(torch.rand(64, 64), torch.rand(64, 64))
        with deuteron.scope("b"):
            k.add(torch.rand(1000), torch.rand(1000))
    profile = hatchet.read(p.files[0])
    assert profile_device(profile) is None  # the interpreter records no device table
    costs = kernel_costs(profile, named_device("h100"))
    assert set(costs) == {"add_kernel", "matmul_kernel"}
    add = costs["add_kernel"]
    times = [float(find(profile, s, "add_kernel").metrics["time (ns)"]) for s in ("a", "b")]
    assert add.time_ns == sum(times) and add.count == 2
    assert add.bytes == 2 * 3 * 4 * 1000 and add.flops == 0  # two loads and a store of 1000 floats
    seconds = add.time_ns * 1e-9
    assert add.byte_util == pytest.approx(add.bytes / H100_BYTES_PER_S / seconds)
    assert add.gbytes_per_s == pytest.approx(add.bytes / seconds / 1e9)
    assert add.flop_util == 0 and add.bound == "memory"
    mm = costs["matmul_kernel"]
    assert mm.flops == 2 * 64**3 and mm.bound == "memory"  # 6.4 flop/byte, far below the fp32 ridge
    assert mm.opportunity_ns == pytest.approx(mm.time_ns * (1 - mm.util))  # type: ignore[operator]


def test_compute_and_memory_bound_and_unknown_kernels(tmp_path: Path):
    costs = kernel_costs(_built(tmp_path), named_device("h100"))
    assert set(costs) == {"gemm", "copy", "mystery"}

    gemm = costs["gemm"]  # 500 TFLOP/s of fp16 and 1 TB/s over 1 ms, state frame included
    assert (gemm.time_ns, gemm.count, gemm.flops, gemm.bytes) == (1e6, 10, 500e9, 1e9)
    assert gemm.tflops_per_s == pytest.approx(500) and gemm.gbytes_per_s == pytest.approx(1000)
    assert gemm.flop_util == pytest.approx(500e12 / H100_FP16_FLOPS)  # ~0.506
    assert gemm.byte_util == pytest.approx(1e12 / H100_BYTES_PER_S)  # ~0.298
    assert gemm.util == gemm.flop_util and gemm.bound == "compute"
    assert gemm.opportunity_ns == pytest.approx(1e6 * (1 - 500e12 / H100_FP16_FLOPS))

    copy = costs["copy"]  # two call paths: 1.8 GB in 0.6 ms, plain flops taken as fp16
    assert (copy.time_ns, copy.count, copy.bytes, copy.flops) == (600_000, 3, 1.8e9, 1e6)
    assert copy.byte_util == pytest.approx(3e12 / H100_BYTES_PER_S)  # ~0.895
    assert copy.util == copy.byte_util and copy.bound == "memory"

    mystery = costs["mystery"]
    assert mystery.flops is None and mystery.bytes is None and mystery.tflops_per_s is None
    assert (mystery.util, mystery.bound, mystery.opportunity_ns) == (None, None, 200_000)

    assert [c.name for c in ranked(costs.values())] == ["gemm", "mystery", "copy"]
    assert json.loads(json.dumps(gemm.as_json()))["bound"] == "compute"


def test_ranking_ties_go_by_time_then_name(tmp_path: Path):
    base = kernel_costs(_built(tmp_path), None)["mystery"]
    tie = [
        dataclasses.replace(base, name="b", opportunity_ns=5.0, time_ns=10.0),
        dataclasses.replace(base, name="a", opportunity_ns=5.0, time_ns=10.0),
        dataclasses.replace(base, name="c", opportunity_ns=5.0, time_ns=20.0),
        dataclasses.replace(base, name="d", opportunity_ns=6.0, time_ns=1.0),
    ]
    assert [c.name for c in ranked(tie)] == ["d", "c", "a", "b"]


def test_the_profiles_own_device_wins(tmp_path: Path):
    with_table = _built(tmp_path, devices=H200_TABLE)
    assert profile_device(with_table) == named_device("h200")
    copy = kernel_costs(with_table, named_device("h100"))["copy"]
    assert copy.byte_util == pytest.approx(3e12 / H200_BYTES_PER_S)
    broken = _built(tmp_path, devices={"CUDA": {"0": {"arch": "90"}}})  # no model: the caller's device
    assert profile_device(broken) is None
    copy = kernel_costs(broken, named_device("h100"))["copy"]
    assert copy.byte_util == pytest.approx(3e12 / H100_BYTES_PER_S)


def test_a_device_without_a_model_leaves_those_fields_unknown(tmp_path: Path):
    profile = _built(tmp_path)
    turing = DeviceSpec("CUDA", "75", 72, 1770000, 7000000, 384)  # bandwidth model, no flop model
    gemm = kernel_costs(profile, turing)["gemm"]
    assert gemm.flop_util is None and gemm.byte_util == pytest.approx(1e12 / turing.peak_bytes_per_s())
    assert gemm.util == gemm.byte_util and gemm.bound is None  # its flops are known but cannot be judged
    other = DeviceSpec("HIP", "gfx1100", 96, 2500000, 1250000, 384)  # RDNA3: Proton has no model for it
    gemm = kernel_costs(profile, other)["gemm"]
    assert (gemm.flop_util, gemm.byte_util, gemm.util, gemm.opportunity_ns) == (None, None, None, 1e6)
    assert gemm.tflops_per_s == pytest.approx(500)  # rates need no device
    no_device = kernel_costs(profile, None)["copy"]
    assert (no_device.util, no_device.bound, no_device.opportunity_ns) == (None, None, 600_000)


def test_profiles_without_kernels_and_inclusive_trees(tmp_path: Path):
    scopes_only = Profile()
    scopes_only.root.child("train").add("flops", 1e9)
    assert kernel_costs(scopes_only, named_device("h100")) == {}
    with pytest.raises(ValueError, match="recorded tree"):
        kernel_costs(inclusive(_built(tmp_path)), None)
