"""Script text the tests write to a file and run in a fresh process."""

from __future__ import annotations

# The source of a masked vector-add kernel, for scripts the tests write and run in a fresh process.
ADD_KERNEL_SOURCE = """
import torch, triton, triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)
"""


def encoder_model_source(width: int, device: str = "cpu") -> str:
    """A script's opening: ``Model`` (a 3-layer nn.TransformerEncoder of ``width`` and a ``head``
    Linear) as ``model`` on ``device``, with AdamW as ``opt``; shared by the torch-context tests."""
    return f"""
import torch
from torch import nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer({width}, 4, {2 * width}, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 3, enable_nested_tensor=False)
        self.head = nn.Linear({width}, 10)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))

torch.manual_seed(0)
model = Model().to({device!r})
opt = torch.optim.AdamW(model.parameters())
"""


# Exercise 1's kernel (deuteron learn), endless: what the grader's timer must stop.
SPIN = (
    "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
    "def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
    "    i = 0\n    while i >= 0:\n        i += 1\n"
)
