"""Test helpers: walk a profile by names."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from deuteron.model.tree import Node, Profile


def find(profile: Profile, *names: str) -> Node:
    """The node at ROOT/names[0]/names[1]/..., whatever each frame's type."""
    node = profile.root
    for name in names:
        matches = [c for c in node.children.values() if c.name == name]
        assert matches, (
            f"no frame {name!r} under {node.name!r}; children: {[c.name for c in node.children.values()]}"
        )
        node = matches[0]
    return node


def timed_profile(spec: dict[str, Any]) -> Profile:
    """A made profile from ``{name: (own ms, type, {children...})}`` (children optional), each
    node's own ``time (ns)`` as given: the small trees the web and view tests draw by hand."""
    profile = Profile()

    def add(parent: Node, children: dict[str, Any]) -> None:
        for name, (ms, kind, *below) in children.items():
            node = parent.child(name, kind)
            node.add("time (ns)", ms * 1e6)
            if below:
                add(node, below[0])

    add(profile.root, spec)
    return profile


def kernels(profile: Profile) -> dict[str, Node]:
    return {n.name: n for n in profile.root.walk() if n.type == "kernel"}


# The device table Proton wrote on an H200 (tests/fixtures/proton).
H200_TABLE = {
    "CUDA": {
        "0": {
            "arch": "90",
            "bus_width": 6016,
            "clock_rate": 1980000,
            "memory_clock_rate": 3201000,
            "num_sms": 132,
        }
    }
}


# The source of a masked vector-add kernel, for scripts the tests write and run in a fresh process.
ADD_KERNEL_SOURCE = """
import torch, triton, triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)
"""


def encoder_model_source(width: int, device: str = "cpu") -> str:
    """A script's opening: ``Model`` (a 3-layer nn.TransformerEncoder of ``width`` and a ``head``
    Linear) as ``model`` on ``device``, with AdamW as ``opt``; shared by the torch-context tests."""
    return f"""
import torch
from torch import nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer({width}, 4, {2 * width}, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 3, enable_nested_tensor=False)
        self.head = nn.Linear({width}, 10)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))

torch.manual_seed(0)
model = Model().to({device!r})
opt = torch.optim.AdamW(model.parameters())
"""


def child_path(node: Node, *names: str) -> Node:
    """The node at the end of ``names`` below ``node`` (by frame name); fails naming the choices."""
    for name in names:
        found = [c for c in node.children.values() if c.name == name]
        assert found, f"no {name!r} under {node.name!r}: {sorted(c.name for c in node.children.values())}"
        node = found[0]
    return node


def kernel_count(node: Node) -> int:
    """Kernel launches recorded anywhere under ``node``."""
    return sum(int(n.metrics.get("count", 0)) for n in node.walk())  # type: ignore[call-overload]


def json_nodes(tree: dict[str, Any]) -> list[dict[str, Any]]:
    """Every node of a hatchet JSON tree (as written to a file), ``tree`` included."""
    out, stack = [], [tree]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(n["children"])
    return out


def json_kernel_paths(tree: dict[str, Any], path: tuple[str, ...] = ()) -> dict[tuple[str, ...], int]:
    """Each kernel of a hatchet JSON tree by its whole path of frame names, with its launch count."""
    out: dict[tuple[str, ...], int] = {}
    here = (*path, tree["frame"]["name"])
    if not tree["children"] and "count" in tree["metrics"]:
        out[here] = int(tree["metrics"]["count"])
    for child in tree["children"]:
        for key, count in json_kernel_paths(child, here).items():
            out[key] = out.get(key, 0) + count
    return out


@contextlib.contextmanager
def serving(
    *args: str, cwd: Path, env: dict[str, str] | None = None, printed: list[str] | None = None
) -> Iterator[str]:
    """``deuteron serve --no-browser --port 0 ARGS`` in a fresh process; yields its address.
    ``printed``, when given, receives what the server printed once it stops: its first line
    (stdout) and its stderr."""
    from tests.conftest import REPO

    full_env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "DEUTERON_DISABLE")}
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    # stderr goes to a file: a server that says much can never block on a full pipe.
    with tempfile.TemporaryFile(mode="w+") as errors:
        proc = subprocess.Popen(
            [sys.executable, "-m", "deuteron", "serve", "--no-browser", "--port", "0", *args],
            cwd=cwd,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
        line = ""
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            match = re.search(r"http://127\.0\.0\.1:\d+/[A-Za-z0-9_-]{16}/", line)
            if not match:
                proc.kill()
                proc.wait()
                errors.seek(0)
                raise AssertionError(f"deuteron serve did not start: {line!r} {errors.read()[-2000:]}")
            yield match.group(0)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if printed is not None:
                errors.seek(0)
                printed.extend([line, errors.read()])
