"""The torch context on the CPU, with real models in real processes: module paths by attribute
name, ops, backward nodes under the module that made them, the optimizer's step, torch.compile,
CPU time, calls and exact flops (checked against torch's own FlopCounterMode)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from deuteron.formats import hatchet
from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO
from tests.helpers.profiles import json_nodes
from tests.helpers.sources import encoder_model_source

torch = pytest.importorskip("torch")

MODEL = (
    encoder_model_source(32)
    + """
x, y = torch.randn(4, 8, 32), torch.randint(0, 10, (4,))
"""
)

TRAIN = (
    MODEL
    + """
for _ in range(2):
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
"""
)


def node(tree: dict[str, Any], *names: str) -> dict[str, Any]:
    for name in names:
        found = [c for c in tree["children"] if c["frame"]["name"] == name]
        assert found, (
            f"no {name!r} under {tree['frame']['name']!r}: {[c['frame']['name'] for c in tree['children']]}"
        )
        tree = found[0]
    return tree


def names(tree: dict[str, Any]) -> list[str]:
    return [c["frame"]["name"] for c in tree["children"]]


def profiled(
    tmp_path: Path, body: str, *args: str
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    (tmp_path / "train.py").write_text(textwrap.dedent(body))
    proc = run_cli("run", *args, "train.py", cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((tmp_path / "deuteron.hatchet").read_text())[0], proc


@pytest.fixture(scope="module")
def encoder_tree(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return profiled(tmp_path_factory.mktemp("encoder"), TRAIN, "-c", "torch")[0]


def test_modules_are_named_by_attribute_path_and_repeated_layers_stay_apart(
    encoder_tree: dict[str, Any],
) -> None:
    encoder = node(encoder_tree, "Model", "encoder (TransformerEncoder)")
    assert names(encoder)[:3] == [f"layers.{i} (TransformerEncoderLayer)" for i in range(3)]
    for i in range(3):
        layer = node(encoder, f"layers.{i} (TransformerEncoderLayer)")
        assert {"self_attn (MultiheadAttention)", "linear1 (Linear)", "norm2 (LayerNorm)"} <= set(
            names(layer)
        )
        assert node(layer, "linear1 (Linear)")["metrics"]["calls"] == 2  # two steps
    assert node(encoder_tree, "Model", "head (Linear)")["metrics"]["calls"] == 2


def test_ops_carry_cpu_time_calls_and_exact_flops(encoder_tree: dict[str, Any]) -> None:
    linear1 = node(
        encoder_tree,
        "Model",
        "encoder (TransformerEncoder)",
        "layers.1 (TransformerEncoderLayer)",
        "linear1 (Linear)",
    )
    products = [
        n
        for n in json_nodes(node(linear1, "aten::linear"))
        if n["frame"]["name"] in ("aten::mm", "aten::addmm")
    ]
    assert len(products) == 1, [n["frame"]["name"] for n in products]  # how linear decomposes varies by shape
    addmm = products[0]["metrics"]
    # (4*8, 32) @ (32, 64), two steps: 2*m*k*n each
    assert addmm["flops"] == 2 * (2 * 32 * 32 * 64)
    assert addmm["calls"] == 2 and addmm["cpu_time (ns)"] > 0
    assert linear1["metrics"]["cpu_time (ns)"] >= addmm["cpu_time (ns)"]  # a frame's time holds its ops'


def test_backward_nodes_land_under_the_module_that_made_them(encoder_tree: dict[str, Any]) -> None:
    layer = node(encoder_tree, "Model", "encoder (TransformerEncoder)", "layers.2 (TransformerEncoderLayer)")
    grads = node(layer, "linear2 (Linear)", "backward")
    assert {"AddmmBackward0", "TBackward0"} <= set(names(grads)) or {"MmBackward0", "TBackward0"} <= set(
        names(grads)
    )
    mm = [n for n in json_nodes(grads) if n["frame"]["name"] == "aten::mm"]
    assert mm and sum(n["metrics"].get("flops", 0) for n in mm) == 2 * 2 * (
        2 * 32 * 64 * 32
    )  # grad in, grad w
    attention = node(layer, "self_attn (MultiheadAttention)", "backward")
    assert any("Attention" in n for n in names(attention)), names(attention)
    loss = node(encoder_tree, "backward")  # the loss is computed outside the model
    assert {"NllLossBackward0", "LogSoftmaxBackward0"} <= set(names(loss))


def test_optimizer_step_and_zero_grad_have_frames(encoder_tree: dict[str, Any]) -> None:
    step = node(encoder_tree, "optimizer.step (AdamW)")
    assert step["metrics"]["calls"] == 2 and step["metrics"]["cpu_time (ns)"] > 0
    assert any(n.startswith("aten::") for n in names(step))
    assert node(encoder_tree, "optimizer.zero_grad (AdamW)")["metrics"]["calls"] == 2


CNN = """
import json, sys
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode
import deuteron

torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.MaxPool2d(2),
    nn.Conv2d(8, 16, 3, stride=2, groups=2), nn.ReLU(inplace=True), nn.ConvTranspose2d(16, 4, 2, stride=2),
    nn.Flatten(), nn.LazyLinear(10),
)
x = torch.randn(2, 3, 16, 16)
model(x)  # materialise the lazy layer

def step():
    model(x).sum().backward()

with FlopCounterMode(display=False) as counter:
    step()
deuteron.start("cnn", context="torch")
step()
deuteron.finalize()
print("EXPECTED", json.dumps(counter.get_total_flops()))
"""


def test_cnn_flops_equal_torch_flop_counter(tmp_path: Path) -> None:
    (tmp_path / "cnn.py").write_text(CNN)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "cnn.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = int(next(line for line in proc.stdout.splitlines() if line.startswith("EXPECTED")).split()[1])
    tree = json.loads((tmp_path / "cnn.hatchet").read_text())[0]
    got = sum(n["metrics"].get("flops", 0) for n in json_nodes(tree) if n["frame"]["type"] == "function")
    ours = [n for n in json_nodes(tree) if n["metrics"].get("flops")]
    assert expected > 0 and got == expected, (got, expected)
    sequential = node(tree, "Sequential")
    assert {"0 (Conv2d)", "4 (Conv2d)", "6 (ConvTranspose2d)", "8 (Linear)"} <= set(names(sequential))
    conv = node(sequential, "4 (Conv2d)", "backward", "ConvolutionBackward0")
    assert any(n["frame"]["name"] == "aten::convolution_backward" for n in json_nodes(conv)), ours


CUSTOM = (
    MODEL.replace(
        "class Model",
        """
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad

class Squarer(nn.Module):
    def forward(self, x):
        return Square.apply(x)

class Model""",
    )
    .replace("self.head = nn.Linear(32, 10)", "self.head = nn.Linear(32, 10); self.act = Squarer()")
    .replace(
        "return self.head(self.encoder(x).mean(1))", "return self.act(self.head(self.encoder(x).mean(1)))"
    )
    + """
nn.functional.cross_entropy(model(x), y).backward()
"""
)


def test_custom_autograd_function_backward_lands_under_its_module(tmp_path: Path) -> None:
    tree, _ = profiled(tmp_path, CUSTOM, "-c", "torch")
    grads = node(tree, "Model", "act (Squarer)", "backward")
    assert "SquareBackward" in names(grads)
    assert node(grads, "SquareBackward")["metrics"]["calls"] == 1


COMPILED = (
    MODEL
    + """
compiled = torch.compile(model)
for _ in range(2):
    loss = nn.functional.cross_entropy(compiled(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
"""
)


@pytest.mark.slow
def test_torch_compile_regions_land_under_the_compiled_module(tmp_path: Path) -> None:
    tree, _ = profiled(tmp_path, COMPILED, "-c", "torch")
    compiled = node(tree, "Model (compiled)")
    assert compiled["metrics"]["calls"] == 2
    below = {n["frame"]["name"] for n in json_nodes(compiled)}
    assert "CompiledFunction" in below and "CompiledFunctionBackward" in below, sorted(below)[:40]
    assert "encoder (TransformerEncoder)" not in below  # inside the compiled region no module wrapper runs
    # Inductor's provenance of each kernel it generated (C++ here; Triton's on a GPU), from its
    # own call, with its caches off so a warm cache cannot hide it (inductor.py)
    table = hatchet.read(tmp_path / "deuteron.hatchet").metadata["inductor_kernels"]
    assert any(":fwd:cpp_fused_" in k for k in table) and any(":bwd:cpp_fused_" in k for k in table)
    frames = {f for entry in table.values() for stack in entry["modules"] for f in stack}
    assert {"encoder (TransformerEncoder)", "head (Linear)"} <= frames, sorted(frames)
    assert any(frame.startswith("layers.") and "(TransformerEncoderLayer)" in frame for frame in frames)
    assert any(
        line.startswith(str(tmp_path)) or "train.py" in line for e in table.values() for line in e["lines"]
    )


def test_python_and_torch_combine_on_the_cpu(tmp_path: Path) -> None:
    tree, _ = profiled(tmp_path, TRAIN, "-c", "python,torch")
    script = str((tmp_path / "train.py").resolve())
    calls = [c for c in tree["children"] if c["frame"]["name"].startswith(script)]
    assert calls and any("Model" in names(c) for c in calls), names(tree)
    # the optimizer's step and zero_grad (scopes opened outside any module) sit under the script
    # lines that called them, as the model's call does, not at the top
    lines = textwrap.dedent(TRAIN).splitlines()
    scopes = (("opt.step()", "optimizer.step (AdamW)"), ("opt.zero_grad()", "optimizer.zero_grad (AdamW)"))
    for call, frame in scopes:
        line = next(i for i, text in enumerate(lines, 1) if text.strip() == call)
        assert frame in names(node(tree, f"{script}:{line}@<module>")), names(tree)
        assert frame not in names(tree)


QUICKSTART = """
import torch
from torch import nn
model = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(4, 8)
for _ in range(3):
    out = model(x)
    loss = out.square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_backward_of_no_module_stays_at_the_model_call_after_a_scope(tmp_path: Path) -> None:
    """``-c python,torch`` with PyTorch's quickstart order (``zero_grad`` between the forward and
    ``backward``): the loss's backward nodes go with the model's call, not with the line of the
    optimizer scope that ran last."""
    tree, _ = profiled(tmp_path, QUICKSTART, "-c", "python,torch")
    script = str((tmp_path / "train.py").resolve())
    lines = QUICKSTART.splitlines()
    model_line = next(i for i, text in enumerate(lines, 1) if text.strip() == "out = model(x)")
    backward = node(tree, f"{script}:{model_line}@<module>", "backward")
    assert {"MeanBackward0", "PowBackward0"} <= set(names(backward)), names(backward)
    zero_grad_line = next(i for i, text in enumerate(lines, 1) if text.strip() == "opt.zero_grad()")
    assert names(node(tree, f"{script}:{zero_grad_line}@<module>")) == ["optimizer.zero_grad (SGD)"]


def test_fold_repeats_groups_repeated_layers(encoder_tree: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "p.hatchet"
    path.write_text(json.dumps([encoder_tree]))
    proc = run_cli("view", str(path), "-m", "calls", "--fold-repeats", "-d", "5", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "layers.* (TransformerEncoderLayer)" in proc.stdout and "layers.0" not in proc.stdout
    folded = [line.split() for line in proc.stdout.splitlines() if "linear1 (Linear)" in line]
    assert len(folded) == 1 and float(folded[0][0]) == 6  # three layers, two steps each


@pytest.mark.parametrize("bad", ["torhc", "python,shadow", ","])
def test_bad_context_is_one_line(tmp_path: Path, bad: str) -> None:
    (tmp_path / "t.py").write_text("print('ran')\n")
    proc = run_cli("run", "-c", bad, "t.py", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "ran" not in proc.stdout
    assert "context" in proc.stderr.splitlines()[-1]


@pytest.mark.slow
def test_a_plain_pytorch_script_without_torch_context_says_what_to_do(tmp_path: Path) -> None:
    _, proc = profiled(tmp_path, MODEL + "model(x).sum().backward()\n")
    assert "-c torch" in proc.stderr and "Traceback" not in proc.stderr
    view = run_cli("view", "deuteron.hatchet", cwd=tmp_path)
    assert view.returncode == 2 and "-c torch" in view.stderr and "Traceback" not in view.stderr


WRAPPERS = (
    MODEL
    + """
import json, sys
import deuteron
from deuteron.collect.context.torch import calls as torch_calls
if sys.argv[1] == "python":  # as if the library had been built without Python's headers
    torch_calls.c_wrapper = lambda how: None


class Fails(nn.Module):
    def forward(self, x):
        raise ValueError("from inside a module")


deuteron.start("wrappers", backend="interpreter", context=sys.argv[2])
for _ in range(2):
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
try:
    model.head(Fails()(x))
except ValueError as e:
    raised = str(e)
loss = nn.functional.cross_entropy(model(x), y)  # after the exception: the stack is whole again
deuteron.finalize()
tree = json.load(open("wrappers.hatchet"))[0]


def paths(node, path=()):
    out = {}
    for child in node["children"]:
        here = path + (child["frame"]["name"],)
        out[" > ".join(here)] = child["metrics"].get("calls", 0)
        out.update(paths(child, here))
    return out


print(json.dumps({"raised": raised, "paths": paths(tree)}))
"""
)


@pytest.mark.parametrize("context", ["torch", "python,torch"])
@pytest.mark.slow
def test_the_c_module_path_and_the_python_one_give_the_same_tree(tmp_path: Path, context: str) -> None:
    """Module calls go through C (``deut_call_impl``) where the library has Python's headers, and
    through a Python wrapper where it has not: both give every path with the same calls, an
    exception raised inside a module closes its frame, and the next call starts at the root;
    with ``-c python,torch`` both start the modules at the script's own line."""
    (tmp_path / "wrappers.py").write_text(textwrap.dedent(WRAPPERS))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    results = {}
    for path in ("fast", "python"):
        done = subprocess.run(
            [sys.executable, "wrappers.py", path, context],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        results[path] = json.loads(done.stdout.strip().splitlines()[-1])
    fast, python = results["fast"]["paths"], results["python"]["paths"]
    assert results["fast"]["raised"] == "from inside a module"
    assert fast == python
    if context == "torch":
        assert fast["Model"] == 3  # two steps and the call after the exception: none of it under Fails
        assert fast["Model > encoder (TransformerEncoder) > layers.1 (TransformerEncoderLayer)"] == 3
        assert fast["Fails"] == 1 and not [p for p in fast if p.startswith("Fails > ")]
    else:  # each outermost module under the script line that called it, not under deuteron or torch
        roots = [p.split(" > ") for p in fast if p.endswith(" > Model") or p.endswith(" > Fails")]
        assert roots and all(len(r) == 2 and "wrappers.py" in r[0] for r in roots), roots
        assert sum(fast[" > ".join(r)] for r in roots if r[1] == "Model") == 3
