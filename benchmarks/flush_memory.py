"""Memory of a long run under ``deuteron run --flush-every``: RSS sampled while it trains.

A small transformer trains on the CPU (or a GPU with ``--device cuda``) for ``--minutes`` under
``deuteron run -c torch --trace`` with and without ``--flush-every``; the run's resident memory
(VmRSS of the profiled process, which is the program's own) is read every ``--every`` seconds.
With flushing the trace's spans and the tree's values leave memory at each flush, so RSS should
stay flat after warm-up; without it the trace's spans grow with the run.

    python benchmarks/flush_memory.py --minutes 20 --flush 30s
    python benchmarks/flush_memory.py --minutes 5 --flush none
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

WORKLOAD = textwrap.dedent(
    """
    import sys, time, torch
    from torch import nn
    device = sys.argv[2]
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    model = nn.Sequential(encoder, nn.Linear(64, 10)).to(device)
    opt = torch.optim.AdamW(model.parameters())
    x, y = torch.randn(8, 16, 64, device=device), torch.randint(0, 10, (8,), device=device)
    end = time.monotonic() + float(sys.argv[1])
    steps = 0
    while time.monotonic() < end:
        loss = nn.functional.cross_entropy(model(x).mean(1), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        steps += 1
    print("steps", steps, flush=True)
    """
)


def rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=20)
    parser.add_argument("--flush", default="30s", help="--flush-every's value, or 'none'")
    parser.add_argument("--every", type=float, default=30, help="seconds between RSS samples")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--trace", action="store_true", help="also write a trace (every op's span)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="flush_memory_"))
    (folder / "train.py").write_text(WORKLOAD)
    flush = [] if args.flush == "none" else ["--flush-every", args.flush]
    trace = ["--trace"] if args.trace else []
    command = [sys.executable, "-m", "deuteron", "run", "-c", "torch", *trace, *flush, "train.py"]
    command += [str(args.minutes * 60), args.device]
    began = time.monotonic()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    proc = subprocess.Popen(command, cwd=folder, env=env)
    print(f"# {' '.join(command[1:])} (in {folder})", flush=True)
    print("minute  rss_MiB", flush=True)
    while proc.poll() is None:
        time.sleep(args.every)
        rss = rss_kib(proc.pid)
        if rss is not None:
            print(f"{(time.monotonic() - began) / 60:6.1f}  {rss / 1024:7.1f}", flush=True)
    print(f"# exit {proc.returncode}; files: {sorted(p.name for p in folder.iterdir())}", flush=True)
    for p in sorted(folder.iterdir()):
        print(f"# {p.name}: {p.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
