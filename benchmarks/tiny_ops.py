"""Tiny torch ops outside any module: ``-c torch`` against the shadow context, op by op.

One op that launches one kernel (``x.add_(1)`` on a 1-element tensor, or ``x.add_(y)``), run
``--ops`` times in a loop outside any ``nn.Module`` (``outside``), and for contrast the same loop
inside one module call (``inside``) and as that many calls of a module doing one op (``calls``).
Every aten op goes through torch's RecordFunction observers whether it launches a CUDA kernel or
runs on the CPU, so the CPU shows the op callback's cost, and ``--device cuda`` the launches' (with
CUPTI, as ``deuteron run`` has it there).

Each tool runs in its own process (CUPTI serves one client a process, and ``-c torch``'s callbacks
and tables must not linger into the next tool), processes interleaved round by round in a
rotating order so drift hits every tool alike. Each process times the plain loops first, then the
same loops under its tool, so a ratio (the tool's rate over plain's) never compares two processes;
the table gives the median rate and ratio over the rounds, their spread, and each ratio over
shadow's median.

    python benchmarks/tiny_ops.py --rounds 5 --ops 1000000               # the CPU
    python benchmarks/tiny_ops.py --rounds 5 --ops 1000000 --device cuda # a GPU, through CUPTI

Tools:
- ``plain``: nothing started (its ratio is the noise between two timings of one process);
- ``shadow``: ``deuteron run`` (the scope stack; no op is observed);
- ``torch``: ``deuteron run -c torch`` as the device has it by default (the CPU: every op observed,
  flops read from inputs; a GPU: ops observed until launches repeat, no flops);
- ``torch-noflops``: ``-c torch`` with ``DEUTERON_TORCH_FLOPS=0`` (on the CPU: no op's inputs read);
- ``floor``: a global RecordFunction callback on every aten op that does nothing (built here with
  the system ``g++``): torch's own cost of observing ops, the floor under any op callback;
  ``floor-inputs``: the same with the inputs asked for, as the flops of ``-c torch`` ask.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TOOLS = ("plain", "shadow", "torch", "torch-noflops", "floor")
WHERE = ("outside", "inside", "calls")

FLOOR_SOURCE = r"""
#include <ATen/record_function.h>
static std::unique_ptr<at::ObserverContext> enter(const at::RecordFunction&) { return nullptr; }
static void leave(const at::RecordFunction&, at::ObserverContext*) {}
extern "C" int floor_install(int inputs) {
  auto cb = at::RecordFunctionCallback(enter, leave).needsInputs(inputs != 0).needsIds(false);
  return at::addGlobalCallback(cb.scopes({at::RecordScope::FUNCTION})) ? 0 : -1;
}
"""


def _floor_library() -> Any:
    """A no-op global RecordFunction callback, built once per torch with the system C++ compiler."""
    import torch

    root = os.path.dirname(torch.__file__)
    key = f"{torch.__version__}-{os.getuid()}".replace("+", "_")
    out = Path(tempfile.gettempdir()) / f"deuteron_rf_floor_{key}.so"
    if not out.exists():
        src = out.with_suffix(".cpp")
        src.write_text(FLOOR_SOURCE)
        include = os.path.join(root, "include")
        abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
        subprocess.run(
            ["g++", "-O2", "-DNDEBUG", "-shared", "-fPIC", "-std=c++17", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
             "-I", include, "-I", os.path.join(include, "torch", "csrc", "api", "include"), str(src),
             "-L", os.path.join(root, "lib"), "-lc10", "-ltorch_cpu", "-o", str(out), "-w"],
            check=True,
        )  # fmt: skip
    return ctypes.CDLL(str(out))


def loops(device: str, op: str) -> dict[str, Callable[[int], None]]:
    """The three loops, each running ``n`` ops (the device synchronized at the end)."""
    import torch
    from torch import nn

    x = torch.zeros(1, device=device)
    y = torch.ones(1, device=device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    if op == "add_1":

        def one() -> None:
            x.add_(1)
    else:

        def one() -> None:
            x.add_(y)

    def outside(n: int) -> None:
        for _ in range(n):
            one()
        sync()

    class Loop(nn.Module):
        """The same loop in one module call."""

        def forward(self, n: int) -> None:
            for _ in range(n):
                one()

    class One(nn.Module):
        """One op a call."""

        def forward(self) -> None:
            one()

    loop, single = Loop(), One()

    def inside(n: int) -> None:
        loop(n)
        sync()

    def calls(n: int) -> None:
        for _ in range(n):
            single()
        sync()

    return {"outside": outside, "inside": inside, "calls": calls}


def rate(run: Callable[[int], None], n: int, clock: Callable[[], float]) -> float:
    began = clock()
    run(n)
    return n / (clock() - began)


def child(tool: str, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    import torch

    torch.set_num_threads(1)
    where = args.where.split(",")
    runs = loops(args.device, args.op)
    clock = time.thread_time if args.clock == "thread" else time.perf_counter
    for name in where:  # allocator, kernels and caches warmed up
        runs[name](2000)
    plain = {name: rate(runs[name], args.ops, clock) for name in where}
    finalize_s = 0.0
    if tool.startswith("floor"):
        _floor_library().floor_install(1 if tool == "floor-inputs" else 0)
    elif tool != "plain":
        import deuteron

        context = "shadow" if tool == "shadow" else "torch"
        if tool == "torch-noflops":
            os.environ["DEUTERON_TORCH_FLOPS"] = "0"
        deuteron.start(str(out / tool), context=context)
    for name in where:  # the tool's first ops (its set-up) are not timed
        runs[name](2000)
    profiled = {name: rate(runs[name], args.ops, clock) for name in where}
    if tool not in ("plain", "floor", "floor-inputs"):
        import deuteron

        began = time.perf_counter()
        deuteron.finalize()
        finalize_s = time.perf_counter() - began
    return {"plain": plain, "profiled": profiled, "finalize_s": finalize_s}


def report(results: dict[str, list[dict[str, Any]]], where: list[str]) -> None:
    print(
        f"\n{'loop':8s} {'tool':14s} {'n':>2s} {'ops/s':>9s} {'plain/s':>9s} {'ratio':>6s} "
        f"{'min':>6s} {'max':>6s} {'vs_shadow':>9s} {'finalize_s':>10s}"
    )
    for name in where:
        shadow = results.get("shadow")
        base = statistics.median(r["profiled"][name] / r["plain"][name] for r in shadow) if shadow else None
        for tool, runs in results.items():
            ratios = [r["profiled"][name] / r["plain"][name] for r in runs]
            med = statistics.median(ratios)
            print(
                f"{name:8s} {tool:14s} {len(runs):2d} "
                f"{statistics.median(r['profiled'][name] for r in runs):9.0f} "
                f"{statistics.median(r['plain'][name] for r in runs):9.0f} {med:6.3f} {min(ratios):6.3f} "
                f"{max(ratios):6.3f} {(med / base if base else float('nan')):9.3f} "
                f"{statistics.median(r['finalize_s'] for r in runs):10.3f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ops", type=int, default=1_000_000, help="ops per timed loop")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument(
        "--op", choices=("add_1", "add_tensor"), default="add_1", help="x.add_(1) or x.add_(y)"
    )
    parser.add_argument(
        "--tools", default=",".join(TOOLS), help=f"comma-separated, of {TOOLS} and floor-inputs"
    )
    parser.add_argument("--where", default="outside,inside", help=f"comma-separated loops, of {WHERE}")
    parser.add_argument(
        "--clock",
        choices=("thread", "wall"),
        help="what a rate is over: the loop's thread CPU time (the default on the CPU: another process "
        "taking the core does not count) or wall time (the default with a GPU, which waits for it)",
    )
    parser.add_argument("--json", type=Path, help="also write every process's numbers here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.clock = args.clock or ("thread" if args.device == "cpu" else "wall")
    if args.child:
        with tempfile.TemporaryDirectory() as tmp:
            print("RESULT " + json.dumps(child(args.child, args, Path(tmp))))
        return
    tools, where = args.tools.split(","), args.where.split(",")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRITON_INTERPRET", "DEUTERON_TORCH"))}
    results: dict[str, list[dict[str, Any]]] = {}
    import torch

    print(
        f"torch {torch.__version__}, {args.device}, {args.op}, {args.ops} ops a loop, {args.rounds} rounds, "
        f"rates over {args.clock} time"
    )
    for r in range(args.rounds):
        for tool in tools[r % len(tools) :] + tools[: r % len(tools)]:
            cmd = [sys.executable, __file__, "--child", tool, "--ops", str(args.ops), "--device", args.device,
                   "--op", args.op, "--where", args.where, "--clock", args.clock]  # fmt: skip
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
            line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
            if proc.returncode != 0 or line is None:
                print(
                    f"{tool} round {r}: failed (exit {proc.returncode})\n{proc.stderr[-1500:]}",
                    file=sys.stderr,
                )
                continue
            res = json.loads(line[7:])
            results.setdefault(tool, []).append(res)
            rates = (
                f"{w} {res['profiled'][w]:.0f}/s ({res['profiled'][w] / res['plain'][w]:.3f}x)" for w in where
            )
            print(f"round {r} {tool:14s} " + " ".join(rates), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    report(results, where)


if __name__ == "__main__":
    main()
