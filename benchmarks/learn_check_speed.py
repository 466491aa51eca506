"""How long ``deuteron learn check`` takes for each exercise, as a learner waits for it.

Why this exists: the issue asks that checking any exercise take under 5 s on a 2-core laptop,
interpreter start included. Each exercise is checked as a fresh ``python -m deuteron learn
check N FILE`` process (what a learner types), on a passing kernel (the reference solution,
copied to a file as a learner's) and on the starter (failing: its findings and differences are
rendered too). Reported per exercise: the median wall time of ``--repeat`` runs of each, and the
part of it spent in the check itself (the verdict's own time: loading the kernel, every shape's
launch under the checker, the torch reference, the comparison). The rest is the process
start and the imports (torch alone is about 1.2 s of it). The machine's cores and the
Python, Triton and torch versions are printed first.

Usage: ``python benchmarks/learn_check_speed.py [--repeat N] [--only 3,11] [--limit 5]``
(exit 1 if any median is over ``--limit`` seconds)
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from deuteron.learn import all_exercises  # noqa: E402

CHECK_TIME = re.compile(r"shapes pass(?: \(([\d.]+) s\))?")


def run_once(number: int, file: Path, folder: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds of one check process, the check's own seconds (from its verdict), its exit code."""
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "deuteron", "learn", "check", str(number), str(file)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    wall = time.perf_counter() - started
    found = CHECK_TIME.search(proc.stdout)
    if proc.returncode not in (0, 1) or found is None or found.group(1) is None:
        raise SystemExit(
            f"exercise {number}: unexpected result ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
    return wall, float(found.group(1)), proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs of each check (default 3); the median is shown"
    )
    parser.add_argument("--only", default="", help="comma-separated exercise numbers (default: all)")
    parser.add_argument("--limit", type=float, default=5.0, help="seconds a median may take (default 5)")
    args = parser.parse_args()
    only = {int(n) for n in args.only.split(",") if n.strip()}
    exercises = [ex for ex in all_exercises() if not only or ex.number in only]
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, triton {metadata.version('triton')}, "
        f"torch {metadata.version('torch')}, median of {args.repeat}"
    )
    print(
        "| exercise | passing kernel: wall s | of which the check "
        "| starter (fails): wall s | of which the check |"
    )
    print("|---|---:|---:|---:|---:|")
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        env["DEUTERON_DATA_DIR"] = str(folder / "data")
        for ex in exercises:
            row = [ex.name]
            for kind, text, code in (
                ("solution", ex.solution_path.read_text(), 0),
                ("starter", ex.starter(), 1),
            ):
                file = folder / f"{ex.name}.{kind}.py"
                file.write_text(text)
                runs = [run_once(ex.number, file, folder, env) for _ in range(args.repeat)]
                if any(rc != code for _, _, rc in runs):
                    raise SystemExit(f"{ex.name}: the {kind} should exit {code}")
                wall = statistics.median(w for w, _, _ in runs)
                own = statistics.median(c for _, c, _ in runs)
                worst = max(worst, wall)
                row += [f"{wall:.2f}", f"{own:.2f}"]
            print(f"| {' | '.join(row)} |", flush=True)
    print(f"# slowest: {worst:.2f} s (limit {args.limit:g} s)")
    return 0 if worst <= args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
