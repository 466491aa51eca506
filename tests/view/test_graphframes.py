"""Proton's viewer functions (``deuteron.viewer.get_raw_metrics``, ``derive_metrics``, ...) on
hatchet GraphFrames give what Proton's own (the triton wheel's ``triton.profiler.viewer``) give,
on Proton's files from an H200 and on Deuteron's."""

from __future__ import annotations

import copy
import inspect
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import deuteron
import deuteron.viewer as ours
from tests.helpers import kernels as k

proton = pytest.importorskip("triton.profiler.viewer", exc_type=ImportError)  # needs llnl-hatchet
if "database" not in inspect.signature(proton.get_raw_metrics).parameters:
    # Triton 3.6's Proton read a file here and kept `__proton_launch_metadata:<kernel>` frames;
    # ours takes a file or a document, and follows Triton 3.9's (compared here).
    pytest.skip("the installed Proton's viewer predates Triton 3.9's", allow_module_level=True)

METRICS = ["time/ms", "avg_time/us", "count", "time/%"]
ROOFLINE = ["gbyte/s", "tflop16/s", "util"]


def _documents(proton_fixtures: Path, tmp_path: Path) -> dict[str, list[Any]]:
    docs = {p.name: json.loads(p.read_text()) for p in sorted(proton_fixtures.glob("*.hatchet"))}
    with deuteron.profile(str(tmp_path / "ours"), backend="interpreter", output_format="hatchet") as p:
        with deuteron.scope("train"):
            k.add(torch.rand(4096), torch.rand(4096))
            k.matmul(torch.rand(64, 64, dtype=torch.float16), torch.rand(64, 64, dtype=torch.float16))
    assert p.files
    docs["deuteron"] = json.loads(p.files[0].read_text())
    return docs


def _frame(module: Any, doc: list[Any], metrics: list[str]) -> tuple[Any, list[str]]:
    gf, inc, exc, devices = module.get_raw_metrics(copy.deepcopy(doc))
    gf.update_inclusive_columns()
    return gf, module.derive_metrics(gf, metrics, inc, exc, devices)


def _same(a: Any, b: Any) -> None:
    mine, theirs = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    np.testing.assert_allclose(mine, theirs, rtol=1e-12, equal_nan=True)


def test_raw_metrics_derived_metrics_and_filters_match_protons(proton_fixtures: Path, tmp_path: Path) -> None:
    for name, doc in _documents(proton_fixtures, tmp_path).items():
        theirs, t_cols = _frame(proton, doc, METRICS)
        mine, m_cols = _frame(ours, doc, METRICS)
        assert m_cols == t_cols, name
        assert list(mine.dataframe["name"]) == list(theirs.dataframe["name"]), name
        for column in t_cols:
            _same(mine.dataframe[column], theirs.dataframe[column])
        if "flops16" in theirs.dataframe.columns or name == "deuteron":
            theirs_r, t_roof = _frame(proton, doc, ROOFLINE)
            mine_r, m_roof = _frame(ours, doc, ROOFLINE)
            assert m_roof == t_roof
            for column in t_roof:
                _same(mine_r.dataframe[column], theirs_r.dataframe[column])
        for include, exclude in ((".*train.*", None), (None, ".*add.*"), (None, ".*elementwise.*")):
            t = _filtered(proton, theirs, include, exclude, t_cols[0])
            m = _filtered(ours, mine, include, exclude, m_cols[0])
            assert m == t, (name, include, exclude)


def _filtered(module: Any, gf: Any, include: str | None, exclude: str | None, metric: str) -> Any:
    """The frame names left, or the error hatchet raised (an empty result is an error there)."""
    try:
        return sorted(module.filter_frames(gf, include, exclude, None, metric).dataframe["name"])
    except Exception as exc:  # hatchet's EmptyFilter, raised alike for both
        return type(exc).__name__


def test_formats_removal_and_matching_match_protons(proton_fixtures: Path) -> None:
    doc = json.loads((proton_fixtures / "proton_python.hatchet").read_text())
    assert ours.remove_frames(copy.deepcopy(doc)) == proton.remove_frames(copy.deepcopy(doc))
    for option in ("full", "file_function_line", "function_line", "file_function"):
        t = proton.format_frames(proton.get_raw_metrics(copy.deepcopy(doc))[0], option)
        m = ours.format_frames(ours.get_raw_metrics(copy.deepcopy(doc))[0], option)
        assert list(m.dataframe["name"]) == list(t.dataframe["name"]), option
    with pytest.raises(RuntimeError, match="Metric flops is not found"):
        ours.match_available_metrics(["flops"], ["time (ns)"], [])
    with open(proton_fixtures / "proton_shadow.hatchet") as f:  # an open file, as newer Proton takes
        gf, inc, _, devices = ours.get_raw_metrics(f)
    assert "time (ns)" in inc and "CUDA" in devices and len(gf.dataframe) > 1


def test_metadata_frames_are_removed_with_what_is_below() -> None:
    doc = [
        {
            "frame": {"name": "ROOT", "type": "function"},
            "metrics": {},
            "children": [
                {
                    "frame": {"name": "__proton_launch_metadata:foo", "type": "state"},
                    "metrics": {},
                    "children": [
                        {"frame": {"name": "sum", "type": "kernel"}, "metrics": {"count": 1}, "children": []}
                    ],
                },
                {"frame": {"name": "foo", "type": "kernel"}, "metrics": {"count": 2}, "children": []},
                {"frame": {"name": "empty", "type": "function"}, "metrics": {}, "children": []},
            ],
        },
        {},
    ]
    kept = ours.remove_frames(copy.deepcopy(doc))
    assert [c["frame"]["name"] for c in kept[0]["children"]] == ["foo"]
    assert kept == proton.remove_frames(copy.deepcopy(doc))
