"""The JAX context on a real GPU: examples/train_jax.py's kernels under the jitted function, its
named scopes, backward frames, primitives and HLO ops; XLA's autotuning under ``compile``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO
from tests.helpers.profiles import json_find, json_kernel_counts, json_nodes

pytest.importorskip("jax")
EXAMPLE = str(REPO / "examples" / "train_jax.py")
CALL_LINE = next(  # the example's line that calls train_step
    i for i, line in enumerate(Path(EXAMPLE).read_text().splitlines(), 1) if "= train_step(" in line
)


def profile(tmp_path: Path, context: str) -> dict[str, Any]:
    proc = run_cli(
        "run", "-b", "cupti", "-c", context, "-n", "out", EXAMPLE, "--steps", "3", cwd=tmp_path, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    root: dict[str, Any] = json.loads((tmp_path / "out.hatchet").read_text())[0]
    return root


def test_train_step_kernels_land_under_scopes_primitives_and_hlo_ops(tmp_path: Path) -> None:
    root = profile(tmp_path, "jax")
    step = json_find(root, "train_step (jit)")
    compiled = sum(json_kernel_counts(json_find(step, "compile")).values())
    assert compiled > 0, "XLA's autotuning kernels are under compile"
    layers = [json_find(step, "encoder", f"layers.{i}") for i in (0, 1)]
    forward = [
        sum(json_kernel_counts(json_find(layer, "attn", "q", "dot_general")).values()) for layer in layers
    ]
    assert forward[0] == forward[1] > 0 and forward[0] % 3 == 0  # repeated layers stay apart, each step
    for layer in layers:
        assert sum(json_kernel_counts(json_find(layer, "mlp")).values()) > 0
    assert sum(json_kernel_counts(json_find(layers[0], "attn", "backward")).values()) > 0
    assert sum(json_kernel_counts(json_find(step, "sgd", "sub")).values()) > 0
    # every kernel of the step (outside compile) sits below the HLO op that launched it
    for node in json_nodes(step):
        if node["frame"]["name"] == "compile":
            continue
        for child in node["children"]:
            if "count" in child["metrics"] and not child["children"]:
                assert node["frame"]["name"].endswith(" (HLO)"), (
                    node["frame"]["name"],
                    child["frame"]["name"],
                )


def test_python_and_jax_combine(tmp_path: Path) -> None:
    root = profile(tmp_path, "python,jax")
    callers = [n for n in json_nodes(root) if n["frame"]["name"].endswith(f"train_jax.py:{CALL_LINE}@main")]
    assert callers, [n["frame"]["name"] for n in json_nodes(root)][:30]
    step = json_find(callers[0], "train_step (jit)")
    assert sum(json_kernel_counts(json_find(step, "encoder")).values()) > 0
