"""Run one benchmark script from two checkouts of Deuteron, alternately, to compare versions.

Why this exists: a change that must not cost speed (a refactor, say) is judged against the code
before it, on the same machine in the same hour. Noise on a shared machine is larger than the
differences that matter, so the two checkouts run in turns (A B B A A B ...) rather than one
after the other, and each run's own output is printed whole for the record.

Each run is ``python BENCHMARK ARGS`` from the checkout's ``benchmarks/`` folder, with the
checkout as the working folder and first on ``PYTHONPATH``, so each version uses its own
benchmark script (their imports differ between versions) and its own package.

Usage: ``python benchmarks/versions.py --base /path/to/old/checkout [--rounds 3] SCRIPT [ARGS...]``
(``--head`` defaults to this checkout). Make the old checkout with ``git worktree add DIR REV``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def run(checkout: Path, script: str, args: list[str]) -> tuple[float, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(checkout) + os.pathsep + env.get("PYTHONPATH", "")
    began = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(checkout / "benchmarks" / script), *args],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
    )
    took = time.perf_counter() - began
    out = proc.stdout + (f"\n[stderr]\n{proc.stderr[-2000:]}" if proc.returncode else "")
    return took, f"(exit {proc.returncode}, {took:.1f} s)\n{out.strip()}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", type=Path, required=True, help="the checkout to compare against")
    parser.add_argument("--head", type=Path, default=HERE, help="the checkout under test (default: this one)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each checkout (default 3)")
    parser.add_argument("script", help="a script in benchmarks/, e.g. scope_overhead.py")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    a = parser.parse_args()
    for checkout in (a.base, a.head):
        if not (checkout / "benchmarks" / a.script).is_file():
            parser.error(f"{checkout}/benchmarks/{a.script} does not exist")
    order = []
    for i in range(a.rounds):  # A B, B A, A B, ...: neither side always runs first
        order += [("base", a.base), ("head", a.head)] if i % 2 == 0 else [("head", a.head), ("base", a.base)]
    for label, checkout in order:
        _, text = run(checkout, a.script, a.args)
        print(f"=== {label} ({checkout}) {text}\n", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
