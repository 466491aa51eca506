"""A small PyTorch training loop for ``deuteron run -c torch``: a TransformerEncoder classifier
trained a few steps with AdamW, on the GPU when there is one, else on the CPU.

    deuteron run -c torch examples/train_encoder.py --steps 3
"""

from __future__ import annotations

import argparse

import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self, width: int = 64, layers: int = 2, classes: int = 10) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(width, 4, 2 * width, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x).mean(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    model = Classifier().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(16, 32, 64, device=device)
    y = torch.randint(0, 10, (16,), device=device)
    for _ in range(args.steps):
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
    print(f"loss after {args.steps} steps: {loss.item():.4f}")


if __name__ == "__main__":
    main()
