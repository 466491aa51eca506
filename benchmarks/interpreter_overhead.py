"""What ``deuteron run`` (interpreter backend) adds to kernels run in Triton's interpreter.

Why this exists: without a GPU, Deuteron profiles by running kernels in Triton's interpreter
and counting every global load, store and ``tl.dot`` as it happens. That counting must not
make the (already slow) interpreter much slower, or nobody will profile with it. This script
compares, on the same child script (``benchmarks/_interp_child.py``):

* plain:    ``TRITON_INTERPRET=1 python _interp_child.py WORKLOAD``
* profiled: ``python -m deuteron run -b interpreter -n NAME _interp_child.py WORKLOAD``
  (cwd a temporary directory, so NAME.hatchet lands there; the profile is checked afterwards
  to hold one kernel launch per launch the child made)

for two workloads: a vector add of 1M float32 elements (BLOCK 1024) and a 256x256x256 float32
blocked matmul (BM = BN = BK = 32, masked). Every measurement is a fresh subprocess; plain and
profiled runs are interleaved (the order alternates from one repeat to the next). The number
compared is the kernel time measured inside the child: one warm-up launch, then ``--launches``
launches timed with ``time.perf_counter`` (the child prints it as JSON). Start-up, imports and
writing the profile are not in it. The median over ``--repeats`` runs is reported.

Target: profiled / plain <= 1.2 for both workloads (ratio of medians).

Usage: ``python benchmarks/interpreter_overhead.py [--repeats R] [--launches L] [--only W] [--no-check]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import deuteron
from deuteron.formats import hatchet
from deuteron.model.tree import KERNEL

CHILD = Path(__file__).resolve().parent / "_interp_child.py"
TARGET_RATIO = 1.2
WORKLOADS: dict[str, list[str]] = {
    "vector_add": ["vector_add", "--n", "1000000", "--block", "1024"],
    "matmul": ["matmul", "--size", "256", "--block", "32"],
}
DESCRIPTIONS = {"vector_add": "vector add, 1M fp32, BLOCK 1024", "matmul": "matmul 256^3 fp32, 32x32x32"}


@dataclass
class Series:
    """Per-launch seconds from each run of one (workload, variant), plus the runs' wall times."""

    per_launch: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.per_launch)


def _base_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("DEUTERON_DISABLE", "TRITON_INTERPRET")}


def _run_child(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[dict[str, Any], float]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr.strip()}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"{' '.join(cmd)} printed no JSON result:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(lines[-1]), wall


def _check_profile(path: Path, expected_launches: int) -> None:
    """The profiled run must really have profiled: every launch (warm-up included) is in the file."""
    profile = hatchet.read(path)
    launches = sum(int(n.metrics.get("count", 0)) for n in profile.root.walk() if n.type == KERNEL)
    if launches != expected_launches:
        raise RuntimeError(f"{path}: {launches} kernel launches recorded, expected {expected_launches}")


def measure(workload: str, repeats: int, launches: int, tmp: Path) -> tuple[Series, Series]:
    plain, profiled = Series(), Series()
    args = [*WORKLOADS[workload], "--launches", str(launches)]
    env_plain = {**_base_env(), "TRITON_INTERPRET": "1"}
    env_profiled = _base_env()
    for r in range(repeats):
        order = ("plain", "profiled") if r % 2 == 0 else ("profiled", "plain")
        for variant in order:
            if variant == "plain":
                result, wall = _run_child([sys.executable, str(CHILD), *args], tmp, env_plain)
                if result.get("profiled"):
                    raise RuntimeError("the plain run imported deuteron")
                series = plain
            else:
                name = f"bench_{workload}_{r}"
                cmd = [
                    sys.executable,
                    "-m",
                    "deuteron",
                    "run",
                    "-b",
                    "interpreter",
                    "-n",
                    name,
                    str(CHILD),
                    *args,
                ]
                result, wall = _run_child(cmd, tmp, env_profiled)
                if not result.get("profiled"):
                    raise RuntimeError("the profiled run did not import deuteron")
                _check_profile(tmp / f"{name}.hatchet", launches + 1)
                series = profiled
            series.per_launch.append(float(result["seconds_per_launch"]))
            series.wall.append(wall)
            print(
                f"  {workload:<10} repeat {r + 1}/{repeats} {variant:<8} "
                f"{float(result['seconds_per_launch']):.3f} s/launch  (process wall {wall:.1f} s)",
                file=sys.stderr,
                flush=True,
            )
    return plain, profiled


def print_table(rows: list[tuple[str, Series, Series]], repeats: int, launches: dict[str, int]) -> bool:
    print(f"deuteron {deuteron.__version__}, Python {platform.python_version()} on {platform.machine()}")
    print(
        f"{repeats} fresh processes per variant, interleaved; each times its launches after 1 warm-up; "
        "seconds per launch (median [min-max])"
    )
    header = (
        f"{'workload':<34}  {'launches':>8}  {'plain s':>22}  {'profiled s':>22}  "
        f"{'ratio':>6}  {'target':>7}  status"
    )
    print(header)
    all_ok = True
    target = f"<= {TARGET_RATIO:g}"

    def cell(s: Series) -> str:
        return f"{s.median:.3f} [{min(s.per_launch):.3f}-{max(s.per_launch):.3f}]"

    for workload, plain, profiled in rows:
        ratio = profiled.median / plain.median
        ok = ratio <= TARGET_RATIO
        all_ok &= ok
        status = "ok" if ok else "MISSED"
        print(
            f"{DESCRIPTIONS[workload]:<34}  {launches[workload]:>8}  "
            f"{cell(plain):>22}  {cell(profiled):>22}  {ratio:>5.2f}x  {target:>7}  {status}"
        )
    walls = ", ".join(
        f"{w}: plain {statistics.median(p.wall):.1f} s, profiled {statistics.median(q.wall):.1f} s"
        for w, p, q in rows
    )
    print(f"median process wall time (start-up + imports + launches + writing the profile): {walls}")
    return all_ok


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per variant (default 5)")
    parser.add_argument("--launches", type=int, default=3, help="timed launches per process (default 3)")
    parser.add_argument(
        "--matmul-launches",
        type=int,
        default=None,
        help="timed launches for the matmul (default: --launches)",
    )
    parser.add_argument("--only", choices=sorted(WORKLOADS), action="append", help="run only this workload")
    parser.add_argument("--no-check", action="store_true", help="always exit 0, even if the target is missed")
    args = parser.parse_args()
    if args.repeats < 1 or args.launches < 1:
        parser.error("--repeats and --launches must be at least 1")
    workloads = args.only or list(WORKLOADS)
    launches = {w: args.launches for w in WORKLOADS}
    if args.matmul_launches is not None:
        launches["matmul"] = args.matmul_launches

    t0 = time.perf_counter()
    rows: list[tuple[str, Series, Series]] = []
    with tempfile.TemporaryDirectory(prefix="deuteron-interp-bench-") as tmp:
        for workload in workloads:
            plain, profiled = measure(workload, args.repeats, launches[workload], Path(tmp))
            rows.append((workload, plain, profiled))
    ok = print_table(rows, args.repeats, launches)
    print(f"total benchmark time {time.perf_counter() - t0:.0f} s")
    if not ok and not args.no_check:
        print(f"target missed: a profiled/plain ratio is above {TARGET_RATIO:g}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
