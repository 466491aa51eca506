"""Record the instrumentation fixtures (tests/fixtures/instrumentation/) on a GPU machine.

Each fixture is one launch's profile buffer as Triton 3.6's Proton passes wrote it, in Proton's
host layout (``InstrumentationHook.host_buffer``), beside the tree (and, for the default mode, the
trace) Proton itself made from the same launch, so the CPU tests can hold Deuteron's decoding
against Proton's on real device data. Proton is used here, not Deuteron, so that the reference
numbers are Proton's own; it runs in a fresh process per mode (its hook keeps one mode per
process).

    python scripts/record_instrumentation_fixture.py OUTDIR           # all modes, one process each
    python scripts/record_instrumentation_fixture.py OUTDIR TAG MODE DATA   # one (what the loop runs)
"""

from __future__ import annotations

import os
import subprocess
import sys

MODES = {
    "default": "default",
    "select": "default:sampling_strategy=selective:sampling_options=0,2",
    "small": "default:buffer_size=64",
    "clock32": "default:optimizations=clock32",
}


def record(out: str, tag: str, mode: str, data: str) -> None:
    import torch
    import triton
    import triton.language as tl
    import triton.profiler as proton
    import triton.profiler.language as pl
    from triton.profiler.hooks import InstrumentationHook

    pl.enable_semantic("triton")

    @triton.jit
    def three(x_ptr, y_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        with pl.scope("load"):
            x = tl.load(x_ptr + offs, mask=m)
        with pl.scope("compute"):
            for _ in range(16):
                x = x * 1.0001 + 0.5
        with pl.scope("store"):
            tl.store(y_ptr + offs, x, mask=m)

    x = torch.randn(4096, device="cuda")
    y = torch.empty_like(x)
    InstrumentationHook.enable_host_buffer = True
    name = os.path.join(out, f"{tag}_{data}")
    proton.start(name, backend="instrumentation", mode=mode, data=data)
    with proton.scope("outer"):
        three[(4,)](x, y, 4096, BLOCK=1024, num_warps=4)
    torch.cuda.synchronize()
    buffer = InstrumentationHook.host_buffer
    if buffer is not None:
        with open(f"{name}.bin", "wb") as f:
            f.write(buffer.numpy().tobytes())
    proton.finalize()


def main() -> None:
    if len(sys.argv) == 5:
        record(*sys.argv[1:5])
        return
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for tag, mode in MODES.items():
        for data in ("tree", "trace"):
            subprocess.run([sys.executable, __file__, out, tag, mode, data], check=True)
    print(f"recorded into {out}: rename TAG_tree.bin to TAG.bin and TAG_tree.hatchet to TAG.proton.hatchet")


if __name__ == "__main__":
    main()
