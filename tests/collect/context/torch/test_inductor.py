"""torch.compile's kernels under the modules they fused, from Inductor's own provenance.

The placement is checked on a real run: a Hugging Face Llama training step compiled with
``torch.compile`` on an H200, profiled with ``-c torch`` (tests/fixtures/inductor_llama: the
profile as written before placement existed, and the provenance table a later run of the same
compile wrote into its profile). The provenance itself is read from a real compile on the CPU,
where Inductor generates C++ kernels through the same provenance call.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from deuteron.collect.context.torch import inductor
from deuteron.formats import hatchet
from deuteron.model.tree import Node
from tests.helpers.paths import FIXTURES_DIR, REPO
from tests.helpers.profiles import child_path as at

FIXTURE = FIXTURES_DIR / "inductor_llama"


def _kernels(node: Node) -> dict[str, tuple[int, int]]:
    """Every Triton kernel below ``node``: (launches, time) summed by name."""
    out: dict[str, tuple[int, int]] = {}
    for n in node.walk():
        if n.name.startswith("triton_") and "count" in n.metrics:
            c, t = out.get(n.name, (0, 0))
            out[n.name] = (c + int(n.metrics["count"]), t + int(n.metrics["time (ns)"]))
    return out


def test_a_compiled_llamas_kernels_go_under_their_modules_with_nothing_lost() -> None:
    profile = hatchet.read(FIXTURE / "unplaced.hatchet")
    table = json.loads((FIXTURE / "provenance.json").read_text())
    before = _kernels(profile.root)
    moved = inductor.place(profile, table)
    assert moved >= 20 and _kernels(profile.root) == before  # every launch and nanosecond kept
    compiled = at(profile.root, "LlamaForCausalLM (compiled)")
    forward = at(compiled, "Torch-Compiled Region: 0/0", "CompiledFunction")
    backward = at(compiled, "backward", "CompiledFunctionBackward")  # autograd's: outside the region
    silu = at(forward, "model (LlamaModel)", "layers.{0,1,2,3} (LlamaDecoderLayer)", "mlp (LlamaMLP)")
    assert set(_kernels(silu)) == {"triton_poi_fused__unsafe_view_mul_silu_6"}  # one kernel, four layers
    assert _kernels(silu)["triton_poi_fused__unsafe_view_mul_silu_6"][0] == 52  # 4 layers x 13 steps
    rotary = at(forward, "model (LlamaModel)", "rotary_emb (LlamaRotaryEmbedding)")
    assert "triton_poi_fused__to_copy_expand_unsqueeze_1" in _kernels(rotary)
    embed = at(backward, "model (LlamaModel)", "embed_tokens (Embedding)")
    assert set(_kernels(embed)) == {
        "triton_poi_fused_embedding_dense_backward_15",
        "triton_poi_fused_embedding_dense_backward_17",
    }
    silu_back = at(backward, "model (LlamaModel)", "layers.{0,1,2,3} (LlamaDecoderLayer)", "mlp (LlamaMLP)")
    node = at(silu_back, "triton_poi_fused__unsafe_view_mul_silu_silu_backward_view_4")
    assert "aten.silu_backward" in str(node.metrics["fused_ops"])
    assert "activations.py:103" in str(node.metrics["source_lines"]).split(", ")  # ACT2FN's silu
    # the loss's kernels fused no module's op: they stay with the compiled model itself
    assert any(k.startswith("triton_red_fused__log_softmax") for k in _kernels(backward))
    assert profile.metadata["inductor_kernels"] == table
    again = hatchet.read(FIXTURE / "unplaced.hatchet")  # the table a written profile carries
    assert inductor.place(again, profile.metadata["inductor_kernels"]) == moved


def test_frames_fold_a_layer_index_and_stop_where_sites_differ_otherwise() -> None:
    stacks = [
        ["model (M)", "layers.0 (Block)", "norm (Norm)"],
        ["model (M)", "layers.2 (Block)", "norm (Norm)"],
    ]
    assert inductor.shared_frames(stacks) == ["model (M)", "layers.{0,2} (Block)", "norm (Norm)"]
    assert inductor.shared_frames([["model (M)", "head (Linear)"], ["model (M)", "norm (Norm)"]]) == [
        "model (M)"
    ]
    assert inductor.shared_frames([]) == []
    stack = [
        ("L['self'].model", "transformers.LlamaModel"),
        ("L['self'].model.layers.0", type("Layer", (), {})),
    ]
    assert inductor.module_frames(stack) == ["model (LlamaModel)", "layers.0 (Layer)"]


COMPILED = """
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm, self.fc = nn.LayerNorm(32), nn.Linear(32, 32)

    def forward(self, x):
        return x + torch.relu(self.fc(self.norm(x)))

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Block() for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x.sum()

with torch.no_grad():
    torch.compile(Model())(torch.randn(4, 32))
"""


@pytest.mark.slow
def test_inductors_provenance_is_read_from_a_real_compile(tmp_path: Path) -> None:
    """A fresh process: the hook goes in before Inductor is imported, as under ``deuteron run``; run
    twice, since the second compile would load from Inductor's cache and generate nothing."""
    (tmp_path / "model.py").write_text(COMPILED)
    probe = textwrap.dedent(
        f"""
        import json, runpy, sys
        sys.path.insert(0, {str(REPO)!r})
        from deuteron.collect.context.torch import inductor
        inductor.watch()
        runpy.run_path("model.py")
        found = {{k: inductor.shared_frames(v["modules"]) for k, v in inductor.TABLE.items()}}
        print(json.dumps({{"frames": found, "table": inductor.TABLE}}))
        """
    )
    for _ in range(2):  # the second would load the first's compile from Inductor's caches
        proc = subprocess.run(
            [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
    printed = json.loads(proc.stdout.strip().splitlines()[-1])
    table = printed["table"]
    assert table and all(key.startswith("0/0:fwd:cpp_fused_") for key in table)
    frames = [tuple(f) for f in printed["frames"].values()]
    assert ("layers.0 (Block)", "norm (LayerNorm)") in frames  # the first norm, alone
    assert any(f and f[0].startswith("layers.{") for f in frames)  # fused across layers: folded
    lines = {line.rsplit("/", 1)[-1] for v in table.values() for line in v["lines"]}
    assert lines == {"model.py:11", "model.py:21"}  # Block.forward's line, Model.forward's sum
    assert any("aten.native_layer_norm" in v["aten"] for v in table.values())
