"""Pure tree transforms and derived metrics."""

from __future__ import annotations

import math

import pytest

from deuteron import processors
from deuteron.model.devices import NAMED_DEVICES, named_device
from deuteron.model.errors import MetricError
from deuteron.model.metrics import evaluate, parse_metric, split_kind
from deuteron.model.tree import KERNEL, Profile
from tests.helpers import find


def _tree() -> Profile:
    p = Profile()
    train = p.root.child("train")
    fwd = train.child("forward")
    fwd.child("gemm", KERNEL).metrics.update({"time (ns)": 600, "count": 2, "flops16": 4e9, "bytes": 1e6})
    train.child("backward").child("gemm", KERNEL).metrics.update({"time (ns)": 300, "count": 1, "bytes": 3e6})
    p.root.child("eval").child("softmax", KERNEL).metrics.update({"time (ns)": 100, "count": 5, "bytes": 2e6})
    return p


def test_inclusive_sums_up_the_tree():
    inc = processors.inclusive(_tree())
    assert inc.root.metrics["time (ns)"] == 1000
    assert find(inc, "train").metrics["time (ns)"] == 900
    assert find(inc, "train").metrics["count"] == 3
    assert processors.inclusive(inc) is inc  # idempotent


def test_include_keeps_paths_through_matches_and_exclude_drops_subtrees():
    inc = processors.include(_tree(), "^forward$")
    assert [n.name for n in inc.root.walk()] == ["ROOT", "train", "forward", "gemm"]
    exc = processors.exclude(_tree(), "train")
    assert [n.name for n in exc.root.walk()] == ["ROOT", "eval", "softmax"]
    original = _tree()
    processors.exclude(original, "train")
    assert original.node_count() == 8  # inputs are never changed


def test_diff_tolerates_different_metric_sets_and_missing_frames():
    new, old = _tree(), _tree()
    find(new, "train", "forward", "gemm").metrics["time (ns)"] = 400
    find(old, "eval", "softmax").metrics["extra"] = 9  # only one side has it
    old.root.child("gone").metrics["time (ns)"] = 50
    d = processors.diff(processors.inclusive(new), processors.inclusive(old))
    assert find(d, "train", "forward", "gemm").metrics["time (ns)"] == -200
    assert d.root.metrics["time (ns)"] == -250
    assert find(d, "gone").metrics == {"time (ns)": -50, "diff": "removed"}
    assert all("extra" not in n.metrics for n in d.root.walk())


def test_merge_sums_ranks():
    merged = processors.merge([_tree(), _tree()])
    assert find(merged, "eval", "softmax").metrics["count"] == 10


def test_derive_rates_percent_and_roofline():
    specs = [
        parse_metric(m, {"time (ns)", "count", "bytes", "flops16"})
        for m in ("time/us", "avg_time/ns", "gbyte/s", "tflop16/s", "time/%", "util", "roofline_time/us")
    ]
    h100 = named_device("h100")
    d = processors.derive(_tree(), specs, lambda _m: h100)
    gemm = find(d, "train", "forward", "gemm").metrics
    assert gemm["time/us"] == pytest.approx(0.6)
    assert gemm["avg_time/ns"] == pytest.approx(300)
    assert gemm["gbyte/s"] == pytest.approx(1e6 / 600e-9 / 1e9)
    assert gemm["tflop16/s"] == pytest.approx(4e9 / 600e-9 / 1e12)
    assert gemm["time/%"] == pytest.approx(60)
    roof = max(4e9 / h100.peak_flops(16), 1e6 / h100.peak_bytes_per_s())
    assert gemm["roofline_time/us"] == pytest.approx(roof * 1e6)
    assert gemm["util"] == pytest.approx(roof / 600e-9)
    assert math.isnan(find(d, "eval").metrics["tflop16/s"])  # no flops there


def test_device_peaks_match_protons_formulas():
    specs = pytest.importorskip("triton.profiler.specs")
    for name, dev in NAMED_DEVICES.items():
        for width in (8, 16, 32):
            ours = dev.peak_flops(width)
            theirs = specs.max_flops("CUDA", dev.arch, width, dev.num_sms, dev.clock_rate)
            assert ours == pytest.approx(theirs), (name, width)
        assert dev.peak_bytes_per_s() == pytest.approx(
            specs.max_bps("CUDA", dev.arch, dev.bus_width, dev.memory_clock_rate)
        )


def test_metric_parsing_and_errors():
    assert split_kind("slots (exc)") == ("slots", "exc")
    assert split_kind("tile(pty)") == ("tile", "pty")
    assert parse_metric("TIME", {"time (ns)"}).raw == "time (ns)"
    with pytest.raises(MetricError, match="unknown metric 'nope'"):
        parse_metric("nope", {"time (ns)"})
    with pytest.raises(MetricError, match="unknown device 'tpu'"):
        named_device("tpu")
    with pytest.raises(MetricError, match="byte rates take no width"):
        parse_metric("byte16/s", {"bytes"})
    spec = parse_metric("gbyte/s", {"bytes"})
    assert math.isnan(evaluate(spec, {"bytes": 5.0}, {}, None))  # no time: undefined, not a crash


def test_console_renderer_colours_kernels_and_diff_signs():
    import io

    from deuteron.render.console import render_profile

    shown = processors.derive(_tree(), [parse_metric("time/ns", {"time (ns)"})])
    plain, coloured = io.StringIO(), io.StringIO()
    render_profile(shown, ["time/ns"], file=plain)
    render_profile(shown, ["time/ns"], file=coloured, color=True)
    assert "\x1b[" not in plain.getvalue()
    assert plain.getvalue().splitlines()[1].split() == ["1000.000", "ROOT"]
    assert "\x1b[1;32mgemm" in coloured.getvalue()  # kernels in bold green
    assert "\x1b[1m" + "ROOT" not in coloured.getvalue()  # only the header is bold
    older = _tree()
    find(older, "eval", "softmax").metrics["time (ns)"] = 300
    older.root.child("gone").metrics["time (ns)"] = 1
    delta = processors.diff(shown, processors.derive(older, [parse_metric("time/ns", {"time (ns)"})]))
    signed = io.StringIO()
    render_profile(delta, ["time/ns"], file=signed, signed=True, color=True)
    out = signed.getvalue()
    assert "\x1b[32m-200.000" in out  # faster: green
    assert "[removed]" in out
    up = processors.diff(processors.derive(older, [parse_metric("time/ns", {"time (ns)"})]), shown)
    signed = io.StringIO()
    render_profile(up, ["time/ns"], file=signed, signed=True, color=True)
    assert "\x1b[31m+200.000" in signed.getvalue()  # slower: red
