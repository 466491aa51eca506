"""Record the torch-context CUPTI fixture CI replays (tests/fixtures/cupti_torch): run on a GPU.

    DEUTERON_CUPTI_RECORD=tests/fixtures/cupti_torch python scripts/record_torch_fixture.py

Known work: two training steps in scope ``step`` of a model with a 2-layer
``nn.TransformerEncoder`` (d_model 64) and a ``head`` Linear, a cross-entropy loss outside the
model, and AdamW. The replay test asserts where forward, backward and optimizer kernels land.
"""

from __future__ import annotations

import torch
from torch import nn

import deuteron


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x).mean(1))


def main() -> None:
    torch.manual_seed(0)
    model = Model().cuda()
    opt = torch.optim.AdamW(model.parameters())
    x, y = torch.randn(8, 16, 64, device="cuda"), torch.randint(0, 10, (8,), device="cuda")
    nn.functional.cross_entropy(model(x), y).backward()  # warm-up: lazy init outside the profile
    opt.step()
    opt.zero_grad()
    torch.cuda.synchronize()
    deuteron.start("fixture", backend="cupti", context="torch")
    for _ in range(2):
        with deuteron.scope("step"):
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
    deuteron.finalize()


if __name__ == "__main__":
    main()
