"""CUDA graphs in a serving loop under ``-c torch``, replayed without a GPU (fixture cupti_torch_graph).

Recorded on an H200 by ``scripts/record_graph_replay_fixture.py`` (torch 2.11+cu130): a two-layer
MLP's forward captured once in scope ``capture`` and replayed 5 times in scope ``decode``. Each
replayed kernel must sit under the scope that replayed it, then ``<captured_at>`` and the whole
place it was captured in (scope, module, op): the replay's time broken down as the capture was.
The GPU twin is test_graph_replay_gpu.py.
"""

from __future__ import annotations

from deuteron.collect.backends.cupti import replay
from deuteron.collect.placement import CAPTURED_AT
from deuteron.collect.session import Session
from tests.helpers.paths import FIXTURES_DIR
from tests.helpers.profiles import child_path as at
from tests.helpers.profiles import kernel_count

REPLAYS = 5


def test_each_replay_lands_under_its_scope_then_the_capture_modules_and_ops() -> None:
    session = Session(0, "fixture", backend="interpreter", context="torch")
    replay(FIXTURES_DIR / "cupti_torch_graph", session)
    root = session.profile.root
    decode = at(root, "decode")
    model = at(decode, CAPTURED_AT, "capture", "Model")
    assert kernel_count(decode) == kernel_count(model) == 3 * REPLAYS
    for path in (
        ("fc1 (Linear)", "aten::linear", "aten::addmm"),
        ("fc2 (Linear)", "aten::linear", "aten::addmm"),
    ):
        gemm = at(model, *path)
        assert kernel_count(gemm) == REPLAYS
    assert kernel_count(at(model, "aten::relu", "aten::clamp_min")) == REPLAYS
    # at capture the model's ops ran no kernel: the frames are there (seen at capture), empty
    assert kernel_count(at(root, "capture", "Model")) == 0
