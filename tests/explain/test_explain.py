"""``deuteron explain`` end to end on the CPU: real kernels, real cross-compiles, real processes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import torch

from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO

CORPUS = REPO / "tests" / "explain_corpus"
ON_GPU = torch.cuda.is_available()
ENV = {"TRITON_DEFAULT_FP_FUSION": "1", "COLUMNS": "200"}


def explain(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli("explain", *args, cwd=REPO, env={**ENV, **(env or {})}, timeout=600)


def explain_json(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "explain.json"
    proc = explain("--json", str(out), *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def findings(kernel: dict, kind: str) -> list[dict]:
    return [f for f in kernel["findings"] if f["kind"] == kind]


REQUIRED = {
    "name",
    "target",
    "num_warps",
    "num_stages",
    "registers",
    "spills",
    "shared_bytes",
    "occupancy",
    "sass",
    "findings",
}


@pytest.mark.parametrize(("target", "op"), [("cuda:90", "HGMMA"), ("cuda:80", "HMMA")])
def test_matmul_uses_tensor_cores(tmp_path: Path, target: str, op: str) -> None:
    report = explain_json(tmp_path, "--target", target, str(CORPUS / "matmul.py"))
    (k,) = report["kernels"]
    assert set(k) >= REQUIRED
    assert k["name"] == "matmul_kernel" and k["target"] == target
    assert k["sass"]["tensor_core_ops"].get(op, 0) > 0
    assert k["sass"]["tensor_core"] >= k["sass"]["tensor_core_ops"][op]
    assert k["num_warps"] == 4 and k["num_stages"] == 3
    assert 0 < k["registers"] <= 255 and k["spills"] == 0 and k["shared_bytes"] > 0
    occ = k["occupancy"]
    assert occ["warps_per_sm"] == occ["blocks_per_sm"] * 4 and occ["limiter"] in occ["blocks_by"]
    assert not findings(k, "no-tensor-cores") and not findings(k, "no-pipelining")
    assert all({"kind", "line", "message"} <= set(f) for f in k["findings"])


def test_fp32_ieee_dot_has_no_tensor_cores(tmp_path: Path) -> None:
    report = explain_json(tmp_path, "--target", "cuda:90", str(CORPUS / "dot_fp32.py"))
    (k,) = report["kernels"]
    assert k["sass"]["tensor_core"] == 0
    (f,) = findings(k, "no-tensor-cores")
    assert f["line"] == 13  # the tl.dot line
    assert "input_precision='ieee'" in f["message"] and "tf32" in f["message"]


def test_tile_too_big_spills(tmp_path: Path) -> None:
    report = explain_json(tmp_path, "--target", "cuda:90", str(CORPUS / "spill.py"))
    (k,) = report["kernels"]
    assert k["spills"] > 0 and k["sass"]["local_stores"] > 0 and k["registers"] == 255
    (f,) = findings(k, "spill")
    assert f["line"] is not None and 10 <= f["line"] <= 14
    assert "halve BLOCK (16384 -> 8192)" in f["message"] and "num_warps from 4 to 8" in f["message"]
    low = findings(k, "low-occupancy")
    assert low and "registers" in low[0]["message"]


@pytest.mark.slow
def test_copy_loads_are_128_bit_only_when_the_offset_is_aligned(tmp_path: Path) -> None:
    aligned = explain_json(tmp_path, "--target", "cuda:90", str(CORPUS / "vector_copy.py"), "16")["kernels"][
        0
    ]
    unaligned = explain_json(tmp_path, "--target", "cuda:90", str(CORPUS / "vector_copy.py"), "3")["kernels"][
        0
    ]
    assert aligned["sass"]["global_loads"] == {"128-bit": 2}
    assert set(unaligned["sass"]["global_loads"]) == {"32-bit"}
    assert not findings(aligned, "unvectorized-load")
    (f,) = findings(unaligned, "unvectorized-load")
    assert f["line"] == 13  # x = tl.load(src + offset + offs)
    assert "`offset` = 3" in f["message"] and "tl.multiple_of(offset, 16)" in f["message"]
    assert "32-bit where 128-bit" in f["message"]
    assert "offset: i32 = 16 (divisible by 16)" in aligned["args"]


@pytest.mark.slow
def test_stage_and_line_mapping() -> None:
    ptx = explain(
        "--target", "cuda:90", "--stage", "ptx", "--line", "13", str(CORPUS / "vector_copy.py"), "3"
    )
    assert ptx.returncode == 0, ptx.stderr
    rows = [r for r in ptx.stdout.splitlines() if " | " in r]
    assert rows and all(r.split(" | ")[0].strip() == "13" for r in rows)
    assert sum("ld.global.b32" in r for r in rows) == 8 and not any("st.global" in r for r in rows)
    sass = explain("--target", "cuda:90", "--stage", "sass", "--line", "14", str(CORPUS / "vector_copy.py"))
    rows = [r for r in sass.stdout.splitlines() if " | " in r]
    assert sum("STG.E.128" in r for r in rows) == 2 and not any("LDG" in r for r in rows)
    every = explain("--target", "cuda:90", "--line", "14", str(CORPUS / "vector_copy.py"))
    for stage in ("ttir", "ttgir", "llir", "ptx", "sass"):
        assert f"copy_kernel cuda:90 {stage}, source line 14: tl.store(dst + offs, x)" in every.stdout
    assert "tt.store" in every.stdout


@pytest.mark.slow
def test_passes_list_and_one_pass_before_after() -> None:
    listing = explain("--passes", str(CORPUS / "vector_copy.py"))
    assert listing.returncode == 0, listing.stderr
    assert "TritonGPUCoalesce" in listing.stdout and "TritonGPURemoveLayoutConversions" in listing.stdout
    one = explain("--pass", "TritonGPUCoalesce", str(CORPUS / "vector_copy.py"))
    assert one.returncode == 0, one.stderr
    added = [r for r in one.stdout.splitlines() if r.startswith("+") and not r.startswith("+++")]
    assert any("sizePerThread = [4]" in r for r in added)  # coalescing gives each thread 4 floats
    bad = explain("--pass", "NoSuchPass", str(CORPUS / "vector_copy.py"))
    assert bad.returncode == 2 and "no pass 'NoSuchPass' ran" in bad.stderr


def test_no_pipelining_finding_at_the_loop(tmp_path: Path) -> None:
    report = explain_json(tmp_path, "--target", "cuda:90", str(CORPUS / "matmul.py"), "1")
    (k,) = report["kernels"]
    (f,) = findings(k, "no-pipelining")
    assert f["line"] == 31 and "num_stages=3" in f["message"]


def test_compile_error_is_one_line_at_the_source_line() -> None:
    proc = explain(str(CORPUS / "compile_error.py"))
    assert proc.returncode == 2
    if not ON_GPU:  # the interpreter runs the kernel, so the script ends well; a real launch raises
        assert "ran in the interpreter" in proc.stdout and "Traceback" not in proc.stderr
    lines = [r for r in proc.stderr.splitlines() if r.startswith("deuteron: error:")]
    assert len(lines) == 1
    assert "compile_error.py:14:" in lines[0] and "SCALE" in lines[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--target", "cuda:75"], "unknown target 'cuda:75'"),
        (["--target", "tpu:4"], "unknown target 'tpu:4'"),
        (["--line", "0"], "--line must be 1 or more"),
        (["--device", "h100"], "--device only applies with --profile"),
        (["--json", "/no/such/folder/x.json"], "folder /no/such/folder does not exist"),
        (["--profile", "/no/such.hatchet"], "no such file"),
    ],
)
def test_bad_options_are_one_line(args: list[str], message: str) -> None:
    proc = explain(*args, str(CORPUS / "vector_copy.py"))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("deuteron: error:")
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_no_kernel_launched() -> None:
    proc = explain(str(CORPUS / "no_kernel.py"))
    assert proc.returncode == 2
    assert "no Triton kernel was launched" in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout.strip() == "6"  # the script ran


def test_a_kernel_warmed_up_to_size_its_grid_still_launches() -> None:
    # Triton's tutorial 02 sizes its persistent grid from kernel.warmup(...)'s n_regs and shared memory
    proc = explain(str(CORPUS / "warmed_up_grid.py"))
    assert proc.returncode == 0, proc.stderr
    assert "doubled 21000 floats" in proc.stdout and "Traceback" not in proc.stderr
    assert "persistent_rows_kernel" in proc.stdout and "1 launch" in proc.stdout


def test_profile_ranks_kernels_by_opportunity(tmp_path: Path) -> None:
    run = run_cli(
        "run",
        "-b",
        "interpreter",
        "-n",
        "prof",
        str(CORPUS / "vector_copy.py"),
        "3",
        cwd=tmp_path,
        env=ENV,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    from deuteron.formats import hatchet

    profile = hatchet.read(tmp_path / "prof.hatchet")
    recorded = [n for n in profile.root.walk() if n.name == "copy_kernel"]
    assert recorded
    report = explain_json(
        tmp_path,
        "--profile",
        str(tmp_path / "prof.hatchet"),
        "--device",
        "h100",
        str(CORPUS / "vector_copy.py"),
        "3",
    )
    (k,) = report["kernels"]
    cost = k["profile"]
    assert cost["count"] == 1 and cost["time_ns"] == pytest.approx(recorded[0].metrics["time (ns)"])
    assert cost["bytes"] == 2 * 4096 * 4  # the interpreter counts exact bytes: 4096 floats in, 4096 out
    assert cost["bound"] == "memory" and 0 <= cost["util"] < 1
    assert report["ranking"][0]["name"] == "copy_kernel" and report["ranking"][0]["launched"]
    assert cost["opportunity_ns"] == pytest.approx(cost["time_ns"] * (1 - cost["util"]))


def test_amd_target_when_the_wheel_has_it(tmp_path: Path) -> None:
    from triton.backends import backends

    if "amd" not in backends:
        pytest.skip("this triton wheel has no AMD backend")
    report = explain_json(tmp_path, "--target", "hip:gfx942", str(CORPUS / "vector_copy.py"))
    (k,) = report["kernels"]
    assert k["target"] == "hip:gfx942" and k["registers"] > 0 and k["spills"] == 0
    assert "amdgcn" in k["stages"] and "sass" not in k["stages"] and k["sass"] is None


@pytest.mark.slow
def test_source_lines_survive_the_triton_cache(tmp_path: Path) -> None:
    """Triton's cache is keyed on source text: a kernel cached from another file (or by a --passes
    run, or without line info) must still map to this file's lines."""
    env = {"TRITON_CACHE_DIR": str(tmp_path / "cache")}
    script = str(CORPUS / "vector_copy.py")
    twin = tmp_path / "twin_copy.py"
    twin.write_text((CORPUS / "vector_copy.py").read_text())
    assert explain("--passes", script, "3", env=env).returncode == 0
    assert explain(str(twin), "3", env=env).returncode == 0
    for extra in ({}, {"TRITON_DISABLE_LINE_INFO": "1"}):
        proc = explain("--json", str(tmp_path / "e.json"), script, "3", env={**env, **extra})
        assert proc.returncode == 0, proc.stderr
        (k,) = json.loads((tmp_path / "e.json").read_text())["kernels"]
        assert [f["line"] for f in findings(k, "unvectorized-load")] == [13]
        assert {"11", "12", "13", "14"} <= set(k["source_map"]) and k["file"] == script


def test_autotuned_tuple_and_shifted_kernels(tmp_path: Path) -> None:
    report = explain_json(tmp_path, "--target", "cuda:80", str(CORPUS / "assorted.py"))
    by_name: dict[str, list[dict]] = {}
    for k in report["kernels"]:
        by_name.setdefault(k["name"], []).append(k)
    # without a GPU the autotuner runs each config once (captured), then the chosen one again
    tuned = sorted(by_name["tuned_scale_kernel"], key=lambda k: k["num_warps"])
    assert [k["num_warps"] for k in tuned] == [2, 4]
    assert {a for k in tuned for a in k["args"] if a.startswith("BLOCK")} == {"BLOCK=256", "BLOCK=512"}
    (pair,) = by_name["pair_add_kernel"]
    assert pair["sass"]["global_loads"] == {"128-bit": 4}  # both tuple members are aligned
    (shifted,) = by_name["shifted_copy_kernel"]
    (f,) = findings(shifted, "unvectorized-load")
    assert f["line"] == 29 and "`off` = 3" in f["message"]  # not `one`, which Triton made a constexpr
    (gather,) = by_name["gather_kernel"]
    assert not findings(gather, "unvectorized-load")  # a gather's addresses are data: no advice to give


@pytest.mark.slow
def test_layout_conversion_through_shared_memory(tmp_path: Path) -> None:
    report = explain_json(tmp_path, "--target", "cuda:90", str(CORPUS / "transpose.py"))
    (k,) = report["kernels"]
    (f,) = findings(k, "layout-conversion")
    assert f["line"] == 15 and "through shared memory (16384 bytes" in f["message"]
    matmul = explain_json(tmp_path, "--target", "cuda:90", str(CORPUS / "matmul.py"))["kernels"][0]
    assert not findings(matmul, "layout-conversion")  # the accumulator's one-time epilogue conversion


@pytest.mark.slow
def test_causes_name_only_the_arguments_that_feed_each_address(tmp_path: Path) -> None:
    """A grouped GEMM swizzles program ids over M and N and wraps rows with % M: neither can misalign
    the A tile's rows (only stride_am can) or split its vectors (only the K mask can)."""
    report = explain_json(tmp_path, "--target", "cuda:90", str(CORPUS / "grouped_matmul.py"))
    (k,) = report["kernels"]
    by_line = {f["line"]: f["message"] for f in k["findings"] if f["kind"].startswith("unvectorized")}
    a_load, b_load, store = by_line[31], by_line[32], by_line[40]
    assert "stride_am" in a_load and "`K` = 200" in a_load
    assert "`M`" not in a_load and "`N`" not in a_load
    assert "stride_bk" in b_load and "`N` = 520" in b_load  # the column index is taken % N
    assert "`K`" not in b_load and "`M`" not in b_load  # B's K mask is along its rows
    assert "stride_cm" in store and "`N` = 520" in store and "`M`" not in store


def test_low_occupancy_advice_for_a_wgmma_gemm(tmp_path: Path) -> None:
    report = explain_json(tmp_path, "--target", "cuda:90", str(CORPUS / "grouped_matmul.py"))
    (k,) = report["kernels"]
    assert k["spills"] > 0 and findings(k, "spill")
    (occ,) = findings(k, "low-occupancy")
    assert occ["severity"] == "info"
    assert "expected for a wgmma pipeline" in occ["message"]
    assert "raise num_warps from 4 to 8" in occ["message"]
    assert "maxnreg" not in occ["message"]  # it spills already: capping registers would spill more


def test_tensor_cores_are_judged_from_the_ops_the_compiler_chose(tmp_path: Path) -> None:
    """Dots inside a helper called from a loop: wgmma everywhere, whatever lines ptxas tags them with."""
    report = explain_json(tmp_path, "--target", "cuda:90", str(CORPUS / "attention_bwd.py"))
    (k,) = report["kernels"]
    assert k["sass"]["tensor_core_ops"].get("HGMMA", 0) > 0
    assert not findings(k, "no-tensor-cores")
    keys = [(f["kind"], f["line"]) for f in k["findings"]]
    assert len(keys) == len(set(keys))


def test_one_finding_per_line_when_a_helper_is_inlined_twice(tmp_path: Path) -> None:
    report = explain_json(tmp_path, "--target", "cuda:90", str(CORPUS / "dot_helper_twice.py"))
    (k,) = report["kernels"]
    (f,) = findings(k, "no-tensor-cores")
    assert f["line"] == 11 and "input_precision='ieee'" in f["message"]


def test_tritons_fp_fusion_notice_is_not_shown(tmp_path: Path) -> None:
    """Triton 3.9 warns once when options are first parsed and TRITON_DEFAULT_FP_FUSION is unset;
    explain's own compiles are not the user's, so a user who never set it sees no such notice."""
    assert "TRITON_DEFAULT_FP_FUSION" not in os.environ  # the suite's own environment leaves it unset
    proc = run_cli("explain", str(CORPUS / "vector_copy.py"), "3", cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "copy_kernel" in proc.stdout
    assert "TRITON_DEFAULT_FP_FUSION" not in proc.stderr, proc.stderr
