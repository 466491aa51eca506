"""The torch context's cost on a CPU-only training step, beside pyinstrument and torch.profiler.

A 6-layer ``nn.TransformerEncoder`` (d_model 128, batch 16 x 32 tokens) training step with AdamW,
as in issue 16. Every tool runs in this one process, round by round in a rotating order, each
timing the same number of steps; the ratio is the tool's median step time over the plain median.
``dispatch-mode`` is the mechanism the torch context did not use (a no-op TorchDispatchMode that
sees every aten op, as the C++ RecordFunction callback does), measured to show why.

    python benchmarks/torch_cpu.py --rounds 8 --steps 10
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import torch
from torch import nn

TOOLS = ("plain", "deuteron-torch", "pyinstrument", "torch-profiler", "dispatch-mode")


def workload() -> Callable[[], None]:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, batch_first=True)
    model = nn.Sequential(nn.TransformerEncoder(layer, 6, enable_nested_tensor=False), nn.Linear(128, 10))
    opt = torch.optim.AdamW(model.parameters())
    x, y = torch.randn(16, 32, 128), torch.randint(0, 10, (16,))

    def step() -> None:
        loss = nn.functional.cross_entropy(model(x).mean(1), y)
        loss.backward()
        opt.step()
        opt.zero_grad()

    return step


class _Deuteron:
    def __init__(self, out: Path) -> None:
        self.out = out

    def __enter__(self) -> None:
        import deuteron

        deuteron.start(str(self.out / "torch_cpu"), backend="interpreter", context="torch")

    def __exit__(self, *exc: Any) -> None:
        import deuteron

        deuteron.finalize()


class _Pyinstrument:
    def __enter__(self) -> None:
        from pyinstrument import Profiler

        self.profiler = Profiler(interval=0.001)
        self.profiler.start()

    def __exit__(self, *exc: Any) -> None:
        self.profiler.stop()
        self.profiler.output_text()


class _TorchProfiler:
    def __enter__(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        self.prof = profile(activities=[ProfilerActivity.CPU])
        self.prof.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self.prof.__exit__(None, None, None)
        self.prof.key_averages()


def _dispatch_mode() -> AbstractContextManager[None]:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Seen(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            began = time.perf_counter_ns()
            out = func(*args, **(kwargs or {}))
            self.last = (func, time.perf_counter_ns() - began)
            return out

    return Seen()  # type: ignore[return-value]


def tool(name: str, out: Path) -> AbstractContextManager[Any]:
    return {
        "plain": nullcontext,
        "deuteron-torch": lambda: _Deuteron(out),
        "pyinstrument": _Pyinstrument,
        "torch-profiler": _TorchProfiler,
        "dispatch-mode": _dispatch_mode,
    }[name]()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--tools", default=",".join(TOOLS))
    args = parser.parse_args()
    torch.set_num_threads(1)
    step = workload()
    for _ in range(3):
        step()
    tools = args.tools.split(",")
    times: dict[str, list[float]] = {t: [] for t in tools}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name in tools[r % len(tools) :] + tools[: r % len(tools)]:
                with tool(name, Path(tmp)):
                    step()  # the tool's first step (its set-up) is not timed
                    began = time.perf_counter()
                    for _ in range(args.steps):
                        step()
                    times[name].append((time.perf_counter() - began) / args.steps)
    plain = statistics.median(times["plain"]) if "plain" in times else None
    print(f"torch {torch.__version__}, 1 thread, {args.rounds} rounds x {args.steps} steps")
    print(f"{'tool':16s} {'ms/step':>8s} {'ratio':>6s} {'min':>6s} {'max':>6s}")
    for name, values in times.items():
        med = statistics.median(values)
        ratios = [v / plain for v in values] if plain else [float("nan")]
        print(
            f"{name:16s} {med * 1e3:8.2f} {med / plain if plain else float('nan'):6.3f} "
            f"{min(ratios):6.3f} {max(ratios):6.3f}"
        )


if __name__ == "__main__":
    main()
