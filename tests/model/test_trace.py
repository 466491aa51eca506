"""GPU time sums over kernel spans: busy time (overlaps once) and the collectives' exposed share."""

from __future__ import annotations

import numpy as np

from deuteron.model.trace import KernelSpans, comm_overlap, gpu_busy
from deuteron.model.tree import KERNEL, Node


def _spans(groups: list[str | None], rows: list[tuple[int, int, int]]) -> KernelSpans:
    """Kernels as (group, start, end); a group None stands for kernels left out of the tree."""
    nodes = [Node(name, KERNEL) if name is not None else None for name in groups]
    g, s, e = (np.asarray(col, dtype=np.int64) for col in zip(*rows, strict=True))
    zeros = np.zeros(len(rows), dtype=np.int64)
    return KernelSpans(nodes, g, s, e, zeros, zeros, zeros, zeros)


def test_communication_hidden_behind_compute_and_exposed() -> None:
    nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    # all-reduce 0-100 overlaps a gemm 40-70 (30 hidden); a second all-reduce 150-160 meets a gemm
    # on another stream 155-200 (5 hidden); two all-reduces overlapping each other count once.
    spans = [
        _spans([nccl, "gemm"], [(0, 0, 100), (1, 40, 70), (0, 150, 160), (0, 152, 158)]),
        _spans(["gemm", None], [(0, 155, 200), (1, 300, 310)]),
    ]
    assert comm_overlap(spans) == (110, 35)
    assert gpu_busy(spans) == (100 + 50 + 10, 310)


def test_no_collectives_no_overlap() -> None:
    assert comm_overlap([_spans(["gemm"], [(0, 0, 10)])]) == (0, 0)
    assert comm_overlap([]) == (0, 0)
