"""Record the CUDA-graph replay fixture CI replays (tests/fixtures/cupti_torch_graph): run on a GPU.

    DEUTERON_CUPTI_RECORD=tests/fixtures/cupti_torch_graph python scripts/record_graph_replay_fixture.py

Known work, as a serving loop runs it: a two-layer MLP's forward is captured once with
``torch.cuda.graph`` in scope ``capture`` (under ``-c torch``: its modules and ops seen at capture)
and replayed 5 times, each replay in scope ``decode``. The replay test asserts that every replayed
kernel lands under ``decode > <captured_at> > capture > Model > ...`` with 5 launches each.
"""

from __future__ import annotations

import torch
from torch import nn

import deuteron

REPLAYS = 5


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 256)
        self.fc2 = nn.Linear(256, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def main() -> None:
    torch.manual_seed(0)
    model = Model().cuda().eval()
    x = torch.randn(8, 64, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(side):
        model(x)  # warm-up outside the profile: cuBLAS's handles and workspaces
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    deuteron.start("fixture", backend="cupti", context="torch")
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad():
        with deuteron.scope("capture"), torch.cuda.graph(graph):
            model(x)
        for _ in range(REPLAYS):
            with deuteron.scope("decode"):
                graph.replay()
    torch.cuda.synchronize()
    deuteron.finalize()


if __name__ == "__main__":
    main()
