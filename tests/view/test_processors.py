"""Pure tree transforms and derived metrics."""

from __future__ import annotations

import math

import pytest

from deuteron.model.devices import NAMED_DEVICES, named_device
from deuteron.model.errors import MetricError
from deuteron.model.metrics import evaluate, parse_metric, split_kind
from deuteron.model.tree import KERNEL, Profile
from deuteron.view import processors
from tests.helpers.profiles import find


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
            theirs = specs.max_flops(dev.device_type, dev.arch, width, dev.num_sms, dev.clock_rate)
            assert ours == pytest.approx(theirs), (name, width)
        assert dev.peak_bytes_per_s() == pytest.approx(
            specs.max_bps(dev.device_type, dev.arch, dev.bus_width, dev.memory_clock_rate)
        )
    assert {d.device_type for d in NAMED_DEVICES.values()} == {"CUDA", "HIP"}


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


def test_view_filters_as_proton_viewer_does() -> None:
    """-t keeps the path to a hot frame; -i/-e pick frames before the sums (the totals are of what
    is left, as proton-viewer's with today's hatchet: see tests/test_proton_viewer.py), with
    patterns found anywhere in a name, as text or regex, case ignored; -d N shows N levels."""
    from deuteron.view.build import ViewOptions, build

    p = Profile()
    cool = p.root.child("cool")
    cool.child("hot_kernel").metrics.update({"time (ns)": 10_000, "count": 1})
    cool.child("slow_kernel").metrics.update({"time (ns)": 1_000, "count": 100})  # avg 10 ns
    p.root.child("other_kernel").metrics.update({"time (ns)": 5_000, "count": 5})

    def names(view) -> list[str]:  # type: ignore[no-untyped-def]
        return [n.name for n in view.tree.root.walk()]

    # avg_time is not inclusive-monotone: "cool" averages below the threshold, its child does not
    hot = build(p, ViewOptions(metrics=["avg_time/ns"], threshold=5000))
    assert names(hot) == ["ROOT", "cool", "hot_kernel"]
    only = build(p, ViewOptions(metrics=["time/ns"], include="hot"))
    assert names(only) == ["ROOT", "cool", "hot_kernel"]
    assert only.tree.root.metrics["time/ns"] == 10_000  # ROOT's total is of what is left
    anywhere = names(build(p, ViewOptions(metrics=["time/ns"], include="KERNEL")))  # found anywhere, any case
    assert anywhere == ["ROOT", "cool", "hot_kernel", "slow_kernel", "other_kernel"]
    assert names(build(p, ViewOptions(metrics=["time/ns"], include="^kernel"))) == ["ROOT"]  # ^: the start
    assert "hot_kernel" in names(build(p, ViewOptions(metrics=["time/ns"], include=".*kernel")))
    dropped = build(p, ViewOptions(metrics=["time/ns"], exclude="cool"))
    assert names(dropped) == ["ROOT", "other_kernel"] and dropped.tree.root.metrics["time/ns"] == 5_000
    assert names(build(p, ViewOptions(metrics=["count"], depth=2))) == ["ROOT", "cool", "other_kernel"]
    assert names(build(p, ViewOptions(metrics=["count"], depth=1))) == ["ROOT"]


def test_util_only_on_frames_that_ran_on_a_device_and_amd_peaks() -> None:
    """As proton-viewer: util where a frame carries its device (kernels), NaN on scopes and ROOT
    (which would mix devices); AMD MI250X/MI300X/MI350X peaks as Proton models them."""
    from deuteron.view.build import ViewOptions, build

    p = Profile()
    row = {"arch": "gfx942", "num_sms": 304, "clock_rate": 2100000, "memory_clock_rate": 1, "bus_width": 1}
    p.devices = {"HIP": {"0": row}}
    k = p.root.child("step").child("gemm", KERNEL)
    k.metrics.update({"time (ns)": 1000, "count": 1, "bytes": 5.3e6, "flops8": 0, "device_id": "0"})
    view = build(p, ViewOptions(metrics=["util"]))
    assert find(view.tree, "step", "gemm").metrics["util"] == pytest.approx(1.0)  # 5.3 MB in 1 us at 5.3 TB/s
    assert math.isnan(find(view.tree, "step").metrics["util"]) and math.isnan(view.tree.root.metrics["util"])
    assert named_device("mi300x").peak_flops(8) == pytest.approx(4096 * 304 * 2.1e9)
    assert named_device("mi250x").peak_bytes_per_s() == 3.2e12
    assert named_device("mi350x").peak_flops(16) == pytest.approx(8192 * 256 * 2.4e9 / 2)


def _cpu_tree() -> Profile:
    """A CPU profile (-c torch): cpu_time is a frame's whole span, recorded exclusive."""
    p = Profile()
    p.kinds["cpu_time (ns)"] = "exc"
    p.kinds["calls"] = "exc"
    model = p.root.child("model (MLP)")
    p.add_metrics(model, {"cpu_time (ns)": 1_000, "calls": 4})
    p.add_metrics(model.child("aten::linear"), {"cpu_time (ns)": 700, "calls": 4, "flops": 2_000})
    p.add_metrics(model.child("backward"), {"cpu_time (ns)": 500, "calls": 4, "flops": 4_000})
    p.add_metrics(p.root.child("optimizer.step (SGD)"), {"cpu_time (ns)": 300, "calls": 2})
    return p


def test_a_span_metric_covers_its_children_and_root_holds_the_total():
    inc = processors.inclusive(_cpu_tree())
    # the module's own 1,000 (its forward) is less than its children's 1,200: it covers them
    assert find(inc, "model (MLP)").metrics["cpu_time (ns)"] == 1_200
    assert find(inc, "model (MLP)", "aten::linear").metrics["cpu_time (ns)"] == 700
    assert inc.root.metrics["cpu_time (ns)"] == 1_500
    assert find(inc, "model (MLP)").metrics["calls"] == 4  # calls stay the frame's own
    assert processors.run_totals(_cpu_tree())["cpu_time (ns)"] == 1_500


def test_cpu_columns_share_average_per_call_and_rate_by_cpu_time():
    p = _cpu_tree()
    specs = [parse_metric(n, p.metric_names()) for n in ("cpu_time/%", "avg_cpu_time/ns", "flop/s")]
    shown = processors.derive(p, specs)
    model = find(shown, "model (MLP)").metrics
    assert model["cpu_time/%"] == pytest.approx(80.0)  # of ROOT's 1,500
    assert shown.root.metrics["cpu_time/%"] == pytest.approx(100.0)
    assert model["avg_cpu_time/ns"] == pytest.approx(300.0)  # 1,200 over its 4 calls
    assert math.isnan(shown.root.metrics["avg_cpu_time/ns"])  # ROOT was never called
    assert model["flop/s"] == pytest.approx(6_000 / 1_200e-9)


def test_util_of_a_kernel_without_bytes_or_flops_is_unknown_not_zero():
    p = Profile()
    p.add_metrics(p.root.child("k", KERNEL), {"time (ns)": 1_000, "count": 1})
    shown = processors.derive(p, [parse_metric("util", p.metric_names())], lambda _m: named_device("h100"))
    assert math.isnan(find(shown, "k").metrics["util"])
