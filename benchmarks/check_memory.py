"""Peak memory of ``deuteron check`` against the plain interpreter, on tensors far bigger than
what their kernels touch.

Why this exists: the sanitizer's shadow must follow the elements a kernel touches. A dense shadow
(about 20 bytes per element of every tensor written) made a 16-byte store into a 256 MiB tensor
peak at 5.3 GB, and a 2 GiB tensor could not be checked at all on a 24 GiB machine.

Cases, each run as a fresh process plain (``python SCRIPT``, ``TRITON_INTERPRET=1``) and checked
(``python -m deuteron check --fail-on never SCRIPT``); each process reports its own peak resident
set size (``getrusage``) at its end:
- ``sparse256``: one 16-byte store into a 256 MiB int8 tensor (made with ``torch.zeros``, so the
  plain run pays for the tensor too). Target: checked at most 2x plain.
- ``wrap2g``: three 64-byte rows of a 2 GiB int8 tensor, the third at an offset that wraps past
  2**31 in int32 arithmetic (a real bug). Plain runs the two good rows only (the bad one would write
  outside the tensor); the checked run must find the out-of-bounds store.

Usage: ``python benchmarks/check_memory.py [--only CASE]``; ``PYTHONPATH=OTHER_CHECKOUT`` measures
another version of the package with the same cases.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

PRELUDE = """
import json, resource, sys
import torch, triton
import triton.language as tl

@triton.jit
def poke_kernel(x_ptr, offset, BLOCK: tl.constexpr):
    offs = offset + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.full((BLOCK,), 7, tl.int8))

@triton.jit
def rows_kernel(x_ptr, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = row * stride + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.full((BLOCK,), 1, tl.int8))

def done():
    print(json.dumps({"peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

CASES = {
    "sparse256": (
        "x = torch.zeros(256 << 20, dtype=torch.int8)\npoke_kernel[(1,)](x, 123_456_789, BLOCK=16)\ndone()\n",
        None,
        "16-byte store into a 256 MiB int8 tensor",
    ),
    "wrap2g": (
        "x = torch.empty((2 << 30) + 4096, dtype=torch.int8)\n"
        "rows_kernel[(int(sys.argv[1]),)](x, 3 << 29, BLOCK=64)\n"
        "done()\n",
        ("2", "3"),  # plain: the two rows inside; checked: all three
        "3 rows of a 2 GiB int8 tensor, the 3rd wrapping past 2**31",
    ),
}


def run(script: Path, checked: bool, args: tuple[str, ...]) -> tuple[float, str]:
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    cmd = [sys.executable, "-m", "deuteron", "check", "--fail-on", "never"] if checked else [sys.executable]
    proc = subprocess.run([*cmd, str(script), *args], env=env, capture_output=True, text=True, timeout=1200)
    if proc.returncode != 0:
        raise RuntimeError(f"{script.name} {'checked' if checked else 'plain'} failed: {proc.stderr[-2000:]}")
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["peak_mib"]), proc.stderr


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", choices=sorted(CASES), action="append")
    a = parser.parse_args()
    import deuteron

    print(f"deuteron from {Path(deuteron.__file__).parent}, Python {platform.python_version()}")
    print(f"{'case':<10} {'plain MiB':>10} {'checked MiB':>12} {'ratio':>6}  finding")
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.only or sorted(CASES):
            body, args, what = CASES[name]
            script = Path(tmp) / f"{name}.py"
            script.write_text(PRELUDE + body)
            plain, _ = run(script, False, (args[0],) if args else ())
            checked, report = run(script, True, (args[1],) if args else ())
            found = "out-of-bounds found" if "error   out-of-bounds" in report else "no error"
            print(f"{name:<10} {plain:>10.0f} {checked:>12.0f} {checked / plain:>5.2f}x  {found}  ({what})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
