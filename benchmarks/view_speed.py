"""How long ``deuteron view`` takes on a large (100 000-node) profile.

Why this exists: long training runs with many scopes and kernels produce profiles with tens of
thousands of frames, and ``deuteron view`` must stay interactive on them. This script builds a
synthetic profile of exactly ``--nodes`` tree nodes (ROOT included; the file carries one more,
Deuteron's metadata frame, which the reader drops) shaped like a real run:

    ROOT > phase (scope) > layer (scope) > op (scope) > kernels (leaves)

with fan-out at every scope level and kernel leaves carrying "time (ns)", "count", "bytes" and
"flops". It writes the profile with ``deuteron.formats.hatchet.write`` into a temporary
directory, then measures

* the whole view: ``python -m deuteron view FILE -m time/ms,gbyte/s`` in a fresh subprocess,
  stdout to a file, wall time taken around the subprocess (best and median of ``--runs``);
* the load alone, in this process: ``deuteron.formats.hatchet.read`` (best and median);
* for information, the same view run in this process (no interpreter start-up) and the
  start-up floor (a fresh interpreter importing ``deuteron.cli``).

Target: the whole view (interpreter start, load and render) under 2 s (median).

Usage: ``python benchmarks/view_speed.py [--nodes N] [--runs R] [--keep DIR] [--no-check]``
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import deuteron
from deuteron.formats import hatchet
from deuteron.model.tree import KERNEL, Node, Profile

TARGET_S = 2.0
PHASES = 4  # forward, backward, optimizer, eval
LAYERS = 12  # layers per phase
OPS = 8  # op scopes per layer
KERNEL_NAMES = (
    "matmul_kernel",
    "flash_attn_fwd",
    "layernorm_fwd",
    "gelu_kernel",
    "softmax_kernel",
    "add_bias",
    "dropout_kernel",
    "reduce_sum",
    "copy_kernel",
    "rotary_embed",
)


def build_profile(total_nodes: int, seed: int = 0) -> Profile:
    """A tree of exactly ``total_nodes`` nodes (ROOT included): three scope levels, kernel leaves."""
    scopes = PHASES + PHASES * LAYERS + PHASES * LAYERS * OPS
    leaves = total_nodes - 1 - scopes
    if leaves < PHASES * LAYERS * OPS:
        raise ValueError(f"--nodes must be at least {1 + scopes + PHASES * LAYERS * OPS}")
    rng = random.Random(seed)
    profile = Profile()
    profile.metadata.update({"tool": "deuteron", "name": "synthetic", "backend": "synthetic"})
    op_nodes: list[Node] = []
    for p in range(PHASES):
        phase = profile.root.child(("forward", "backward", "optimizer", "eval")[p % 4] + f"_{p}")
        for layer_i in range(LAYERS):
            layer = phase.child(f"layer_{layer_i}")
            for o in range(OPS):
                op_nodes.append(layer.child(f"op_{o}"))
    # Spread the kernel leaves as evenly as possible over the op scopes.
    per_op, extra = divmod(leaves, len(op_nodes))
    for i, op in enumerate(op_nodes):
        for k in range(per_op + (1 if i < extra else 0)):
            name = f"{KERNEL_NAMES[k % len(KERNEL_NAMES)]}_{k}"
            node = op.child(name, KERNEL)
            count = rng.randint(1, 64)
            node.metrics.update(
                {
                    "time (ns)": count * rng.randint(2_000, 2_000_000),
                    "count": count,
                    "bytes": count * rng.randint(1 << 12, 1 << 28),
                    "flops": count * rng.randint(0, 1 << 34),
                }
            )
    n = profile.node_count()
    if n != total_nodes:
        raise AssertionError(f"built {n} nodes, wanted {total_nodes}")
    return profile


@dataclass
class Timing:
    what: str
    runs: list[float]
    target_s: float | None

    @property
    def best(self) -> float:
        return min(self.runs)

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    @property
    def ok(self) -> bool:
        return self.target_s is None or self.median < self.target_s


def time_view(path: Path, out_dir: Path, runs: int) -> tuple[Timing, int]:
    """Wall time of ``python -m deuteron view`` in fresh subprocesses; also the output's line count."""
    cmd = [sys.executable, "-m", "deuteron", "view", str(path), "-m", "time/ms,gbyte/s"]
    env = {k: v for k, v in os.environ.items() if k != "DEUTERON_DISABLE"}
    times: list[float] = []
    lines = 0
    for i in range(runs):
        out_path = out_dir / f"view_{i}.txt"
        with open(out_path, "w", encoding="utf-8") as out:
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, env=env, text=True, check=False)
            elapsed = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()}")
        times.append(elapsed)
        with open(out_path, encoding="utf-8") as f:
            lines = sum(1 for _ in f)
    return Timing("deuteron view (subprocess, load + render)", times, TARGET_S), lines


def time_load(path: Path, runs: int) -> Timing:
    times: list[float] = []
    for _ in range(runs):
        t0 = time.perf_counter()
        hatchet.read(path)
        times.append(time.perf_counter() - t0)
    return Timing("hatchet.read (in process, load only)", times, None)


def time_view_in_process(path: Path, out_dir: Path, runs: int) -> Timing:
    """The view's own work without interpreter start-up: ``deuteron.cli.main`` with stdout to a file."""
    from deuteron.cli import main as cli_main

    times: list[float] = []
    for i in range(runs):
        with open(out_dir / f"view_in_process_{i}.txt", "w", encoding="utf-8") as out:
            saved, sys.stdout = sys.stdout, out
            try:
                t0 = time.perf_counter()
                code = cli_main(["view", str(path), "-m", "time/ms,gbyte/s"])
                elapsed = time.perf_counter() - t0
            finally:
                sys.stdout = saved
        if code != 0:
            raise RuntimeError(f"deuteron view exited {code} in process")
        times.append(elapsed)
    return Timing("deuteron.cli.main view (in process, load + render)", times, None)


def time_startup(runs: int) -> Timing:
    """For context: a fresh interpreter that only imports the CLI (the floor under the view time)."""
    cmd = [sys.executable, "-c", "import deuteron.cli"]
    times: list[float] = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        times.append(time.perf_counter() - t0)
    return Timing("python -c 'import deuteron.cli' (startup floor)", times, None)


def print_table(
    timings: list[Timing], nodes: int, size: int, lines: int, gen_s: float, write_s: float
) -> None:
    print(f"deuteron {deuteron.__version__}, Python {platform.python_version()} on {platform.machine()}")
    print(
        f"profile: {nodes} nodes, {size / 1e6:.1f} MB on disk "
        f"(built in {gen_s:.2f} s, written in {write_s:.2f} s); view printed {lines} lines"
    )
    width = max(len(t.what) for t in timings)
    print(f"{'measurement':<{width}}  {'runs':>4}  {'best s':>7}  {'median s':>8}  {'target':>7}  status")
    for t in timings:
        target = f"< {t.target_s:g}" if t.target_s is not None else "-"
        status = ("ok" if t.ok else "MISSED") if t.target_s is not None else "info"
        print(f"{t.what:<{width}}  {len(t.runs):>4}  {t.best:>7.3f}  {t.median:>8.3f}  {target:>7}  {status}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--nodes", type=int, default=100_000, help="tree nodes, ROOT included (default 100000)"
    )
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each measurement (default 3)")
    parser.add_argument("--keep", metavar="DIR", help="write the profile and view outputs here and keep them")
    parser.add_argument("--no-check", action="store_true", help="always exit 0, even if the target is missed")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    with tempfile.TemporaryDirectory(prefix="deuteron-view-bench-") as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        try:
            profile = build_profile(args.nodes)
        except ValueError as exc:
            parser.error(str(exc))
        gen_s = time.perf_counter() - t0
        path = work / "synthetic.hatchet"
        t0 = time.perf_counter()
        hatchet.write(profile, path)
        write_s = time.perf_counter() - t0
        loaded = hatchet.read(path)  # also a correctness check of the round trip
        if loaded.node_count() != args.nodes:
            raise AssertionError(f"read back {loaded.node_count()} nodes, wrote {args.nodes}")
        del profile, loaded

        view, lines = time_view(path, work, args.runs)
        load = time_load(path, args.runs)
        in_process = time_view_in_process(path, work, args.runs)
        startup = time_startup(args.runs)
        print_table([view, in_process, load, startup], args.nodes, path.stat().st_size, lines, gen_s, write_s)

    if not view.ok and not args.no_check:
        print(
            f"target missed: deuteron view took {view.median:.3f} s (median) > {TARGET_S:g} s",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
