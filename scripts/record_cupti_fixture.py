"""Record the CUPTI fixtures CI replays (tests/fixtures/cupti_*): run on a GPU machine.

    DEUTERON_CUPTI_RECORD=tests/fixtures/cupti_shadow python scripts/record_cupti_fixture.py shadow

Known launches, so the replay test can assert exact counts: per step, 4 Triton ``add_kernel``
launches in scope ``train``, a Linear forward and backward (backward kernels come from
autograd's thread), and a CUDA graph of two
``add_kernel`` launches captured in scope ``capture`` and replayed twice in scope ``replay``.
A Triton kernel with ``launch_metadata`` runs 3 times (for hook="triton").
"""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl

import deuteron


@triton.jit
def add_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


def _meta(grid: tuple[int, ...], kernel: object, args: dict[str, int]) -> dict[str, object]:
    return {"name": "scaled_add", "flops": args["n"], "bytes": 12 * args["n"]}


@triton.jit(launch_metadata=_meta)
def meta_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2 + tl.load(y_ptr + offs, mask=m), mask=m)


def main(context: str) -> None:
    x = torch.ones(4096, device="cuda")
    y = torch.ones_like(x)
    o = torch.empty_like(x)
    model = torch.nn.Linear(64, 64).cuda()
    inp = torch.randn(8, 64, device="cuda")
    add_kernel[(4,)](x, y, o, 4096, BLOCK=1024)
    meta_kernel[(4,)](x, y, o, 4096, BLOCK=1024)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        add_kernel[(4,)](x, y, o, 4096, BLOCK=1024)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()

    deuteron.start("fixture", backend="cupti", context=context, hook="triton")
    with deuteron.scope("train"):
        for _ in range(3):
            for _ in range(4):
                add_kernel[(4,)](x, y, o, 4096, BLOCK=1024)
            model(inp).sum().backward()
    graph = torch.cuda.CUDAGraph()
    with deuteron.scope("capture"), torch.cuda.graph(graph):
        add_kernel[(4,)](x, y, o, 4096, BLOCK=1024)
        add_kernel[(4,)](o, y, o, 4096, BLOCK=1024)
    with deuteron.scope("replay"):
        graph.replay()
        graph.replay()
    with deuteron.scope("hooked"):
        for _ in range(3):
            meta_kernel[(4,)](x, y, o, 4096, BLOCK=1024)
    deuteron.finalize()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "shadow")
