"""Profiler overhead on the reference workloads, Deuteron against Proton and torch.profiler.

Each tool runs in its own process (CUPTI serves one client per process, and one tool's
leftovers must not slow the next); processes are interleaved round by round so drift in
clocks or temperature hits every tool alike. Each process times plain steps and then
profiled steps itself, so a ratio never compares two processes. The table shows the median
ratio over the rounds, finalize time and profile size.

    python benchmarks/overhead.py --rounds 5   # workloads: benchmarks/workloads
    python benchmarks/overhead.py --tools plain,deuteron-sample,proton-pcsampling   # PC sampling
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TOOLS = (
    "plain",
    "cupti-floor",
    "deuteron-shadow",
    "deuteron-python",
    "deuteron-torch",
    "deuteron-torchall",
    "deuteron-torchmodules",
    "proton-shadow",
    "proton-python",
    "torch-profiler",
)
# --tools deuteron-sample,proton-pcsampling; deuteron-sample256 samples every 256 cycles
SAMPLING_TOOLS = ("deuteron-sample", "proton-pcsampling")
STEPS = {"launch_bound": 300, "gpu_bound": 40, "llama_step": 20}


def _load_workload(folder: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _timed(step: Any, steps: int, scope: Any = None) -> float:
    import torch

    torch.cuda.synchronize()
    began = time.perf_counter()
    for _ in range(steps):
        if scope is None:
            step()
        else:
            with scope("step"):
                step()
    torch.cuda.synchronize()
    return (time.perf_counter() - began) / steps


def _floor_library() -> Any:
    """benchmarks/cupti_floor.c, built once with the system C compiler, started on libcupti."""
    import ctypes

    from deuteron.collect.backends.cupti import library

    source = Path(__file__).with_name("cupti_floor.c")
    out = Path(tempfile.gettempdir()) / f"deuteron_cupti_floor_{os.getuid()}.so"
    if not out.exists() or out.stat().st_mtime < source.stat().st_mtime:
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", str(source), "-o", str(out), "-ldl"], check=True)
    lib = ctypes.CDLL(str(out))
    lib.floor_start.argtypes, lib.floor_start.restype = [ctypes.c_char_p], ctypes.c_int
    lib.floor_stop.restype = ctypes.c_uint64
    for _source, path in library.candidates():
        if lib.floor_start(str(path).encode()) == 0:
            return lib
    raise SystemExit("cupti-floor: no libcupti could be started")


def _sampled(path: Path) -> tuple[int, int]:
    """(samples in the file, samples on a source-line frame ``file:line@function``) of a sampled
    profile; (0, 0) for other files."""
    from deuteron.model.names import parse_source_frame

    if not path.exists():
        return 0, 0
    stack = list(json.loads(path.read_text())[0]["children"])
    total = on_lines = 0
    while stack:
        node = stack.pop()
        stack.extend(node.get("children", []))
        n = int(node.get("metrics", {}).get("num_samples", 0))
        total += n
        name = node["frame"]["name"]
        if parse_source_frame(name) is not None:
            on_lines += n
    return total, on_lines


def child(tool: str, folder: Path, workload: str, steps: int, out_dir: Path) -> dict[str, Any]:
    import torch

    w = _load_workload(folder, workload)
    w.setup("cuda")
    for _ in range(5):  # compile, autotune, allocator warm-up
        w.step()
    plain = _timed(w.step, steps)
    name = str(out_dir / f"{tool}-{workload}")
    size = 0
    finalize_s = 0.0
    records = 0
    torch_ops: dict[str, int] = {}
    if tool == "plain":
        profiled = _timed(w.step, steps)
    elif tool == "cupti-floor":
        floor = _floor_library()
        _timed(w.step, 3)
        profiled = _timed(w.step, steps)
        t = time.perf_counter()
        records = int(floor.floor_stop())
        finalize_s = time.perf_counter() - t
    elif tool.startswith("deuteron"):
        import deuteron

        context = tool.split("-")[1]
        if context == "torchmodules":  # -c torch with DEUTERON_TORCH_OPS=0: modules and backward only
            os.environ["DEUTERON_TORCH_OPS"] = "0"
            context = "torch"
        elif context == "torchall":  # -c torch with every op observed for the whole run
            os.environ["DEUTERON_TORCH_OPS"] = "all"
            context = "torch"
        mode = None
        if context.startswith("sample"):  # --sample: CUPTI's PC sampling, continuous
            cycles = context.removeprefix("sample")  # deuteron-sample256: --interval 256
            context, mode = "shadow", f"pcsampling:interval={cycles}" if cycles else "pcsampling"
        deuteron.start(name, backend="cupti", context=context, mode=mode)
        _timed(w.step, 3, deuteron.scope)
        profiled = _timed(w.step, steps, deuteron.scope)
        if context == "torch":
            from deuteron.collect.context.torch import source as torch_context

            torch_source = torch_context.active()
            if torch_source is not None and torch_source.infer:
                torch_ops = torch_source.infer_stats()
        t = time.perf_counter()
        files = deuteron.finalize()
        finalize_s = time.perf_counter() - t
        size = sum(Path(f).stat().st_size for f in files)
    elif tool.startswith("proton"):
        import triton.profiler as proton

        kind = tool.split("-")[1]
        if kind == "pcsampling":
            proton.start(name, context="shadow", mode="pcsampling")
        else:
            proton.start(name, context=kind)
        _timed(w.step, 3, proton.scope)
        profiled = _timed(w.step, steps, proton.scope)
        t = time.perf_counter()
        proton.finalize()
        finalize_s = time.perf_counter() - t
        size = Path(name + ".hatchet").stat().st_size
    elif tool == "torch-profiler":
        from torch.profiler import ProfilerActivity, profile, record_function

        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()
        _timed(w.step, 3, record_function)
        profiled = _timed(w.step, steps, record_function)
        t = time.perf_counter()
        prof.__exit__(None, None, None)
        prof.key_averages()
        finalize_s = time.perf_counter() - t
    else:
        raise SystemExit(f"unknown tool {tool}")
    torch.cuda.synchronize()
    samples, on_lines = _sampled(Path(name + ".hatchet"))
    return {
        "samples": samples,
        "samples_on_lines": on_lines,
        "plain_ms": plain * 1e3,
        "profiled_ms": profiled * 1e3,
        "ratio": profiled / plain,
        "finalize_s": finalize_s,
        "size": size,
        "records": records,
        "torch_ops": torch_ops,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workloads", type=Path, default=Path(__file__).resolve().parent / "workloads")
    parser.add_argument("--only", default="launch_bound,gpu_bound", help="comma-separated workload names")
    parser.add_argument(
        "--tools",
        default=",".join(TOOLS),
        help="comma-separated; deuteron-shadow@none runs CUPTI activity without callbacks",
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, help="timed steps per process, for every workload")
    parser.add_argument("--json", type=Path, help="also write every process's numbers here")
    parser.add_argument("--child", nargs=3, metavar=("TOOL", "WORKLOAD", "STEPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        tool, workload, steps = args.child
        with tempfile.TemporaryDirectory() as tmp:
            print("RESULT " + json.dumps(child(tool, args.workloads, workload, int(steps), Path(tmp))))
        return
    tools = args.tools.split(";") if ";" in args.tools else args.tools.split(",")
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    for workload in args.only.split(","):
        for r in range(args.rounds):
            order = tools[r % len(tools) :] + tools[: r % len(tools)]  # rotate who goes first
            for tool in order:
                base, _, apis = tool.partition("@")  # deuteron-shadow@none: callbacks off (the floor)
                cmd = [
                    sys.executable,
                    __file__,
                    "--workloads",
                    str(args.workloads),
                    "--child",
                    base,
                    workload,
                    str(args.steps or STEPS[workload]),
                ]
                child_env = {**env, "DEUTERON_CUPTI_APIS": apis} if apis else env
                proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env, timeout=300)
                line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
                if proc.returncode != 0 or line is None:
                    print(
                        f"{workload} {tool} round {r}: failed (exit {proc.returncode})\n"
                        + proc.stderr[-1500:],
                        file=sys.stderr,
                    )
                    continue
                res = json.loads(line[7:])
                results.setdefault((workload, tool), []).append(res)
                print(
                    f"{workload:12s} {tool:16s} round {r}: {res['ratio']:.3f}x "
                    f"({res['plain_ms']:.3f} -> {res['profiled_ms']:.3f} ms/step)"
                    + (f" ops: {res['torch_ops']}" if res.get("torch_ops") else "")
                    + (
                        f" samples: {res['samples']} ({res['samples_on_lines']} on lines)"
                        if res["samples"]
                        else ""
                    ),
                    flush=True,
                )
    if args.json:
        args.json.write_text(json.dumps({f"{w}/{t}": v for (w, t), v in results.items()}, indent=1))
    print(
        f"\n{'workload':12s} {'tool':16s} {'n':>2s} {'median':>7s} {'min':>6s} {'max':>6s} "
        f"{'ms/step':>8s} {'finalize_s':>10s} {'size_KB':>8s} {'vs_floor':>8s}"
    )
    for (workload, tool), runs in results.items():
        ratios = [x["ratio"] for x in runs]
        floor = results.get((workload, "cupti-floor"))
        # the distance to the physical floor: this tool's median over the bare collector's
        above = (
            f"{statistics.median(ratios) / statistics.median(x['ratio'] for x in floor):8.3f}"
            if floor
            else "-"
        )
        print(
            f"{workload:12s} {tool:16s} {len(runs):2d} {statistics.median(ratios):7.3f} {min(ratios):6.3f} "
            f"{max(ratios):6.3f} {statistics.median(x['plain_ms'] for x in runs):8.3f} "
            f"{statistics.median(x['finalize_s'] for x in runs):10.3f} "
            f"{statistics.median(x['size'] for x in runs) / 1024:8.1f} {above:>8s}"
        )


if __name__ == "__main__":
    main()
