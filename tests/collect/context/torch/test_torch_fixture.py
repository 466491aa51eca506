"""The torch context's CUPTI data from an H100, replayed without a GPU (tests/fixtures/cupti_torch).

Recorded by ``scripts/record_torch_fixture.py`` (torch 2.11+cu130, triton 3.6): two training steps,
each in scope ``step``, of a 2-layer TransformerEncoder with a ``head`` Linear, a loss outside the
model, AdamW. Every launch carries the torch place the shim asked the op probe for.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from deuteron.collect.backends.cupti import records, replay
from deuteron.collect.backends.cupti.join import KEY_COLUMNS, Join
from deuteron.collect.placement import NO_LAUNCH, OTHER_THREADS
from deuteron.collect.session import Session
from tests.helpers.paths import FIXTURES_DIR
from tests.helpers.profiles import child_path as at
from tests.helpers.profiles import kernel_count

FIXTURE = FIXTURES_DIR / "cupti_torch"


def replayed() -> Session:
    session = Session(0, "fixture", backend="interpreter", context="torch")
    replay(FIXTURE, session)
    return session


def test_every_kernel_of_the_step_is_under_module_op_or_backward_node() -> None:
    root = replayed().profile.root
    step = at(root, "step")
    assert kernel_count(root) == kernel_count(step) == 278
    assert all(n.name not in (OTHER_THREADS, NO_LAUNCH) for n in root.walk())
    model = at(step, "Model")
    layers = [
        at(model, "encoder (TransformerEncoder)", f"layers.{i} (TransformerEncoderLayer)") for i in (0, 1)
    ]
    assert [kernel_count(layer) for layer in layers] == [116, 122]
    # forward: the linear's GEMM under its op; backward (autograd's thread): under the module's node
    assert kernel_count(at(model, "head (Linear)", "aten::linear", "aten::addmm")) == 2
    assert kernel_count(at(model, "head (Linear)", "backward", "AddmmBackward0")) == 6
    assert kernel_count(at(layers[0], "self_attn (MultiheadAttention)", "backward")) > 0
    assert kernel_count(at(step, "optimizer.step (AdamW)")) == 16
    assert kernel_count(at(step, "backward", "NllLossBackward0")) == 4  # the loss is outside the model


def test_launch_entries_carry_the_op_place_and_group_by_it() -> None:
    raw = (FIXTURE / "drain000.entries").read_bytes()
    entries = records.entries(raw)
    launches = entries[entries["kind"] == records.LAUNCH]
    assert (launches["op"] != 0).mean() == 1.0  # inside the session every launch was in an op
    join = Join()
    join.add_entries(entries)
    batch = join.match(records.kernels((FIXTURE / "drain000.kernels").read_bytes()))
    ops = batch.keys[:, KEY_COLUMNS.index("op")]
    assert len(np.unique(ops)) > 20 and (ops != 0).all()


def test_advise_finds_backward_ratios_copies_and_idle_gpu_with_evidence(tmp_path: Path) -> None:
    import json

    from deuteron.formats import hatchet
    from deuteron.view import advise

    session = replayed()
    written = session.write("hatchet", tmp_path / "fixture")  # the idle share comes from the spans
    profile = hatchet.read(str(written[0]))
    busy, window = profile.metadata["gpu_busy_ns"], profile.metadata["gpu_window_ns"]
    assert 0 < busy < window
    findings = {f.kind: f for f in advise.advise(profile)}
    assert {"backward", "copies", "idle"} <= set(findings)
    top = findings["backward"].evidence[0]
    assert top["path"].endswith("(Linear)") or "(MultiheadAttention)" in top["path"]
    assert top["ratio"] > 1 and top["backward_gpu_ms"] > top["forward_gpu_ms"]
    assert "% of GPU time is in copy kernels" in findings["copies"].title
    assert f"{1 - busy / window:.0%}" in findings["idle"].title
    assert json.loads(json.dumps([f.as_json() for f in findings.values()]))  # JSON-ready
