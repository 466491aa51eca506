"""The sanitizer's memory follows the elements a launch touches, not the tensors' sizes; device
asserts are findings. Large-tensor cases run in fresh processes and measure their peak RSS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from deuteron.check import shadow_memory as shadow_module
from deuteron.check.findings import Findings
from deuteron.check.memory import MemoryChecks
from deuteron.check.paged import Paged
from deuteron.model import access
from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO

PRELUDE = """
import json, os, resource, sys
sys.path.insert(0, {repo!r})
import torch, triton
import triton.language as tl

@triton.jit
def poke_kernel(x_ptr, offset, BLOCK: tl.constexpr):
    offs = offset + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.full((BLOCK,), 7, tl.int8))

@triton.jit
def rows_kernel(x_ptr, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = row * stride + tl.arange(0, BLOCK)   # int32: row * stride wraps past 2**31
    tl.store(x_ptr + offs, tl.full((BLOCK,), 1, tl.int8))

def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""


def _python(tmp_path: Path, body: str, check: bool) -> dict[str, object]:
    script = tmp_path / "mem.py"
    script.write_text(PRELUDE.format(repo=str(REPO)) + textwrap.dedent(body))
    env = {**os.environ, "PYTHONPATH": str(REPO), "TRITON_INTERPRET": "1"}
    cmd = (
        [sys.executable, "-m", "deuteron", "check", "--fail-on", "never", str(script)]
        if check
        else [sys.executable, str(script)]
    )
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["stderr"] = proc.stderr
    return out


SPARSE_STORE = """
x = torch.zeros(256 << 20, dtype=torch.int8)     # 256 MiB, touched by zeros() so plain pays for it too
poke_kernel[(1,)](x, 123_456_789, BLOCK=16)      # one 16-byte store
assert int(x[123_456_789:123_456_789 + 16].sum()) == 7 * 16
print(json.dumps({"peak_mib": peak_mib()}))
"""


@pytest.mark.slow
def test_a_small_store_into_a_large_tensor_costs_little(tmp_path: Path):
    plain = _python(tmp_path, SPARSE_STORE, check=False)
    checked = _python(tmp_path, SPARSE_STORE, check=True)
    assert "1 launch and 1 program checked: 0 errors, 0 warnings, 1 info" in checked["stderr"]
    assert "268435440 of 268435456 elements" in checked["stderr"]  # coverage, counted sparsely
    assert checked["peak_mib"] <= 2 * plain["peak_mib"], (plain, checked)


@pytest.mark.slow
def test_an_int32_wraparound_in_a_2_gib_tensor_is_found(tmp_path: Path):
    body = """
    x = torch.empty((2 << 30) + 4096, dtype=torch.int8)   # 2 GiB (not touched: the kernel touches 3 rows)
    stride = 3 << 29                                     # row 2 starts at 3 GiB: past 2**31, it wraps
    rows_kernel[(3,)](x, stride, BLOCK=64)
    print(json.dumps({"peak_mib": peak_mib()}))
    """
    checked = _python(tmp_path, body, check=True)
    err = checked["stderr"]
    assert "error   out-of-bounds  rows_kernel" in err and "e.g. program (2, 0, 0)" in err, err
    assert "x_ptr" in err
    assert checked["peak_mib"] < 2048, checked  # the 2 GiB tensor is never shadowed whole


def _launch(cells: int, granule: int = 1) -> access.LaunchInfo:
    start = 1 << 40
    storage = access.StorageArea(start=start, nbytes=cells * granule, granule=granule, tensors=(0,))
    tensor = access.TensorArg("x", (cells,), (1,), f"int{8 * granule}", granule, start, 0)
    return access.LaunchInfo(
        0,
        "k",
        "k.py",
        (2, 1, 1),
        [tensor],
        [storage],
        np.array([start], np.uint64),
        np.array([start + cells * granule], np.uint64),
    )


def _addresses(launch: access.LaunchInfo, cells: np.ndarray) -> np.ndarray:
    return (np.uint64(launch.storages[0].start) + cells.astype(np.uint64)).astype(np.uint64)


def test_races_across_pages_of_a_large_allocation(monkeypatch: pytest.MonkeyPatch):
    """Reads that pile up before the allocation is written are compacted into runs, folded only
    where it is written, and still give every race: a store/store clash far into the allocation,
    and a cell read by program 0 and stored by program 1."""
    monkeypatch.setattr(shadow_module, "PENDING_BUDGET", 1000)
    launch = _launch(1 << 30)  # a 1 GiB int8 allocation
    read_at, store_a, store_b = (
        launch.sites.intern(line, lambda line=line: access.Site("k.py", line, "k")) for line in (10, 20, 21)
    )
    findings = Findings()
    memory = MemoryChecks(findings)
    memory.begin(launch, [(0, 0, 0), (1, 0, 0)])
    memory.program(0)
    for block in range(20):  # 20 reads of 4096 consecutive cells each, all before any write
        lanes = _addresses(launch, np.arange(4096) + block * 50_000_000)
        memory.access(access.Access(access.LOAD, lanes, 1, read_at, storage=0))
    stray = _addresses(launch, np.array([900_000_000]))
    memory.access(access.Access(access.STORE, stray, 1, store_a, storage=0))
    shadow = memory.shadows[0]
    assert shadow.runs and shadow.memory() < 2 << 20  # compacted: runs, not lanes
    memory.program(1)
    memory.access(access.Access(access.STORE, stray, 1, store_a, storage=0))
    memory.access(
        access.Access(access.STORE, _addresses(launch, np.array([150_000_100])), 1, store_b, storage=0)
    )
    memory.finish()
    found = findings.all()
    races = sorted(
        (f.line, f.details["access"], f.details["element_offsets"][0]) for f in found if f.kind == "race"
    )
    assert races == [(20, "store/store", 900_000_000), (21, "load/store", 150_000_100)]
    (coverage,) = [f for f in found if f.kind == "store-coverage"]  # counted sparsely: 2 of 2**30 written
    assert coverage.details == {"unwritten": (1 << 30) - 2, "elements": 1 << 30, "first_unwritten": [0]}
    assert all(p.touched_pages <= 3 for p in (shadow.writes, shadow.reads) if p is not None)


def test_paged_arrays_match_a_dense_array():
    rng = np.random.default_rng(3)
    cells = 5_000_000
    paged = Paged(cells, {"v": (np.int32, -1)})
    dense = np.full(cells, -1, np.int32)
    for step in range(200):
        if step % 3:
            idx = rng.integers(0, cells, rng.integers(1, 500))
        else:
            start = int(rng.integers(0, cells - 2000))
            idx = np.arange(start, start + int(rng.integers(1, 2000)))
        pos = paged.locate(idx)  # before taking the pool: locating may grow it
        paged.pools["v"][pos] = step
        dense[idx] = step
        probe = rng.integers(0, cells, 1000)
        assert np.array_equal(paged.get("v", probe), dense[probe])
    assert np.array_equal(paged.dense("v"), dense)
    sparse = Paged(cells, {"v": (np.int32, -1)})
    sparse.locate(np.array([7, 4_999_999]))
    assert (sparse.touched_pages, sparse.pages) == (2, 77) and sparse.nbytes() < 1 << 20


COVERAGE = """
import deuteron
x = torch.empty(64 << 20, dtype=torch.float32)                   # 256 MiB
grid_2d = torch.empty((1 << 20, 64), dtype=torch.float32)[:, :60]  # a padded view
@triton.jit
def head_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0)
@triton.jit
def rows_of_view(x_ptr, stride, n_rows, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    tl.store(x_ptr + row * stride + cols, 2.0, mask=cols < 60)
with deuteron.check(raise_on=None) as checked:
    head_kernel[(4,)](x, BLOCK=256)
    rows_of_view[(6,)](grid_2d, grid_2d.stride(0), 6, BLOCK=64)
found = [(f.kind, f.tensor, f.details.get("unwritten"), f.details.get("first_unwritten"))
         for f in checked.report.findings]
print(json.dumps({"found": found, "peak_mib": peak_mib()}))
"""


@pytest.mark.slow
def test_coverage_of_a_few_elements_of_large_tensors_and_views(tmp_path: Path):
    out = _python(tmp_path, COVERAGE, check=False)
    assert sorted(map(tuple, out["found"])) == sorted(  # type: ignore[arg-type]
        [
            ("store-coverage", "x_ptr", (64 << 20) - 1024, [1024]),  # the flat tensor
            ("store-coverage", "x_ptr", (1 << 20) * 60 - 360, [6, 0]),  # the (1M, 60) view: rows 0-5 written
        ]
    )


ASSERTS = """
import torch, triton
import triton.language as tl

@triton.jit
def sqrt_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_assert(x >= 0, "sqrt of a negative number")
    tl.store(out_ptr + offs, tl.sqrt(tl.abs(x)))

x = torch.arange(-3.0, 253.0)   # the first program has 3 negative lanes
out = torch.empty_like(x)
sqrt_kernel[(2,)](x, out, BLOCK=128)
print("done", bool(torch.allclose(out, x.abs().sqrt())))
"""


def test_a_failing_device_assert_is_a_finding(tmp_path: Path):
    script = tmp_path / "asserts.py"
    script.write_text(textwrap.dedent(ASSERTS))
    proc = run_cli("check", "--json", "r.json", str(script), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "done True" in proc.stdout  # the launch went on to the end and computed its outputs
    (finding,) = json.loads((tmp_path / "r.json").read_text())["findings"]
    assert (finding["kind"], finding["severity"], finding["program"], finding["line"]) == (
        "assert",
        "error",
        [0, 0, 0],
        9,
    )
    assert "sqrt of a negative number" in finding["message"] and finding["details"]["lanes"] == 3
