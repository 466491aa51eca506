"""What ``deuteron check`` costs over the plain interpreter, per launch.

Why this exists: the sanitizer checks every program of every launch, so it must stay close to
the interpreter's own speed or nobody will leave it on. Target: at most 1.3x the plain
interpreter on a vector add (1M fp32, BLOCK 1024), a 256^3 fp32 blocked matmul (32x32x32,
masked) and a row softmax (2048 x 1000 fp32, BLOCK 1024).

Both variants run in this one process on the same tensors, interleaved launch by launch
(plain, checked, checked, plain, ...), so machine noise hits both alike; the checked launches
each run inside their own ``deuteron.check(raise_on="error")``, which must report every program
and no finding. One warm-up launch of each variant first. Reported: the median seconds per
launch of each variant and their ratio, and the peak Python-traced memory (tracemalloc, which
sees NumPy's buffers) of one more launch of each, untimed.

Usage: ``python benchmarks/check_overhead.py [--launches N] [--only W] [--no-check] [--same-arithmetic]``
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from functools import partial

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import deuteron  # noqa: E402
from examples.vector_add import add_kernel, matmul_kernel  # noqa: E402

TARGET = 1.3


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=mask)


def vector_add() -> tuple[Callable[[], None], int]:
    n, block = 1_000_000, 1024
    x, y, out = torch.rand(n), torch.rand(n), torch.empty(n)
    grid = (triton.cdiv(n, block),)
    return lambda: add_kernel[grid](x, y, out, n, BLOCK=block), grid[0]


def matmul() -> tuple[Callable[[], None], int]:
    size, block = 256, 32
    a, b = torch.rand(size, size), torch.rand(size, size)
    c = torch.empty(size, size)
    grid = (triton.cdiv(size, block), triton.cdiv(size, block))

    def launch() -> None:
        matmul_kernel[grid](a, b, c, size, size, size, BM=block, BN=block, BK=block)

    return launch, grid[0] * grid[1]


def softmax() -> tuple[Callable[[], None], int]:
    rows, cols = 2048, 1000
    x = torch.randn(rows, cols)
    out = torch.empty_like(x)
    return lambda: softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=1024), rows


WORKLOADS = {
    "vector_add": ("vector add, 1M fp32, BLOCK 1024", vector_add),
    "matmul": ("matmul 256^3 fp32, 32x32x32", matmul),
    "softmax": ("row softmax 2048x1000 fp32", softmax),
}


_PLAIN_OVERFLOW_ARITHMETIC = True


def _plain(launch: Callable[[], None]) -> float:
    """One launch without Deuteron. With --same-arithmetic, Triton's integer-overflow arithmetic is
    off as it is under check (without debug it computes results nobody reads)."""
    import dataclasses

    from triton.runtime.interpreter import interpreter_builder

    saved = interpreter_builder.options
    interpreter_builder.options = dataclasses.replace(saved, sanitize_overflow=_PLAIN_OVERFLOW_ARITHMETIC)
    try:
        t0 = time.perf_counter()
        launch()
        return time.perf_counter() - t0
    finally:
        interpreter_builder.options = saved


def _checked(launch: Callable[[], None], programs: int) -> float:
    t0 = time.perf_counter()
    with deuteron.check(raise_on="error") as checked:
        launch()
    elapsed = time.perf_counter() - t0
    report = checked.report
    if report.programs != programs or report.findings:
        raise RuntimeError(f"expected {programs} programs and no finding, got {report.summary()}")
    return elapsed


def _peak_mib(run: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--launches", type=int, default=6, help="timed launches per variant (default 6)")
    parser.add_argument("--only", choices=sorted(WORKLOADS), action="append")
    parser.add_argument("--no-check", action="store_true", help="exit 0 even if the target is missed")
    parser.add_argument(
        "--same-arithmetic",
        action="store_true",
        help="plain launches without Triton's unused overflow arithmetic, as under check: the "
        "ratio is then the sanitizer's own cost",
    )
    args = parser.parse_args()
    global _PLAIN_OVERFLOW_ARITHMETIC
    _PLAIN_OVERFLOW_ARITHMETIC = not args.same_arithmetic
    torch.manual_seed(0)
    print(f"deuteron {deuteron.__version__}, triton {triton.__version__}, Python {platform.python_version()}")
    print(f"{args.launches} launches per variant, interleaved in one process; s/launch (median [min-max])")
    print(
        f"{'workload':<34}  {'plain s':>20}  {'checked s':>20}  {'ratio':>6}  {'target':<12}  "
        "peak MiB plain/checked"
    )
    ok = True
    for name in args.only or list(WORKLOADS):
        title, make = WORKLOADS[name]
        launch, programs = make()
        _plain(launch)
        _checked(launch, programs)
        plain: list[float] = []
        checked: list[float] = []
        for i in range(args.launches):
            pair = (("plain", "checked"), ("checked", "plain"))[i % 2]
            for variant in pair:
                if variant == "plain":
                    plain.append(_plain(launch))
                else:
                    checked.append(_checked(launch, programs))
        ratio = statistics.median(checked) / statistics.median(plain)
        ok &= ratio <= TARGET

        def cell(v: list[float]) -> str:
            return f"{statistics.median(v):.3f} [{min(v):.3f}-{max(v):.3f}]"

        status = "ok" if ratio <= TARGET else "MISSED"
        memory = (
            f"{_peak_mib(partial(_plain, launch)):.1f} / {_peak_mib(partial(_checked, launch, programs)):.1f}"
        )
        print(
            f"{title:<34}  {cell(plain):>20}  {cell(checked):>20}  {ratio:>5.2f}x  "
            f"<= {TARGET:g} {status:<6}  {memory}",
            flush=True,
        )
    if not ok and not args.no_check:
        print(f"target missed: a checked/plain ratio is above {TARGET:g}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
