"""The torch context on a real GPU: every kernel of a training step under its module, op and
backward node, the optimizer's step, torch.compile's kernels; with python paths too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deuteron.collect.placement import NO_PYTHON, OTHER_THREADS
from tests.helpers.gpu import profile_script
from tests.helpers.profiles import json_find, json_kernel_counts, json_kernel_paths, json_nodes
from tests.helpers.sources import encoder_model_source

TRAIN = encoder_model_source(64, "cuda") + """
loss_fn = torch.compile(lambda out, y: nn.functional.cross_entropy(out, y) * 1.5)
x, y = torch.randn(8, 16, 64, device="cuda"), torch.randint(0, 10, (8,), device="cuda")
for _ in range(3):
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
torch.cuda.synchronize()
"""


def names_below(node: dict[str, Any]) -> set[str]:
    return {n["frame"]["name"] for n in json_nodes(node)}


def test_training_step_kernels_land_under_modules_ops_and_backward_nodes(tmp_path: Path) -> None:
    tree, _ = profile_script(tmp_path, TRAIN, "-c", "torch")
    root = tree[0]
    counts = json_kernel_counts(root)
    assert sum(counts.values()) > 100
    names = [c["frame"]["name"] for c in root["children"]]
    assert OTHER_THREADS not in names_below(root) and NO_PYTHON not in names
    layers = [
        json_find(root, "Model", "encoder (TransformerEncoder)", f"layers.{i} (TransformerEncoderLayer)")
        for i in range(3)
    ]
    for layer in layers:  # repeated layers stay apart, each with its forward and backward kernels
        linear1 = json_find(layer, "linear1 (Linear)")
        forward = json_kernel_counts(json_find(linear1, "aten::linear"))
        assert forward and set(forward.values()) == {3}, forward  # each of its kernels once a step
        backward = json_find(linear1, "backward", "AddmmBackward0")
        assert sum(json_kernel_counts(backward).values()) >= 6  # two mm per step (grad input, grad weight)
    step = json_find(root, "optimizer.step (AdamW)")
    assert sum(json_kernel_counts(step).values()) >= 3
    compiled = [n for n in names_below(root) if n.startswith("triton_")]
    assert compiled, "torch.compile's Inductor kernels are named in the profile"
    assert all(n["metrics"]["cpu_time (ns)"] > 0 for n in layers)


def test_python_and_torch_combine(tmp_path: Path) -> None:
    tree, _ = profile_script(tmp_path, TRAIN, "-c", "python,torch")
    root = tree[0]
    script = str((tmp_path / "script.py").resolve())
    top = [c for c in root["children"] if c["frame"]["name"].startswith(script)]
    assert top, [c["frame"]["name"] for c in root["children"]]
    below = set().union(*(names_below(t) for t in top))
    assert "encoder (TransformerEncoder)" in below and "AddmmBackward0" in below
    lost = [c for c in root["children"] if c["frame"]["name"] == NO_PYTHON]
    assert not lost, json_kernel_counts(lost[0]) if lost else None


LOOP = encoder_model_source(64, "cuda") + """
x, y = torch.randn(8, 16, 64, device="cuda"), torch.randint(0, 10, (8,), device="cuda")
for _ in range(12):
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
torch.cuda.synchronize()
"""


def test_inferred_ops_give_the_same_tree_as_observed_ones(tmp_path: Path) -> None:
    """The default on a GPU (ops inferred once they repeat) against every op observed: each kernel
    has the same path, launched as many times, and inference did run without a miss."""
    from deuteron.formats import hatchet

    (tmp_path / "all").mkdir()
    (tmp_path / "infer").mkdir()
    observed, _ = profile_script(tmp_path / "all", LOOP, "-c", "torch", env={"DEUTERON_TORCH_OPS": "all"})
    inferred, _ = profile_script(tmp_path / "infer", LOOP, "-c", "torch")
    assert json_kernel_paths(inferred[0]) == json_kernel_paths(observed[0])
    stats = hatchet.read(tmp_path / "infer" / "out.hatchet").metadata["torch_ops"]
    assert isinstance(stats, dict)
    assert stats["inferred"] > 0 and stats["missed"] == 0, stats
