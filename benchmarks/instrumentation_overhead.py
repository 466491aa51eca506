"""What instrumenting kernels costs, Deuteron against Proton, in one run of interleaved rounds.

Each round runs one child process per tool (``deuteron`` through ``import deuteron as proton``, and
Triton's own ``triton.profiler``), alternating which goes first. A child does what Proton's own
overhead test does: a timing session (CUPTI) stays on throughout; the two overhead kernels (one
scope around a 16-step load/store loop, and the same with a scope per step: 16 more) run
``--launches`` times each, first plain, then with an instrumentation session on beside the timing
one; the kernels' mean GPU time comes from the timing session's own file. It also times a
1,000-launch instrumented session: the run's wall time, ``finalize()`` and the written file.

    python benchmarks/instrumentation_overhead.py --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, os, sys, time
import torch, triton, triton.language as tl
impl = sys.argv[1]
if impl == "proton":
    import triton.profiler as proton, triton.profiler.language as pl
else:
    import deuteron as proton, deuteron.language as pl
pl.enable_semantic("triton")
out, launches = sys.argv[2], int(sys.argv[3])

@triton.jit
def kernel(x_ptr, y_ptr, BLOCK_SIZE: tl.constexpr, LOOP: tl.constexpr):
    pl.enter_scope("kernel")
    for _ in range(16):
        if LOOP:
            pl.enter_scope("loop")
        x = tl.load(x_ptr + tl.arange(0, BLOCK_SIZE))
        tl.store(y_ptr + tl.arange(0, BLOCK_SIZE), x + 1)
        if LOOP:
            pl.exit_scope("loop")
    pl.exit_scope("kernel")

x = torch.zeros(256, device="cuda"); y = torch.zeros_like(x)
def bench():
    for _ in range(launches):
        with proton.scope("single"):
            kernel[(1024,)](x, y, 256, False)
        with proton.scope("loop"):
            kernel[(1024,)](x, y, 256, True)
bench()
proton.start(f"{out}/time")
with proton.scope("plain"):
    bench()
mode = proton.mode.Default(metric_type="cycle", buffer_size=4096)
proton.start(f"{out}/cycles", backend="instrumentation", mode=mode)
with proton.scope("instrumented"):
    bench()
proton.finalize()

tree = json.load(open(f"{out}/time.hatchet"))[0]
def child(node, name):
    return next(c for c in node["children"] if c["frame"]["name"] == name)
times = {}
for phase in ("plain", "instrumented"):
    for k in ("single", "loop"):
        m = child(child(child(tree, phase), k), "kernel")["metrics"]
        times[f"{phase}/{k}"] = m["time (ns)"] / m["count"]

proton.start(f"{out}/many", backend="instrumentation")
t0 = time.perf_counter()
for _ in range(1000):
    kernel[(132,)](x, y, 256, True)
t1 = time.perf_counter()
proton.finalize()
t2 = time.perf_counter()
print(json.dumps({"impl": impl, **times, "launch_1000_s": t1 - t0, "finalize_1000_s": t2 - t1,
                  "file_1000_bytes": os.path.getsize(f"{out}/many.hatchet")}))
"""


def run_child(impl: str, launches: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "child.py"
        script.write_text(CHILD)
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        proc = subprocess.run(
            [sys.executable, str(script), impl, tmp, str(launches)],
            capture_output=True, text=True, env=env, timeout=600,
        )  # fmt: skip
        if proc.returncode != 0:
            raise SystemExit(f"{impl} child failed:\n{proc.stderr[-2000:]}")
        result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
        return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--launches", type=int, default=20, help="launches of each kernel per phase")
    args = parser.parse_args()
    rows: list[dict[str, float]] = []
    began = time.perf_counter()
    for r in range(args.rounds):
        order = ("deuteron", "proton") if r % 2 == 0 else ("proton", "deuteron")
        for impl in order:
            row = run_child(impl, args.launches)
            rows.append(row)
            print(
                f"round {r + 1} {impl:8s} single {row['instrumented/single'] / row['plain/single']:.3f}x "
                f"loop {row['instrumented/loop'] / row['plain/loop']:.3f}x  "
                f"1000 launches: run {row['launch_1000_s']:.2f} s, finalize {row['finalize_1000_s']:.3f} s, "
                f"file {row['file_1000_bytes'] / 1e3:.1f} kB",
                flush=True,
            )
    print(f"\nmedians over {args.rounds} rounds ({time.perf_counter() - began:.0f} s):")
    for impl in ("deuteron", "proton"):
        mine = [r for r in rows if r["impl"] == impl]
        single = statistics.median(r["instrumented/single"] / r["plain/single"] for r in mine)
        loop = statistics.median(r["instrumented/loop"] / r["plain/loop"] for r in mine)
        fin = statistics.median(r["finalize_1000_s"] for r in mine)
        run = statistics.median(r["launch_1000_s"] for r in mine)
        print(
            f"  {impl:8s} single {single:.3f}x  loop {loop:.3f}x  "
            f"1000 launches {run:.2f} s, finalize {fin:.3f} s"
        )


if __name__ == "__main__":
    main()
