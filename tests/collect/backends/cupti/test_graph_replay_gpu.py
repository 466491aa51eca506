"""CUDA graphs in a serving loop under ``-c torch`` on a GPU: a model's forward captured once in
scope ``capture`` and replayed in scope ``decode``; every replayed kernel lands under
``decode > <captured_at> > capture > Model > ...`` (the replay's time, broken down as the capture
was), once per replay. The CPU twin replays the recorded drain (test_graph_replay.py)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.gpu import profile_script
from tests.helpers.profiles import json_find

REPLAYS = 7

BODY = f"""
import deuteron
from torch import nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(64, 256), nn.Linear(256, 64)
    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))

model = Model().cuda().eval()
x = torch.randn(8, 64, device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.no_grad(), torch.cuda.stream(side):
    model(x)
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
with torch.no_grad():
    with deuteron.scope("capture"), torch.cuda.graph(graph):
        model(x)
    for _ in range({REPLAYS}):
        with deuteron.scope("decode"):
            graph.replay()
torch.cuda.synchronize()
"""


def _kernels(node: dict) -> list[dict]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if not n["children"] and n["metrics"].get("count"):
            out.append(n)
        stack.extend(n["children"])
    return out


def test_each_replay_is_under_the_replaying_scope_then_the_capture(tmp_path: Path) -> None:
    tree, _ = profile_script(tmp_path, BODY, "-c", "torch")
    decode = json_find(tree[0], "decode")
    captured = json_find(decode, "<captured_at>")
    model = json_find(json_find(captured, "capture"), "Model")
    kernels = _kernels(model)
    assert len(kernels) >= 3  # two GEMMs (with their bias) and the relu
    assert all(k["metrics"]["count"] == REPLAYS for k in kernels), [k["metrics"]["count"] for k in kernels]
    for name in ("fc1 (Linear)", "fc2 (Linear)"):
        assert _kernels(json_find(model, name))
    at_capture = json_find(tree[0], "capture", "Model")
    assert not _kernels(at_capture)  # the model's kernels do not run at capture: each is a replay's
