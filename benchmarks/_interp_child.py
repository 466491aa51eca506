"""Child process for ``interpreter_overhead.py``: launch one Triton kernel and time it in-process.

It exists so that the plain interpreter (``TRITON_INTERPRET=1 python _interp_child.py``) and
``deuteron run _interp_child.py`` execute exactly the same code; the parent compares the two.
It does one warm-up launch, then times ``--launches`` launches with ``time.perf_counter`` and
prints one JSON object on stdout: ``{"workload": ..., "seconds_per_launch": ..., ...}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable

if os.environ.get("TRITON_INTERPRET") != "1":
    # Both variants must run in the interpreter; `deuteron run` sets this itself before the import.
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402

# The same kernels as the README's example, so the benchmark measures what users run first.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from examples.vector_add import add_kernel, matmul_kernel  # noqa: E402

# A zero-argument launch returning the output, and a check of that output.
Launcher = tuple[Callable[[], torch.Tensor], Callable[[torch.Tensor], None]]


def vector_add_launcher(n: int, block: int) -> Launcher:
    """A launch of ``add_kernel`` on fresh random inputs, and a check of its result."""
    x, y = torch.rand(n), torch.rand(n)
    out = torch.empty_like(x)

    def launch() -> torch.Tensor:
        add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
        return out

    def check(result: torch.Tensor) -> None:
        assert torch.allclose(result, x + y, rtol=1.3e-6, atol=1e-5)

    return launch, check


def matmul_launcher(size: int, block: int) -> Launcher:
    """A launch of ``matmul_kernel`` (size^3, square blocks), and a check of its result."""
    a, b = torch.rand(size, size), torch.rand(size, size)
    c = torch.empty((size, size), dtype=torch.float32)
    grid = (triton.cdiv(size, block), triton.cdiv(size, block))

    def launch() -> torch.Tensor:
        matmul_kernel[grid](a, b, c, size, size, size, BM=block, BN=block, BK=block)
        return c

    def check(result: torch.Tensor) -> None:
        assert torch.allclose(result, a @ b, rtol=1e-3, atol=1e-3)

    return launch, check


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workload", choices=["vector_add", "matmul"])
    parser.add_argument("--n", type=int, default=1_000_000, help="vector length (vector_add)")
    parser.add_argument("--size", type=int, default=256, help="M = N = K (matmul)")
    parser.add_argument("--block", type=int, default=None, help="BLOCK (1024) or BM=BN=BK (32)")
    parser.add_argument("--launches", type=int, default=3, help="timed launches after one warm-up")
    args = parser.parse_args()
    torch.manual_seed(0)
    if args.workload == "vector_add":
        launch, check = vector_add_launcher(args.n, args.block or 1024)
    else:
        launch, check = matmul_launcher(args.size, args.block or 32)
    check(launch())  # warm-up launch, also checks the result
    t0 = time.perf_counter()
    for _ in range(args.launches):
        launch()
    elapsed = time.perf_counter() - t0
    json.dump(
        {
            "workload": args.workload,
            "launches": args.launches,
            "seconds": elapsed,
            "seconds_per_launch": elapsed / args.launches,
            # the example module imports deuteron; what matters is whether a session records
            "profiled": bool(getattr(sys.modules.get("deuteron.collect.registry"), "active", None)),
        },
        sys.stdout,
    )
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
