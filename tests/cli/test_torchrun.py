"""A real job under torchrun (``python -m torch.distributed.run``) on the CPU: its ranks all-reduce
over gloo, each writes its own file with the job's id, and ``deuteron view`` reads them as one job;
the leftovers of an earlier job of more ranks in the same folder are refused, not merged."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from deuteron.formats import hatchet
from tests.helpers.cli import free_port, run_cli
from tests.helpers.paths import REPO

pytestmark = pytest.mark.slow

JOB = """
import torch, torch.distributed as dist, deuteron
dist.init_process_group("gloo")
x = torch.ones(1024) * (dist.get_rank() + 1)
with deuteron.scope("step"):
    y = (x * 2).sum()
    dist.all_reduce(x)
n = dist.get_world_size()
assert x[0].item() == n * (n + 1) / 2
dist.destroy_process_group()
"""


def _torchrun(folder: Path, ranks: int, *options: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(ranks),
         "--master_port", str(free_port()), "-m", "deuteron", "run", "-c", "torch", *options, "job.py"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_a_torchrun_jobs_ranks_are_one_job_and_an_earlier_jobs_are_refused(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text(JOB)
    _torchrun(tmp_path, 2)
    first = {r: hatchet.read(tmp_path / f"deuteron.rank{r}.hatchet").metadata for r in range(2)}
    _torchrun(tmp_path, 1)  # a second job: rank 0 is rewritten, rank 1 is the first job's
    second = hatchet.read(tmp_path / "deuteron.rank0.hatchet").metadata
    for meta, size in ((first[0], 2), (second, 1)):
        assert (meta["launcher"], meta["world_size"]) == ("torchrun", str(size))
        assert str(meta["job_id"]).startswith(f"torchrun:{socket.gethostname()}:")
    assert first[0]["job_id"] == first[1]["job_id"]  # one job: one id
    assert second["job_id"] != first[0]["job_id"]  # a new agent: a new job
    files = sorted(p.name for p in tmp_path.glob("deuteron.rank*.hatchet"))
    assert files == ["deuteron.rank0.hatchet", "deuteron.rank1.hatchet"]
    mixed = run_cli("view", *files, cwd=tmp_path)
    assert mixed.returncode == 2 and not mixed.stdout
    (said,) = mixed.stderr.strip().splitlines()
    assert said.startswith("deuteron: error: these files are from 2 jobs: deuteron.rank0.hatchet (job ")
    assert "deuteron.rank1.hatchet (job torchrun:" in said and said.endswith("view one job's files")
    ok = run_cli("view", files[0], cwd=tmp_path)  # the second job, whole
    assert ok.returncode == 0 and "step" in ok.stdout and not ok.stderr.strip(), ok.stderr


LATE = """
import time, torch, torch.distributed as dist, deuteron
dist.init_process_group("gloo")
x = torch.ones(1024)
for _ in range(4):
    if dist.get_rank() == 1:
        time.sleep(0.03)  # rank 1 is late to every call
    with deuteron.scope("step"):
        dist.all_reduce(x)
dist.destroy_process_group()
"""


def test_each_collective_is_matched_across_ranks_and_the_late_rank_named(tmp_path: Path) -> None:
    """torch's Flight Recorder, turned on by `deuteron run` in a rank, records every call; the
    view matches the calls across the ranks' files and names the rank the others wait for."""
    (tmp_path / "job.py").write_text(LATE)
    _torchrun(tmp_path, 2, "--trace")
    for r in range(2):
        calls = hatchet.read(tmp_path / f"deuteron.rank{r}.hatchet").metadata["collectives"]
        assert isinstance(calls, dict)
        assert calls["op"] == ["gloo:all_reduce"] * 4 and calls["seq"] == [1, 2, 3, 4]
        assert calls["in_bytes"] == [4096] * 4 and calls["dtype"] == ["Float"] * 4
    proc = run_cli("view", "deuteron.rank0.hatchet", "deuteron.rank1.hatchet", "--advise", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    waits = next(line for line in proc.stdout.splitlines() if line.startswith("[waits]"))
    assert waits.startswith("[waits] rank 1 holds the others up: it reaches 4 of 4 calls last, a median ")
    late = float(waits.split("a median ")[1].split(" ms")[0])
    assert 20 < late < 200, waits  # it slept 30 ms before each call
    assert (
        "[collectives] 4 collective calls of 2 ranks matched by process group and sequence number"
        in proc.stdout
    )
    assert "no durations, so the transfer is not known" in proc.stdout  # gloo times nothing
    row = re.search(
        r"gloo:all_reduce 4\.0 KiB Float  \(calls=4, total_bytes=16,384, wait_ms_median=([\d.]+)", proc.stdout
    )
    assert row is not None and 20 < float(row[1]) < 200, proc.stdout  # rank 0 waits for rank 1's sleep
    # The ranks' traces: one timeline on the host's clock, each all-reduce linked to rank 1's
    traces = ["deuteron.rank0.chrome_trace", "deuteron.rank1.chrome_trace"]
    shown = run_cli("serve", "--html", "job.html", *traces, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    joined = next(line for line in shown.stderr.splitlines() if line.startswith("deuteron serve: 2 ranks: "))
    assert f"one timeline: one host ({socket.gethostname()}): the ranks share its monotonic clock" in joined
    assert "checked against 4 collectives' ends" in joined and joined.endswith(
        "4 links between the ranks' collectives"
    )
