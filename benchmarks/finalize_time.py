"""How long ``finalize()`` takes after a workload, for one tool per process (CUPTI serves one
client per process): ``proton`` (Triton's), ``deuteron`` (CUPTI, shadow context) or ``sample``
(Deuteron with PC sampling). With ``--profile``, Deuteron's finalize under cProfile.

    python benchmarks/finalize_time.py deuteron launch_bound 300 [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import io
import pstats
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("tool", choices=["proton", "deuteron", "sample"])
    parser.add_argument("workload", help="a module of benchmarks/workloads, e.g. launch_bound")
    parser.add_argument("steps", type=int)
    parser.add_argument("--profile", action="store_true", help="print Deuteron's finalize under cProfile")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent / "workloads"))
    import torch

    w = importlib.import_module(args.workload)
    w.setup("cuda")
    for _ in range(3):
        w.step()
    torch.cuda.synchronize()
    if args.tool == "proton":
        import triton.profiler as tool

        tool.start("/tmp/finalize_proton")
    else:
        import deuteron as tool  # type: ignore[no-redef]

        tool.start(
            f"/tmp/finalize_{args.tool}",
            backend="cupti",
            mode="pcsampling" if args.tool == "sample" else None,
        )
    for _ in range(args.steps):
        w.step()
    torch.cuda.synchronize()
    prof = cProfile.Profile()
    began = time.perf_counter()
    if args.profile:
        prof.enable()
    tool.finalize()
    prof.disable()
    print(f"{args.tool} {args.workload} finalize {time.perf_counter() - began:.4f} s")
    if args.profile:
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("cumtime").print_stats(14)
        print(out.getvalue())


if __name__ == "__main__":
    main()
