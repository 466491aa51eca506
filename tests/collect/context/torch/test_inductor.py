"""torch.compile's kernels under the modules they fused, from Inductor's own provenance.

The placement is checked on a real run: a Hugging Face Llama training step compiled with
``torch.compile`` on an H200, profiled with ``-c torch`` (tests/fixtures/inductor_llama: the
profile as written before placement existed, and the provenance table a later run of the same
compile wrote into its profile). The provenance itself is read from a real compile on the CPU
(Inductor generates C++ kernels there, through the same provenance call) by test_torch_context.py's
compiled-model test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

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


def test_watching_turns_inductors_caches_off_unless_the_user_set_them(tmp_path: Path) -> None:
    """A graph loaded from Inductor's caches generates no code, so no provenance: watching turns
    them off before Inductor reads its config, and leaves a user's own setting alone. (A real
    compile under -c torch, its provenance read back from the written profile, is in
    test_torch_context.py.)"""
    probe = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {str(REPO)!r})
        from deuteron.collect.context.torch import inductor
        inductor.watch()
        print(os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"], os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"])
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHINDUCTOR_")}
    for extra, expected in (({}, "0 0"), ({"TORCHINDUCTOR_FX_GRAPH_CACHE": "1"}, "1 0")):
        proc = subprocess.run(
            [sys.executable, "-c", probe], env={**env, **extra}, capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0 and proc.stdout.split() == expected.split(), proc.stderr
