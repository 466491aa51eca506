"""The native context on a real GPU: the C/C++ frames each kernel was launched from."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.gpu import profile_script
from tests.helpers.profiles import json_find, json_kernel_paths

SCRIPT = """
import torch
a, b = torch.randn(512, 512, device="cuda"), torch.randn(512, 512, device="cuda")
o = torch.empty_like(a)
for _ in range(3):
    c = a @ b
    add(a, b, o)
torch.cuda.synchronize()
"""


def test_torch_and_triton_launches_carry_their_c_frames(tmp_path: Path) -> None:
    tree, _ = profile_script(tmp_path, SCRIPT, "-c", "python,native")
    kernels = list(json_kernel_paths(tree[0]).items())
    assert sum(count for _, count in kernels) >= 6
    from_torch = [p for p, _ in kernels if p[-1] != "add_kernel"]
    assert from_torch, kernels
    # randn and the matmul (cuBLAS, called by libtorch) come from libtorch's C++: some frame below
    # the Python line is in it
    assert all(any("libtorch_cuda" in f for f in p) for p in from_torch), from_torch
    triton_kernel = [p for p, _ in kernels if p[-1] == "add_kernel"]
    assert triton_kernel and all(any("script.py" in f for f in p) for p in triton_kernel)
    json_find(tree[0], *triton_kernel[0][1:-1])  # the path is a real chain of the tree
