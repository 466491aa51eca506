"""How long ``deuteron explain`` takes, next to running the same script without it.

Why this exists: explain runs the user's script (in Triton's interpreter without a GPU), then
cross-compiles every distinct specialization and disassembles it. A kernel author uses it in an
edit-compile loop, so the whole command should take seconds. For each script in
``tests/explain_corpus`` it measures, in fresh processes, wall time around the subprocess:

* ``plain``: ``python SCRIPT`` as the user would run it on this machine (``TRITON_INTERPRET=1``
  when there is no GPU, so the kernels run in the interpreter, as they do under explain);
* ``explain cold``: ``python -m deuteron explain --json F SCRIPT`` with an empty Triton cache
  (every compile from scratch, what the first run after an edit costs);
* ``explain warm``: the same again with the cache filled (Triton reuses its compiled binaries;
  the SASS disassembly and the analysis still run).

Median of ``--runs``. Usage: ``python benchmarks/explain_speed.py [--runs R] [--target T]``
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "explain_corpus"
SCRIPTS = [("vector_copy.py", ["3"]), ("matmul.py", []), ("spill.py", []), ("dot_fp32.py", [])]


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    took = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return took


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--target", default=None, help="explain --target (default: explain's default)")
    args = p.parse_args()
    import torch

    gpu = torch.cuda.is_available()
    base = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    base["TRITON_DEFAULT_FP_FUSION"] = "1"
    base["PYTHONPATH"] = str(CORPUS.parent.parent) + os.pathsep + base.get("PYTHONPATH", "")
    print(
        f"# {platform.node()} {platform.processor() or platform.machine()}, "
        f"python {sys.version.split()[0]}, "
        f"GPU: {torch.cuda.get_device_name() if gpu else 'none'}, runs={args.runs}"
    )
    print(f"{'script':<14} {'plain s':>8} {'explain cold s':>15} {'explain warm s':>15}")
    target = ["--target", args.target] if args.target else []
    for script, rest in SCRIPTS:
        path = str(CORPUS / script)
        plain_env = dict(base) if gpu else {**base, "TRITON_INTERPRET": "1"}
        plain = [_timed([sys.executable, path, *rest], plain_env) for _ in range(args.runs)]
        cold, warm = [], []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as cache:
                env = {**base, "TRITON_CACHE_DIR": cache}
                cmd = [
                    sys.executable,
                    "-m",
                    "deuteron",
                    "explain",
                    *target,
                    "--json",
                    os.path.join(cache, "e.json"),
                    path,
                    *rest,
                ]
                cold.append(_timed(cmd, env))
                warm.append(_timed(cmd, env))
        print(
            f"{script:<14} {statistics.median(plain):>8.2f} {statistics.median(cold):>15.2f} "
            f"{statistics.median(warm):>15.2f}"
        )


if __name__ == "__main__":
    main()
