"""A real DDP job over NCCL on two GPUs (the GPU twin of test_torchrun.py): rank 1 gets twice the
tokens (a model wide enough that the GPUs, not the CPUs, set the pace); the view names it from
NCCL's own timings, and the ranks' traces share one clock with
their collectives linked. Skipped with fewer than two GPUs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import free_port, run_cli
from tests.helpers.paths import REPO

pytestmark = pytest.mark.slow


def _gpus() -> int:
    try:
        import torch

        return int(torch.cuda.device_count())
    except Exception:  # no torch or no driver: no GPUs
        return 0


def test_a_ddp_straggler_on_two_gpus_is_named_and_its_traces_share_a_clock(tmp_path: Path) -> None:
    if _gpus() < 2:
        pytest.skip("needs two GPUs")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
    env.update(PYTHONPATH=str(REPO), TORCH_NCCL_ENABLE_TIMING="1", NCCL_NVLS_ENABLE="0")
    env.update(TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
    job = str(REPO / "benchmarks" / "ddp_job.py")
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port",
         str(free_port()), "-m", "deuteron", "run", "-c", "torch", "--trace", job, "--steps", "2",
         "--layers", "2", "--hidden", "1024", "--seq", "2048", "--straggler", "1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    view = run_cli("view", "deuteron.rank0.hatchet", "deuteron.rank1.hatchet", "--advise", cwd=tmp_path)
    assert view.returncode == 0, view.stderr
    assert "[straggler] rank 1 is the straggler" in view.stdout
    waits = next(line for line in view.stdout.splitlines() if line.startswith("[waits]"))
    assert waits.startswith("[waits] rank 1 holds the others up: it reaches")
    assert "GPU reached the call" in waits
    assert re.search(r"nccl:all_reduce .*busbw_gbs=", view.stdout)
    traces = ["deuteron.rank0.chrome_trace", "deuteron.rank1.chrome_trace"]
    shown = run_cli("serve", "--html", "job.html", *traces, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    joined = next(line for line in shown.stderr.splitlines() if line.startswith("deuteron serve: 2 ranks: "))
    agree = re.search(r"ends differ by ([\d.]+) µs", joined)
    assert agree is not None and float(agree[1]) < 50, joined
