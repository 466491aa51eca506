"""Where ``-c torch`` spends its time on a launch-bound GPU step: every configuration in one
process, round by round in a rotating order, each timing the same steps of the launch_bound
workload; the ratio is the configuration's median step time over plain's.

    python benchmarks/torch_gpu_cost.py --rounds 8 --steps 50   # workloads: benchmarks/workloads

Configurations:
- ``plain``;
- ``hooks``: no-op global module forward pre/post hooks (what any module context pays in torch);
- ``shadow``: Deuteron's CUPTI backend, shadow context;
- ``torch``: ``-c torch`` as a GPU run has it by default (modules, backward nodes; aten ops
  observed until each launch's op repeats, then inferred at launches);
- ``torchall``: ``-c torch`` with ``DEUTERON_TORCH_OPS=all`` (every aten op observed throughout);
- ``torchmodules``: ``-c torch`` with ``DEUTERON_TORCH_OPS=0`` (no aten op callback);
- ``torchbackward``: ``torchmodules`` without the module wrapper (backward nodes and user scopes
  only): with ``torchmodules``, what module calls and backward nodes each cost;
- ``torchnodecb``: ``torch`` with backward nodes seen through a RecordFunction callback per node
  (as before they were read from autograd at launches): with ``torch``, what that saves;
- ``torchtrace``: ``torch`` writing a trace, so every timed frame's span is kept for it (modules,
  backward nodes, observed ops): with ``torch``, what the trace's CPU spans cost.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from overhead import _load_workload  # benchmarks/ is on the path when run as a script

TOOLS = (
    "plain", "hooks", "shadow", "torch", "torchtrace", "torchall",
    "torchmodules", "torchbackward", "torchnodecb",
)  # fmt: skip


def timed(step: Callable[[], None], steps: int) -> float:
    torch.cuda.synchronize()
    began = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - began) / steps


def measure(tool: str, step: Callable[[], None], steps: int, out: Path) -> float:
    if tool == "plain":
        timed(step, 3)
        return timed(step, steps)
    if tool == "hooks":
        from torch.nn.modules import module as modules

        handles = [
            modules.register_module_forward_pre_hook(lambda m, a: None),
            modules.register_module_forward_hook(lambda m, a, o: None, always_call=True),
        ]
        try:
            timed(step, 3)
            return timed(step, steps)
        finally:
            for h in handles:
                h.remove()
    import deuteron
    from deuteron.collect.context.torch.source import TorchContext

    context = "torch" if tool.startswith("torch") else tool
    ops = {"torchmodules": "0", "torchbackward": "0", "torchall": "all"}
    os.environ["DEUTERON_TORCH_OPS"] = ops.get(tool, "")
    TorchContext.module_wrapper_wanted = tool != "torchbackward"  # an ablation: no module wrapper
    TorchContext.nodes_at_launch_wanted = tool != "torchnodecb"  # an ablation: a callback per node
    try:
        data = "trace" if tool == "torchtrace" else "tree"  # a trace keeps the frames' spans
        deuteron.start(str(out / tool), backend="cupti", context=context, data=data)
    finally:
        TorchContext.module_wrapper_wanted = True
        TorchContext.nodes_at_launch_wanted = True
    try:
        timed(step, 3)
        return timed(step, steps)
    finally:
        deuteron.finalize()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workloads", type=Path, default=Path(__file__).resolve().parent / "workloads")
    parser.add_argument("--workload", default="launch_bound")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--tools", default=",".join(TOOLS))
    args = parser.parse_args()
    tools = args.tools.split(",")
    w = _load_workload(args.workloads, args.workload)
    w.setup("cuda")
    for _ in range(5):
        w.step()
    times: dict[str, list[float]] = {t: [] for t in tools}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for tool in tools[r % len(tools) :] + tools[: r % len(tools)]:
                times[tool].append(measure(tool, w.step, args.steps, Path(tmp)))
    base = statistics.median(times["plain"]) if "plain" in times else 1.0
    print(f"| {args.workload}: config | ms/step (median) | ratio | min-max ratio | paired ratio (IQR) |")
    print("|---|---|---|---|---|")
    for tool in tools:
        med = statistics.median(times[tool])
        print(
            f"| {tool} | {med * 1e3:.3f} | {med / base:.3f} | "
            f"{min(times[tool]) / base:.3f}-{max(times[tool]) / base:.3f} | {paired(times, tool)} |"
        )


def paired(times: dict[str, list[float]], tool: str) -> str:
    """The median of each round's own ratio to plain, with its interquartile range: a round's
    configurations run back to back, so slow drift of the machine cancels within the round."""
    if "plain" not in times or len(times[tool]) < 4:
        return "-"
    ratios = sorted(t / p for t, p in zip(times[tool], times["plain"], strict=True))
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    return f"{statistics.median(ratios):.3f} ({q1:.3f}-{q3:.3f})"


if __name__ == "__main__":
    main()
