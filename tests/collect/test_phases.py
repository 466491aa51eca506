"""Proton's data phases hold the frames entered in them, kernels or not: a scope that launched
nothing is in its phase (as Proton's tree has it), frames of a cleared or earlier phase are not."""

from __future__ import annotations

import json
from pathlib import Path

import torch

import deuteron
from tests.helpers import kernels as k


def _names(document: list[dict]) -> list[str]:  # type: ignore[type-arg]
    return [c["frame"]["name"] for c in document[0]["children"]]


def test_a_phase_shows_the_scopes_entered_in_it_not_those_cleared(tmp_path: Path) -> None:
    sid = deuteron.start(str(tmp_path / "p"), backend="interpreter")
    with deuteron.scope("test0"):
        pass
    assert _names(deuteron.data.get(sid)) == ["test0"]  # no kernel under it, and still there
    deuteron.deactivate(sid, flushing=True)
    deuteron.data.clear(sid)
    assert _names(deuteron.data.get(sid)) == []
    deuteron.activate(sid)
    with deuteron.scope("test1"):
        pass
    deuteron.deactivate(sid, flushing=True)
    assert _names(deuteron.data.get(sid)) == ["test1"]
    deuteron.finalize()
    assert _names(json.loads((tmp_path / "p.hatchet").read_text())) == ["test1"]  # test0 was cleared


def test_a_new_phase_starts_without_the_last_ones_frames(tmp_path: Path) -> None:
    sid = deuteron.start(str(tmp_path / "q"), backend="interpreter")
    with deuteron.scope("phase0"):
        k.add(torch.rand(8), torch.rand(8))
    with deuteron.scope("quiet0"):
        pass
    assert deuteron.data.advance_phase(sid) == 1
    with deuteron.scope("phase1"):
        with deuteron.scope("quiet1"):
            pass
    assert _names(deuteron.data.get(sid, phase=0)) == ["phase0", "quiet0"]
    phase1 = deuteron.data.get(sid, phase=1)
    assert _names(phase1) == ["phase1"]
    assert [c["frame"]["name"] for c in phase1[0]["children"][0]["children"]] == ["quiet1"]
    deuteron.finalize()
