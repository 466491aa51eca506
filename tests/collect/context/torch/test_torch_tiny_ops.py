"""Tiny ops in a loop outside any module (issue 40): the tree ``-c torch`` makes of them is the one
it made before their path was made cheap, with exact counts.

On the CPU, every op is observed: the loop's ops are checked against torch.profiler's own event
tree (paths and counts), and the same loop inside a module must give the same subtree under it.
With ops inferred (a GPU's default), a loop of launches outside any module never repeats a
position, so past ``MAX_POSITION`` its launches are not learned: each must still get the place
it had (the op it ran in), and each op's calls are still counted at its launch. Without a GPU, a
custom op calls the probe the way the CUPTI shim does at a launch.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.paths import REPO

pytest.importorskip("torch")

SOURCE = REPO / "deuteron" / "collect" / "context" / "torch" / "_torch_ops.cpp"

OBSERVED = textwrap.dedent(
    """
    import json
    import torch
    from torch import nn
    import deuteron
    from deuteron.formats import hatchet

    N = 400
    x, y = torch.zeros(1), torch.ones(1)
    a, b = torch.randn(4, 5), torch.randn(5, 3)

    def work():
        for _ in range(N):
            x.add_(1)  # aten::add_ with the ops converting the 1 nested in it
            x.add_(y)
            torch.mm(a, b)

    class Loop(nn.Module):
        def forward(self):
            work()

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        work()
    oracle = {}
    for event in prof.events():
        path, up = [event.name], event.cpu_parent
        while up is not None:
            path.append(up.name)
            up = up.cpu_parent
        key = " > ".join(reversed(path))
        oracle[key] = oracle.get(key, 0) + 1

    deuteron.start("tiny", context="torch")
    work()
    Loop()()
    deuteron.finalize()
    tree = {}

    def walk(node, path):
        for child in node.children.values():
            key = " > ".join(path + [child.name])
            tree[key] = dict(child.metrics)
            walk(child, path + [child.name])

    walk(hatchet.read("tiny.hatchet").root, [])
    print("RESULT " + json.dumps({"oracle": oracle, "tree": tree, "n": N}))
    """
)

INFERRED = textwrap.dedent(
    """
    import json, sys
    import torch
    from torch import nn
    import deuteron
    from deuteron.collect.context.torch import library as op_probe, source as tctx
    from deuteron.formats import hatchet

    N = int(sys.argv[1])
    ops = torch.library.Library("deut_tiny", "DEF")
    ops.define("launch(Tensor x) -> ()")
    places = []  # (place the launch got, the thread's place at the launch)

    def launch(x):
        probe = op_probe.load()
        places.append((probe.deut_launch(b"tiny_kernel", 1), probe.deut_current()))

    ops.impl("launch", launch, "CompositeExplicitAutograd")
    x = torch.zeros(1)

    def loop():
        for _ in range(N):
            torch.ops.deut_tiny.launch(x)

    class Loop(nn.Module):
        def forward(self):
            loop()

    deuteron.start("tiny", context="torch")
    loop()
    outside = tctx.active().infer_stats()
    Loop()()
    stats = tctx.active().infer_stats()
    deuteron.finalize()
    root = hatchet.read("tiny.hatchet").root
    calls = {c.name: c.metrics.get("calls", 0) for c in root.children.values()}
    loop = root.child("Loop")
    calls.update({"Loop > " + c.name: c.metrics.get("calls", 0) for c in loop.children.values()})
    print("RESULT " + json.dumps({"outside": outside, "stats": stats, "calls": calls,
        "places": [len(set(places[:N])), len(set(places[N:]))],
        "same": sum(p == c for p, c in places), "launches": len(places)}))
    """
)


def _run(tmp_path: Path, script: str, ops: str, *args: str) -> dict[str, Any]:
    path = tmp_path / "tiny_loop.py"
    path.write_text(script)
    env = {"PYTHONPATH": str(REPO), "DEUTERON_TORCH_OPS": ops, "PATH": "/usr/bin:/bin"}
    env["DEUTERON_CACHE"] = os.environ.get("DEUTERON_CACHE", str(Path.home() / ".cache" / "deuteron"))
    done = subprocess.run(
        [sys.executable, str(path), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    result: dict[str, Any] = json.loads(line[len("RESULT ") :])
    return result


def test_ops_outside_modules_make_the_tree_torch_profiler_sees_and_the_same_inside_one(
    tmp_path: Path,
) -> None:
    result = _run(tmp_path, OBSERVED, "all")
    tree, oracle, n = result["tree"], result["oracle"], result["n"]
    outside = {path: metrics for path, metrics in tree.items() if not path.startswith("Loop")}
    # the same nodes, each with the calls torch.profiler counted (the 1's conversion nested in
    # aten::add_, and aten::mm's resolve_conj in it)
    assert {path: m.get("calls") for path, m in outside.items()} == oracle
    assert oracle["aten::add_"] == 2 * n and oracle["aten::mm"] == n
    assert oracle["aten::add_ > aten::to"] == n
    # each op timed, and the matmul's flops exact
    assert all(m["cpu_time (ns)"] > 0 for m in outside.values())
    assert outside["aten::mm"]["flops"] == n * 2 * 4 * 5 * 3
    # inside one module call: the same ops, counts and flops under it (the op cache is keyed by
    # the parent: the same name under another parent is another node)
    assert tree["Loop"]["calls"] == 1
    inside = {path.removeprefix("Loop > "): m for path, m in tree.items() if path.startswith("Loop > ")}
    assert {p: m.get("calls") for p, m in inside.items()} == {p: m.get("calls") for p, m in outside.items()}
    assert inside["aten::mm"]["flops"] == outside["aten::mm"]["flops"]


def test_launches_past_the_learned_positions_keep_their_places_and_calls(tmp_path: Path) -> None:
    found = re.search(r"MAX_POSITION = 1u << (\d+);", SOURCE.read_text())
    assert found, "MAX_POSITION not found in _torch_ops.cpp"
    cap = 1 << int(found.group(1))
    n = cap + 3000
    result = _run(tmp_path, INFERRED, "infer", str(n))
    outside, stats = result["outside"], result["stats"]
    # outside any module, positions never repeat: the first cap were learned, the rest were not,
    # and ops stayed observed (nothing was inferred or missed)
    assert outside["learned"] == cap and outside["unlearned"] == n - cap
    assert outside["observing"] == 1 and outside["inferred"] == outside["missed"] == outside["switches"] == 0
    # the same inside one module call: its positions are counted from the call's start
    assert stats["learned"] == 2 * cap and stats["unlearned"] == 2 * (n - cap)
    # every launch got the place its thread had (the op it ran in): one place outside, one inside
    assert result["launches"] == 2 * n and result["same"] == 2 * n
    assert result["places"] == [1, 1]
    # and each op call that launched was counted at its launch, learned or not
    assert result["calls"]["deut_tiny::launch"] == n == result["calls"]["Loop > deut_tiny::launch"]
    assert result["calls"]["Loop"] == 1
