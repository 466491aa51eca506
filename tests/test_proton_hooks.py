"""Proton's hooks (LaunchHook with include/exclude, HookManager, a program's own Hook), periodic
flushing, and the small Proton modules (flags, specs, metric), on real interpreted kernels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgpack
import pytest
import torch
import triton
import triton.language as tl

import deuteron
import deuteron.viewer  # Proton's viewer module, as `import triton.profiler.viewer`
from deuteron.collect.session import SessionError
from deuteron.hooks import Hook, HookManager, InstrumentationHook, LaunchHook
from deuteron.view.build import ViewOptions, build
from tests.helpers.profiles import find

calls: list[str] = []


def _foo_meta(grid: tuple[int, ...], metadata: Any, args: dict[str, Any]) -> dict[str, Any]:
    calls.append("foo")
    name = f"foo_{args['n']}_{metadata.num_ctas}ctas"
    return {"name": name, "flops": 2.0 * args["n"], "extra": torch.tensor(7.0)}


def _bar_meta(grid: tuple[int, ...], metadata: Any, args: dict[str, Any]) -> dict[str, Any]:
    calls.append("bar")
    return {"name": "bar_meta"}


def _inner_meta(grid: tuple[int, ...], metadata: Any, args: dict[str, Any]) -> dict[str, Any]:
    # a metadata function that itself launches a kernel (as a device-tensor sum would)
    plain[(1,)](args["x"], 4, B=4)
    return {"name": "outer_meta", "flops": 1.0}


@triton.jit(launch_metadata=_foo_meta)
def foo(x, n, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(x + o, tl.load(x + o, mask=o < n) + 1, mask=o < n)


@triton.jit(launch_metadata=_bar_meta)
def bar(x, n, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(x + o, tl.load(x + o, mask=o < n) * 2, mask=o < n)


@triton.jit(launch_metadata=_inner_meta)
def outer(x, n, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(x + o, tl.load(x + o, mask=o < n) - 1, mask=o < n)


@triton.jit
def plain(x, n, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(x + o, tl.load(x + o, mask=o < n), mask=o < n)


@pytest.fixture(autouse=True)
def _hook_state() -> Any:
    calls.clear()
    LaunchHook().configure()
    yield
    LaunchHook().configure()
    assert HookManager.active_hooks == [], "a test left hooks active"


def test_launch_hook_names_kernels_and_keeps_every_numeric_metric() -> None:
    x = torch.zeros(16)
    with deuteron.profile(backend="interpreter", hook="triton") as p:
        with deuteron.scope("s"):
            foo[(1,)](x, 16, B=16)
    assert p.result is not None
    node = find(p.result, "s", "foo_16_1ctas")
    assert node.metrics["flops"] == 32.0 and node.metrics["extra"] == 7.0  # a host tensor, read
    assert node.metrics["bytes"] == 128  # the interpreter's own count stays beside the metadata's
    assert torch.equal(x, torch.ones(16))


def test_include_and_exclude_pick_kernels_and_skip_the_others_metadata() -> None:
    x = torch.zeros(16)
    LaunchHook().configure(include=".*foo")
    with deuteron.profile(backend="interpreter", hook=LaunchHook()) as p:
        foo[(1,)](x, 16, B=16)
        bar[(1,)](x, 16, B=16)
    assert p.result is not None
    names = {c.name for c in p.result.root.children.values()}
    assert names == {"foo_16_1ctas", "bar"}  # bar still profiled, under its own name
    assert calls == ["foo"]  # bar's metadata function was never called
    LaunchHook().configure(exclude="foo")
    with deuteron.profile(backend="interpreter", hook="triton") as p:
        foo[(1,)](x, 16, B=16)
        bar[(1,)](x, 16, B=16)
    assert p.result is not None
    assert {c.name for c in p.result.root.children.values()} == {"foo", "bar_meta"}


def test_kernels_launched_by_a_metadata_function_are_bookkeeping() -> None:
    x = torch.zeros(8)
    with deuteron.profile(backend="interpreter", hook="triton") as p:
        outer[(1,)](x, 8, B=8)
    assert p.result is not None
    assert find(p.result, "outer_meta").metrics["count"] == 1
    inner = find(p.result, "__proton_launch_metadata", "outer", "plain")
    assert inner.metrics["count"] == 1
    view = build(p.result, ViewOptions(metrics=["count"]))
    assert [c.name for c in view.tree.root.children.values()] == ["outer_meta"]
    assert view.tree.root.metrics["count"] == 1


def test_hook_manager_follows_sessions_and_priorities() -> None:
    assert LaunchHook() is LaunchHook()
    HookManager.register(LaunchHook(), 0)
    HookManager.register(LaunchHook(), 0)
    HookManager.register(InstrumentationHook(""), 0)
    assert [type(h) for h in HookManager.active_hooks] == [LaunchHook, InstrumentationHook]
    HookManager.register(LaunchHook(), 1)
    HookManager.deactivate(0)  # session 1 still uses the launch hook
    assert HookManager.active_hooks == [LaunchHook()]
    assert HookManager.session_hooks[0][LaunchHook()] is False
    HookManager.unregister(1)
    assert HookManager.active_hooks == []
    HookManager.activate(0)
    assert len(HookManager.active_hooks) == 2
    HookManager.unregister()
    assert HookManager.active_hooks == [] and not HookManager.session_hooks


def test_sessions_drive_the_hook_manager() -> None:
    sid = deuteron.start("unused", backend="interpreter", hook="triton")
    try:
        deuteron.activate(sid)
        assert HookManager.active_hooks == [LaunchHook()]
        deuteron.deactivate(sid)
        deuteron.deactivate(sid)
        assert HookManager.active_hooks == [] and HookManager.session_hooks[sid][LaunchHook()] is False
    finally:
        deuteron.finalize(sid, output_format=None)
    assert sid not in HookManager.session_hooks


class Recorder(Hook):
    """A program's own hook: what Triton tells it around each launch."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self.on = False

    def init_handle(self, *args: Any) -> None:
        return None

    def activate(self) -> None:
        self.on = True

    def deactivate(self) -> None:
        self.on = False

    def enter(self, metadata: Any) -> None:
        self.seen.append(("enter", metadata.data["name"]))

    def exit(self, metadata: Any) -> None:
        self.seen.append(("exit", metadata.data["name"]))


def test_a_programs_own_hook_hears_every_launch() -> None:
    hook = Recorder()
    x = torch.zeros(16)
    with deuteron.profile(backend="interpreter", hook=hook) as p:
        foo[(1,)](x, 16, B=16)
        assert hook.on
        plain[(1,)](x, 4, B=4)
    assert not hook.on
    assert hook.seen == [("enter", "foo"), ("exit", "foo"), ("enter", "plain"), ("exit", "plain")]
    assert calls == []  # nobody asked for the launch metadata, so it was never computed
    assert p.result is not None and find(p.result, "foo").metrics["count"] == 1


def test_bad_hooks_and_modes_are_one_line_errors() -> None:
    with pytest.raises(SessionError, match="unknown hook 'proton'"):
        deuteron.start("x", hook="proton")
    with pytest.raises(SessionError, match="unknown periodic_flushing format 'csv'"):
        deuteron.start("x", mode="periodic_flushing:format=csv")
    with pytest.raises(SessionError, match="unknown periodic_flushing option 'every'"):
        deuteron.start("x", mode="periodic_flushing:every=3")
    with pytest.raises(SessionError, match="malformed mode option 'format'"):
        deuteron.start("x", mode="periodic_flushing:format")


@pytest.mark.parametrize("fmt", ["hatchet", "hatchet_msgpack", "chrome_trace"])
def test_periodic_flushing_writes_each_phase_once(tmp_path: Path, fmt: str) -> None:
    x = torch.zeros(16)
    sid = deuteron.start(str(tmp_path / "run"), backend="interpreter", mode=f"periodic_flushing:format={fmt}")
    for phase in range(3):
        for i in range(2):
            with deuteron.scope(f"test_{phase}_{i}"):
                plain[(1,)](x, 16, B=16)
        if phase < 2:
            assert deuteron.data.advance_phase(sid) == phase + 1
    files = deuteron.finalize(sid, output_format=fmt)
    assert [f.name for f in files] == [f"run.part_{p}.{fmt}" for p in range(3)]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f.name for f in files]
    for phase, path in enumerate(files):
        if fmt == "chrome_trace":
            events = json.loads(path.read_text())["traceEvents"]
            names = {e["name"] for e in events if e.get("ph") == "X"}
            assert names == {f"test_{phase}_0", f"test_{phase}_1", "plain"}
            continue
        data = (
            msgpack.unpackb(path.read_bytes(), raw=False, strict_map_key=False)
            if fmt == "hatchet_msgpack"
            else json.loads(path.read_text())
        )
        roots = data[0]["children"]
        assert [c["frame"]["name"] for c in roots] == [f"test_{phase}_0", f"test_{phase}_1"]
        assert roots[0]["children"][0]["metrics"]["count"] == 1


def test_small_proton_modules() -> None:
    assert deuteron.flags.flags.profiling_on is False
    sid = deuteron.start("unused", backend="interpreter")
    assert deuteron.flags.flags.profiling_on is True
    deuteron.finalize(sid, output_format=None)
    assert deuteron.flags.flags.profiling_on is False
    # specs: the A100's dense fp16 peak, an H100's HBM3 bandwidth (5120-bit bus, 2619 MHz), MI300X's
    assert deuteron.specs.max_flops("CUDA", "80", 16, 108, 1410000) == pytest.approx(312e12)
    assert deuteron.specs.max_bps("CUDA", "90", 5120, 2619000) == pytest.approx(3.352e12, rel=1e-3)
    assert deuteron.specs.max_bps("HIP", "gfx942", 8192, 1300000) == pytest.approx(5.3e12)
    with pytest.raises(ValueError, match="no flop model for CUDA arch sm_75"):
        deuteron.specs.max_flops("CUDA", "75", 16, 40, 1590000)
    scalars, tensors = deuteron.metric.transform_tensor_metrics({"a": 1, "b": torch.tensor([1.0, 2.0])})
    assert scalars == {"a": 1, "b": [1.0, 2.0]} and tensors == {}
    assert deuteron.configure_runtime() is None


class _FakeNvtx:
    """Stands in for torch's NVTX binding, which a CPU build of torch lacks."""

    def __init__(self) -> None:
        self.depth = 0

    def rangePushA(self, msg: str) -> int:  # noqa: N802 - torch's binding's names
        self.depth += 1
        return self.depth - 1

    def rangePop(self) -> int:  # noqa: N802
        self.depth -= 1
        return self.depth


@pytest.mark.parametrize("setting", [None, "1", "0"])
def test_nvtx_ranges_become_scopes(setting: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeNvtx()
    monkeypatch.setattr(torch.cuda.nvtx, "_nvtx", fake)
    if setting is None:
        monkeypatch.delenv("TRITON_ENABLE_NVTX", raising=False)
    else:
        monkeypatch.setenv("TRITON_ENABLE_NVTX", setting)
    monkeypatch.setattr(triton.knobs.proton, "enable_nvtx", setting != "0")
    x = torch.zeros(16)
    with deuteron.profile(backend="interpreter") as p:
        with deuteron.scope("proton_scope"):
            torch.cuda.nvtx.range_push("nvtx_range0")
            torch.cuda.nvtx.range_push("nvtx_range1")
            plain[(1,)](x, 4, B=4)
            torch.cuda.nvtx.range_pop()
            torch.cuda.nvtx.range_pop()
            with torch.cuda.nvtx.range("ctx_range"):
                plain[(1,)](x, 4, B=4)
    assert fake.depth == 0  # every range still reached NVTX
    assert p.result is not None
    if setting == "0":
        assert find(p.result, "proton_scope", "plain").metrics["count"] == 2
    else:
        assert find(p.result, "proton_scope", "nvtx_range0", "nvtx_range1", "plain").metrics["count"] == 1
        assert find(p.result, "proton_scope", "ctx_range", "plain").metrics["count"] == 1
    torch.cuda.nvtx.range_push("outside")  # no session: a range, no scope, no error
    torch.cuda.nvtx.range_pop()
    assert torch.cuda.nvtx.range_push.__module__ == "torch.cuda.nvtx"  # the patch is gone


def test_proton_viewer_functions_name_what_they_need(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from deuteron.model.errors import DeuteronError

    monkeypatch.setitem(sys.modules, "hatchet", None)  # as if llnl-hatchet were not installed
    doc = [{"frame": {"name": "ROOT", "type": "function"}, "metrics": {"count": 1}, "children": []}, {}]
    with pytest.raises(DeuteronError, match=r"need llnl-hatchet: pip install 'deuteron\[hatchet\]'"):
        deuteron.viewer.get_raw_metrics(doc)
    with pytest.raises(AttributeError, match="no attribute 'get_raw_metric'"):
        deuteron.viewer.get_raw_metric  # noqa: B018 - a misspelt name still fails as Python's would
    from deuteron.hook import COMPUTE_METADATA_SCOPE_NAME

    assert COMPUTE_METADATA_SCOPE_NAME == "__proton_launch_metadata"


def test_protons_trace_has_its_kernels_scopes_and_arrows(tmp_path: Path) -> None:
    """start(data="trace") writes Proton's trace as Triton 3.9 does: a scope event per scope, each
    kernel with its call stack and a launch->kernel arrow, the last kernel last; Deuteron's own
    traces (deuteron run --trace, output_format="chrome_trace") keep their own shape."""
    x = torch.zeros(16)
    deuteron.start(str(tmp_path / "proton_style"), backend="interpreter", data="trace")
    with deuteron.scope("init"):
        plain[(1,)](x, 4, B=4)
    with deuteron.scope("test"):
        foo[(1,)](x, 16, B=16)
    deuteron.finalize()
    events = json.loads((tmp_path / "proton_style.chrome_trace").read_text())["traceEvents"]
    assert [e["name"] for e in events if e["cat"] == "kernel"] == ["plain", "foo"]
    assert [e["name"] for e in events if e["cat"] == "scope"] == ["init", "test"]
    arrows = [(e["name"], e["ph"]) for e in events if e["cat"] == "flow"]
    assert arrows == [("launch->kernel", "s"), ("launch->kernel", "f")] * 2
    assert events[-1]["args"]["call_stack"] == ["ROOT", "test", "foo"]
    with deuteron.profile(str(tmp_path / "ours"), backend="interpreter", output_format="chrome_trace"):
        with deuteron.scope("test"):
            foo[(1,)](x, 16, B=16)
    ours = json.loads((tmp_path / "ours.chrome_trace").read_text())["traceEvents"]
    assert {e.get("cat") for e in ours if e["ph"] == "X"} >= {"scope", "kernel"}


def test_replayed_metrics_give_what_each_read_adds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The accounting behind metrics recorded in graph capture, on a host buffer: each replay adds
    the captured value; a read gives what was added since the last one (ints stay ints)."""
    from deuteron.collect import deferred as metric
    buffer = metric._ReplayBuffer()
    buffer.tensor = torch.zeros(8, dtype=torch.float64)
    monkeypatch.setattr(metric, "REPLAY_BUFFER", buffer)
    vec = metric.ReplayedMetric.capture(torch.arange(3))
    num = metric.ReplayedMetric.capture(16)
    assert vec is not None and num is not None and buffer.used == 4
    for _ in range(10):  # what ten replays of the captured adds do
        buffer.tensor[0:3].add_(torch.arange(3, dtype=torch.float64))
        buffer.tensor[3:4].add_(16.0)
    assert vec.value() == [0, 11, 22] and num.value() == 176  # the capture's own add, then 10 replays
    buffer.tensor[3:4].add_(16.0)
    assert num.value() == 16 and vec.value() == [0, 0, 0]
    buffer.tensor[3:4].add_(16.0)
    assert metric.Times(num, 2).value() == 32
    buffer.used = metric.REPLAY_SLOTS  # full: the metric is left out rather than overwrite another
    assert metric.ReplayedMetric.capture(1.0) is None
