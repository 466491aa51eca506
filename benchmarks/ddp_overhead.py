"""What ``deuteron run -c torch`` costs a DDP job on 2 GPUs, against the same job plain and under
torch.profiler, in interleaved rounds (one launch of ``torchrun --nproc_per_node 2`` per round and
way; the ways in a different order each round, so drift over the run falls on all alike).

    python benchmarks/ddp_overhead.py --rounds 3 --steps 20 [--json out.json]

Prints one row per round and way (rank 0's median ms/step after 3 warm-up steps), then each way's
median over the rounds and its ratio to plain. NCCL's NVLink multicast stays off (the device's
rule: NCCL_NVLS_ENABLE=0 and friends are kept in every launch's environment).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
JOB = str(HERE / "ddp_job.py")
WAYS = {
    "plain": [],
    "deuteron -c torch": ["-m", "deuteron", "run", "-c", "torch", "-n", "{out}/deuteron"],
    "torch.profiler": [],
}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _launch(way: str, steps: int, mode: str, out: str) -> float:
    env = dict(
        os.environ, NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1"
    )
    env["PYTHONPATH"] = str(HERE.parent) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        str(_port()),
    ]
    cmd += [a.format(out=out) for a in WAYS[way]]
    cmd += [JOB, "--mode", mode, "--steps", str(steps)]
    if way == "torch.profiler":
        cmd += ["--profiler", out]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"{way}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            return float(json.loads(line)["ms_per_step"])
    raise SystemExit(f"{way}: no result line\n{proc.stdout[-2000:]}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--mode", choices=("ddp", "fsdp2"), default="ddp")
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args()
    ways = list(WAYS)
    rows: dict[str, list[float]] = {w: [] for w in ways}
    with tempfile.TemporaryDirectory() as out:
        for r in range(args.rounds):
            order = ways[r % len(ways) :] + ways[: r % len(ways)]
            for way in order:
                ms = _launch(way, args.steps, args.mode, out)
                rows[way].append(ms)
                print(f"round {r + 1}  {way:<18} {ms:8.2f} ms/step", flush=True)
    base = statistics.median(rows["plain"])
    print(f"\n{args.mode}, 2 ranks, {args.steps} steps per launch, {args.rounds} rounds")
    for way in ways:
        med = statistics.median(rows[way])
        spread = f"{min(rows[way]):.2f}-{max(rows[way]):.2f}"
        print(f"{way:<18} median {med:8.2f} ms/step  (rounds {spread})  {med / base:.3f}x plain")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"mode": args.mode, "steps": args.steps, "rows": rows}, indent=1)
        )


if __name__ == "__main__":
    main()
