"""Deuteron holds CUPTI and the program opens torch.profiler: one line says torch.profiler's GPU
events will be empty, and Deuteron's profile has every kernel (CPU twin: test_others.py)."""

from __future__ import annotations

from pathlib import Path

from deuteron.collect.backends.cupti import others
from tests.helpers.gpu import profile_script
from tests.helpers.profiles import json_kernel_counts

BODY = """
from torch.profiler import ProfilerActivity, profile
x = torch.randn(512, 512, device="cuda")
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
    for _ in range(5):
        x = x @ x / 512
    torch.cuda.synchronize()
"""


def test_torch_profiler_under_deuteron_is_told_and_nothing_is_lost(tmp_path: Path) -> None:
    tree, proc = profile_script(tmp_path, BODY)
    assert proc.stderr.count(others.MESSAGE) == 1
    assert sum(json_kernel_counts(tree[0]).values()) >= 10  # five GEMMs and five divisions at least
