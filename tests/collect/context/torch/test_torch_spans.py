"""``-c torch --trace``: modules, ops and backward nodes as spans on their threads' lanes, as
torch.profiler shows them, so a step can be found in the trace by its modules, not by eye."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.helpers.cli import run_cli

SCRIPT = """
import torch
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
x = torch.randn(8, 16)
for _ in range(2):
    model(x).sum().backward()
"""


def test_modules_ops_and_backward_nodes_are_spans(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(textwrap.dedent(SCRIPT))
    # -b interpreter: the CPU behaviour also on a GPU machine (there, CUPTI's -c torch reads backward
    # nodes from autograd at launches, with no callback, so they have no span)
    args = ("run", "-b", "interpreter", "-c", "torch", "--trace", "-n", "m", "m.py")
    proc = run_cli(*args, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    events = json.loads((tmp_path / "m.chrome_trace").read_text())["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X" and e.get("cat") == "scope"]
    by_name: dict[str, list[dict]] = {}  # type: ignore[type-arg]
    for e in spans:
        by_name.setdefault(e["name"], []).append(e)
    assert len(by_name["Sequential"]) == 2 and len(by_name["0 (Linear)"]) == 2  # one per step
    assert any(name.startswith("AddmmBackward") for name in by_name)  # autograd's nodes, on their thread
    step = by_name["Sequential"][0]
    linear = by_name["0 (Linear)"][0]
    assert linear["args"]["call_stack"][-2:] == ["Sequential", "0 (Linear)"]
    assert step["ts"] <= linear["ts"] and linear["ts"] + linear["dur"] <= step["ts"] + step["dur"] + 1e-3
    inner = [e for e in spans if e["args"]["call_stack"][:-1] == linear["args"]["call_stack"]]
    assert inner and all(linear["ts"] <= e["ts"] <= linear["ts"] + linear["dur"] for e in inner[:1])
    lanes = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M"}
    assert lanes[step["tid"]] == "main thread"


def test_spans_are_kept_only_for_a_trace(tmp_path: Path) -> None:
    """Spans cost a store per frame: a session that writes no trace keeps none."""
    import torch

    from deuteron.collect import api

    model = torch.nn.Linear(4, 4)
    counts = {}
    for outputs in (("hatchet",), ("hatchet", "chrome_trace")):
        sid = api.start_session(str(tmp_path / "s"), backend="interpreter", context="torch", outputs=outputs)
        assert sid is not None
        model(torch.randn(2, 4)).sum().backward()
        session = api.find(sid)
        assert session is not None and session.tree.torch is not None
        spans, left_out = session.tree.torch.spans()
        counts[outputs[-1]] = len(spans)
        api.finalize(sid)
        assert left_out == 0
    assert counts["hatchet"] == 0 and counts["chrome_trace"] >= 3  # the module, an op, a backward node
