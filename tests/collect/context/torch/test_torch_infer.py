"""Ops inferred at launches (``DEUTERON_TORCH_OPS=infer``, the default with a GPU): observed until
each launch's op repeats at its position in its module call, then given without the op callback,
and every later launch checked against the kernel learned there.

Without a GPU there is no CUPTI shim to call the probe, so a custom op calls it the way the shim
does at a kernel launch (``deut_launch(kernel name, 1)``), from inside the op, in forward and in
backward, in a real training loop with real modules, autograd's threads and an optimizer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.paths import REPO

pytest.importorskip("torch")

SCRIPT = textwrap.dedent(
    """
    import ctypes, json, sys
    import torch
    import torch.utils.checkpoint
    from torch import nn
    import deuteron
    from deuteron.collect.context.torch import library as op_probe, source as tctx
    from deuteron.collect.context.torch.trie import BASE
    steps, change_at = int(sys.argv[1]), int(sys.argv[2])
    seen = []          # (step, path of the place each launch got)
    kernel = {"name": "gemm_kernel"}

    def launch(name):
        place_id = op_probe.load().deut_launch(name.encode(), 1)
        seen.append((step, path(place_id)))

    @torch.library.custom_op("deut_test::scaled", mutates_args=())
    def scaled(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        launch(kernel["name"])
        return x * w

    @scaled.register_fake
    def _(x, w):
        return torch.empty_like(x)

    @torch.library.custom_op("deut_test::scaled_grad", mutates_args=())
    def scaled_grad(g: torch.Tensor, x: torch.Tensor, w: torch.Tensor) -> list[torch.Tensor]:
        launch("grad_kernel")
        return [g * w, (g * x).sum(0)]

    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gx, gw = scaled_grad(g, x, w)
        return gx, gw

    def setup(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    scaled.register_autograd(backward, setup_context=setup)

    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(8))
        def forward(self, x):
            return scaled(x, self.w)

    class Checkpointed(nn.Module):  # its modules run inside torch.utils.checkpoint
        def __init__(self, reentrant):
            super().__init__()
            self.inner, self.reentrant = nn.Sequential(nn.Linear(8, 8), Scale()), reentrant
        def forward(self, x):
            return torch.utils.checkpoint.checkpoint(self.inner, x, use_reentrant=self.reentrant)

    class Nested(torch.autograd.Function):  # its backward runs a scope and a nested backward
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with torch.enable_grad():
                xx = x.detach().requires_grad_()
                with torch.autograd.profiler.record_function("inner_grad"):
                    (gx,) = torch.autograd.grad(scaled(xx, torch.ones(8)).sum(), xx)
            launch("after_kernel")
            return g * 2 + gx

    class NestedGrad(nn.Module):
        def forward(self, x):
            return Nested.apply(x)

    if sys.argv[3] == "plain":
        model = nn.Sequential(nn.Linear(8, 8), Scale(), nn.Linear(8, 8), Scale())
    elif sys.argv[3] == "nested":
        model = nn.Sequential(nn.Linear(8, 8), NestedGrad(), Scale())
    else:
        model = nn.Sequential(Checkpointed(sys.argv[3] == "reentrant"), nn.Linear(8, 8), Scale())
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(4, 8, requires_grad=sys.argv[3] != "plain")

    def path(place_id):
        torch_context = tctx.active()
        torch_context.sync()
        trie = torch_context.trie
        out = []
        while place_id and place_id < len(trie) and trie.kind[place_id] != BASE:
            out.append(torch_context.placer.frame(place_id))
            place_id = int(trie.parent[place_id])
        return " > ".join(reversed(out))

    deuteron.start("infer", context="torch")
    observing = []
    for step in range(steps):
        if step == change_at:
            kernel["name"] = "other_gemm_kernel"    # the second Scale now launches another kernel
        loss = model(x).square().mean()
        launch("top_kernel")                        # a launch outside any module, after it
        loss.backward()
        opt.step()
        opt.zero_grad()
        observing.append(tctx.active().infer_stats()["observing"])
    stats = tctx.active().infer_stats()
    deuteron.finalize()
    from deuteron.formats import hatchet
    profile = hatchet.read("infer.hatchet")
    cpu = {n.name: "cpu_time (ns)" in n.metrics for n in profile.root.walk()}
    calls = {n.name: n.metrics.get("calls", 0) for n in profile.root.walk()}
    print(json.dumps({"seen": seen, "observing": observing, "stats": stats, "cpu": cpu,
                      "calls": calls, "meta": profile.metadata.get("torch_ops")}))
    """
)


def _run(
    tmp_path: Path, steps: int, change_at: int, ops: str = "infer", model: str = "plain"
) -> dict[str, Any]:
    script = tmp_path / "infer_loop.py"
    script.write_text(SCRIPT)
    env = {"PYTHONPATH": str(REPO), "DEUTERON_TORCH_OPS": ops, "PATH": "/usr/bin:/bin"}
    env["DEUTERON_CACHE"] = os.environ.get("DEUTERON_CACHE", str(Path.home() / ".cache" / "deuteron"))
    done = subprocess.run(
        [sys.executable, str(script), str(steps), str(change_at), model],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _by_step(seen: list[list[Any]]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for step, where in seen:
        out.setdefault(step, []).append(where)
    return out


@pytest.fixture(scope="module")
def observed_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every op observed (DEUTERON_TORCH_OPS=all): what inference must reproduce."""
    result = _run(tmp_path_factory.mktemp("all"), 20, 99, ops="all")
    assert result["cpu"]["deut_test::scaled"] and result["meta"] is None  # ops timed, no inference
    return result


@pytest.fixture(scope="module")
def observed(observed_run: dict[str, Any]) -> dict[int, list[str]]:
    return _by_step(observed_run["seen"])


def test_inferred_places_equal_observed_ones_once_learned(
    tmp_path: Path, observed: dict[int, list[str]], observed_run: dict[str, Any]
) -> None:
    observed_calls = observed_run["calls"]
    result = _run(tmp_path, 20, 99)
    steps = _by_step(result["seen"])
    # Each step launches 2 forward kernels, 1 at the top, 2 in backward.
    assert all(len(v) == 5 for v in steps.values())
    assert steps[19] == observed[19]
    assert "1 (Scale) > deut_test::scaled" in steps[19][0]
    assert any("backward > " in p and "deut_test::scaled_grad" in p for p in steps[19])
    stats = result["stats"]
    # Learning stops once the launches repeat: ops are no longer observed, and later launches
    # got their places from what was learned, none missed.
    assert result["observing"][0] == 1 and result["observing"][-1] == 0
    assert stats["inferred"] > 0 and stats["missed"] == 0 and stats["switches"] == 1
    # the file says so, and ops (timed only while observed) carry no CPU time; modules do
    assert result["meta"]["mode"] == "infer" and result["meta"]["inferred"] == stats["inferred"]
    assert result["cpu"]["1 (Scale)"] and not result["cpu"]["deut_test::scaled"]
    # their calls are the calls that launched, counted at every launch, observed or inferred:
    # one per Scale per step (the two Scales' ops share a name, each under its own module),
    # as when every op is observed
    assert result["calls"]["deut_test::scaled"] == 20 == observed_calls["deut_test::scaled"]
    assert result["calls"]["deut_test::scaled_grad"] == 20 == observed_calls["deut_test::scaled_grad"]
    # backward nodes are then read from autograd at launches, with no callback to time them: a
    # node's calls are its runs that launched, and it has no CPU time
    node = "GeneratedBackwardFor_deut_test_scaled_defaultBackward"
    assert result["calls"][node] == 20 == observed_calls[node]
    assert observed_run["cpu"][node] and not result["cpu"][node]
    inferred_steps = [i for i, o in enumerate(result["observing"]) if o == 0]
    for step in inferred_steps[1:]:
        assert steps[step] == observed[step]


def test_a_different_kernel_at_a_learned_position_is_not_given_the_learned_op(
    tmp_path: Path, observed: dict[int, list[str]]
) -> None:
    result = _run(tmp_path, 40, 20)
    steps = _by_step(result["seen"])
    assert result["observing"][19] == 0  # inferring when the kernel changes
    changed = steps[20]
    # The first changed launch missed: it lands under its module, without an op; the op callback
    # is on again, so the second one (the other Scale) is observed with its op.
    assert changed[0].endswith("1 (Scale)")
    assert "3 (Scale) > deut_test::scaled" in changed[1]
    stats = result["stats"]
    assert stats["missed"] == 1 and stats["switches"] == 3  # off, on at the miss, off again
    assert result["observing"][-1] == 0
    assert steps[39] == observed[19]  # relearned: the same places as when every op is observed


@pytest.mark.parametrize("model", ["checkpoint", "reentrant"])
def test_modules_inside_checkpoint_get_the_same_places_in_every_step(tmp_path: Path, model: str) -> None:
    """torch.utils.checkpoint runs modules inside an autograd Function's apply (reentrant) or
    again in backward: a module's place must not depend on whether ops are observed, or the
    inferred steps would miss."""
    result = _run(tmp_path, 30, 99, model=model)
    steps = _by_step(result["seen"])
    assert result["stats"]["missed"] == 0 and result["stats"]["inferred"] > 0
    assert result["observing"][-1] == 0
    assert all(steps[i] == steps[0] for i in steps)  # learned (step 0) and inferred (later) alike
    assert any("backward" in p and "1 (Scale) > deut_test::scaled" in p for p in steps[0])  # recomputed


def test_a_scope_and_a_nested_backward_inside_a_node_keep_every_step_the_same(tmp_path: Path) -> None:
    """A custom backward that opens a scope, runs a nested backward in it, then launches: where the
    node's run is found to end must not change launch keys between observed and inferred steps."""
    result = _run(tmp_path, 30, 99, model="nested")
    steps = _by_step(result["seen"])
    assert result["stats"]["missed"] == 0 and result["stats"]["inferred"] > 0, result["stats"]
    assert result["observing"][-1] == 0
    assert all(steps[i] == steps[0] for i in steps)
    assert any(p.endswith("1 (NestedGrad) > backward > NestedBackward") for p in steps[0]), steps[0]


SCOPED = """
import json
import torch
from torch import nn
import deuteron
from deuteron.collect.context.torch import library as op_probe, source as tctx
def launch(name):
    op_probe.load().deut_launch(name.encode(), 1)

@torch.library.custom_op("deut_scoped::scaled", mutates_args=())
def scaled(x: torch.Tensor) -> torch.Tensor:
    launch("gemm_kernel")
    return x * 2

@scaled.register_fake
def _(x):
    return torch.empty_like(x)

class Scale(nn.Module):
    def forward(self, x):
        return scaled(x)

model = nn.Sequential(nn.Linear(8, 8), Scale())
x = torch.randn(4, 8)
deuteron.start("scoped", context="python,torch")
for step in range(200):
    with torch.profiler.record_function("load"):   # a scope at the top, with a base of its own
        pass
    launch("prep_kernel")                          # at the top, after the scope
    y = model(x)
    launch("loss_kernel")                          # at the top, after the module call
stats = tctx.active().infer_stats()
deuteron.finalize()
print(json.dumps(stats))
"""


def test_top_level_launches_after_a_scope_and_after_a_module_are_told_apart(tmp_path: Path) -> None:
    """``-c python,torch``: a scope and a module call at the top each set the thread's base and
    clear it; the launches at the top after each must get different keys, or the two would
    share a learned place and ops would be observed forever."""
    (tmp_path / "scoped.py").write_text(SCOPED)
    env = {"PYTHONPATH": str(REPO), "DEUTERON_TORCH_OPS": "infer", "PATH": "/usr/bin:/bin"}
    env["DEUTERON_CACHE"] = os.environ.get("DEUTERON_CACHE", str(Path.home() / ".cache" / "deuteron"))
    done = subprocess.run(
        [sys.executable, "scoped.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    stats = json.loads(done.stdout.strip().splitlines()[-1])
    assert stats["learned"] == 3 and stats["missed"] == 0, stats
    assert stats["observing"] == 0 and stats["inferred"] > 0, stats


def test_infer_with_flops_is_refused_in_one_line(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text("import torch\nx = torch.ones(2) * 2\n")
    env = {"PYTHONPATH": str(REPO), "DEUTERON_TORCH_OPS": "infer", "DEUTERON_TORCH_FLOPS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "deuteron", "run", "-c", "torch", str(script)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**env, "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "DEUTERON_TORCH_OPS=infer" in done.stderr
