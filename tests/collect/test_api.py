"""Session and scope API semantics: nesting, threads, decorators, no-ops, disable, kinds."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import torch

import deuteron
import deuteron.collect.api as api
from deuteron.collect import lifecycle
from deuteron.collect.backends import BackendError, cupti_unavailable_reason
from deuteron.collect.session import SessionError
from deuteron.formats import hatchet
from tests.helpers import kernels as k
from tests.helpers.profiles import find, kernels


def test_start_finalize_writes_named_hatchet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    sid = deuteron.start("myrun", backend="interpreter")
    assert isinstance(sid, int) and sid >= 0
    with deuteron.scope("train", metrics={"flops": 2 * 8 * 8 * 8}):
        k.add(torch.rand(64), torch.rand(64))
    files = deuteron.finalize()
    assert files == [Path("myrun.hatchet")]
    from deuteron.formats import hatchet

    prof = hatchet.read(tmp_path / "myrun.hatchet")
    assert find(prof, "train").metrics["flops"] == 1024
    assert find(prof, "train", "add_kernel").metrics["count"] == 1
    meta = prof.metadata
    for key in ("version", "command", "start_time", "host", "pid", "backend", "context"):
        assert key in meta, key
    assert meta["backend"] == "interpreter"


def test_rank_is_recorded_when_set(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("RANK", "3")
    with deuteron.profile(backend="interpreter") as p:
        pass
    assert p.result is not None and p.result.metadata["rank"] == "3"


def test_nested_scopes_context_manager_decorator_and_enter_exit():
    @deuteron.scope("decorated")
    def work() -> None:
        k.add(torch.rand(32), torch.rand(32))

    with deuteron.profile(backend="interpreter") as p:
        with deuteron.scope("outer"):
            with deuteron.scope("inner"):
                work()
            deuteron.enter_scope("manual", metrics={"bytes": 10})
            work()
            deuteron.exit_scope("manual")
    prof = p.result
    assert prof is not None
    assert find(prof, "outer", "inner", "decorated", "add_kernel").metrics["count"] == 1
    assert find(prof, "outer", "manual", "decorated", "add_kernel").metrics["count"] == 1
    assert find(prof, "outer", "manual").metrics["bytes"] == 10


def test_decorator_made_before_a_session_still_records_inside_one():
    @deuteron.scope("early")
    def work() -> int:
        return 7

    assert work() == 7  # no session: plain call
    with deuteron.profile(backend="interpreter") as p:
        assert work() == 7
    assert p.result is not None
    early = find(p.result, "early")  # recorded; a plain scope has no cpu_time, as in Proton
    assert early.name == "early" and "cpu_time (ns)" not in early.metrics


def test_scopes_are_per_thread():
    barrier = threading.Barrier(4)

    def worker(i: int) -> None:
        with deuteron.scope(f"thread{i}"):
            barrier.wait()
            k.add(torch.rand(16), torch.rand(16))
            barrier.wait()

    with deuteron.profile(backend="interpreter") as p:
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    prof = p.result
    assert prof is not None
    top = sorted(c.name for c in prof.root.children.values())
    assert top == ["thread0", "thread1", "thread2", "thread3"]  # never nested in each other
    for i in range(4):
        assert find(prof, f"thread{i}", "add_kernel").metrics["count"] == 1


def test_calls_outside_a_session_are_noops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    with deuteron.scope("nothing", metrics={"flops": 1}):
        pass
    deuteron.enter_scope("x")
    deuteron.exit_scope("x")
    with deuteron.state("s"):
        pass
    deuteron.activate()
    deuteron.deactivate()
    assert deuteron.finalize() == []
    assert list(tmp_path.iterdir()) == []
    assert lifecycle.active == []


def test_disable_turns_everything_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEUTERON_DISABLE", "1")
    sid = deuteron.start("off", backend="interpreter")
    assert sid is None  # as Proton's start() when profiling is disabled
    with deuteron.scope("x"):
        k.add(torch.rand(8), torch.rand(8))
    assert deuteron.finalize(sid) == []
    assert deuteron.finalize() == []
    assert list(tmp_path.iterdir()) == []


def test_deactivated_session_records_nothing_until_activated():
    with deuteron.profile(backend="interpreter") as p:
        deuteron.deactivate(p.session)
        k.add(torch.rand(8), torch.rand(8))
        with deuteron.scope("hidden"):
            pass
        deuteron.activate(p.session)
        k.add(torch.rand(8), torch.rand(8))
    prof = p.result
    assert prof is not None
    assert find(prof, "add_kernel").metrics["count"] == 1
    assert "hidden" not in [c.name for c in prof.root.children.values()]


def test_metric_kinds_follow_proton_suffixes():
    with deuteron.profile(backend="interpreter") as p:
        for _ in range(2):
            with deuteron.scope("outer", metrics={"flops": 5, "slots (exc)": 2, "tile (pty)": 64}):
                with deuteron.scope("inner", metrics={"flops": 1}):
                    pass
    prof = p.result
    assert prof is not None
    outer = find(prof, "outer")
    assert outer.metrics == {"flops": 10, "slots": 4, "tile": 64}
    assert prof.kind("slots") == "exc" and prof.kind("tile") == "pty" and prof.kind("flops") == "inc"
    from deuteron.view.processors import inclusive

    inc = inclusive(prof)
    assert find(inc, "outer").metrics["flops"] == 12  # inclusive sums up
    assert inc.root.metrics.get("slots") is None  # exclusive does not propagate
    assert inc.root.metrics.get("tile") is None  # nor do properties


def test_profile_context_manager_returns_tree_and_can_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    with deuteron.profile("nb", backend="interpreter") as p:
        k.add(torch.rand(8), torch.rand(8))
    assert p.result is not None and "add_kernel" in kernels(p.result)
    assert p.files == [] and list(tmp_path.iterdir()) == []
    with deuteron.profile("nb", backend="interpreter", output_format="hatchet,chrome_trace") as p2:
        k.add(torch.rand(8), torch.rand(8))
    assert sorted(f.name for f in p2.files) == ["nb.chrome_trace", "nb.hatchet"]


def test_profile_as_protons_decorator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Proton's ``@profile`` (bare, or with options): each call records into one session, which is
    inactive between calls and written by finalize()."""
    monkeypatch.chdir(tmp_path)

    @deuteron.profile(name="named", backend="interpreter")
    def job() -> str:
        k.add(torch.rand(8), torch.rand(8))
        return "done"

    assert job() == "done" and job() == "done"
    assert job.__name__ == "job" and lifecycle.active == []
    k.add(torch.rand(8), torch.rand(8))  # between calls: not recorded
    deuteron.finalize()
    named = hatchet.read(tmp_path / "named.hatchet")
    assert find(named, "add_kernel").metrics["count"] == 2

    @deuteron.profile
    def bare(n: int) -> int:
        k.add(torch.rand(n), torch.rand(n))
        return n

    assert bare(8) == 8  # backend auto: the interpreter on this GPU-less machine
    deuteron.finalize()
    assert find(hatchet.read(tmp_path / "proton.hatchet"), "add_kernel").metrics["count"] == 1


def test_scope_mismatch_and_bad_arguments_raise_clear_errors():
    with deuteron.profile(backend="interpreter"):
        deuteron.enter_scope("a")
        with pytest.raises(SessionError, match="innermost open scope is 'a'"):
            deuteron.exit_scope("b")
        deuteron.exit_scope("a")
        with pytest.raises(SessionError, match="without a matching enter_scope"):
            deuteron.exit_scope("a")
    with pytest.raises(SessionError, match="unknown context"):
        deuteron.start(context="stack")
    with pytest.raises(SessionError, match="unknown hook"):
        deuteron.start(hook="proton")
    with pytest.raises(SessionError, match="no session 99"):
        deuteron.finalize(99)
    from deuteron.collect.backends import BackendError

    with pytest.raises(BackendError, match="unknown backend 'gpu'"):
        deuteron.start(backend="gpu")
    with pytest.raises(BackendError, match="cupti backend is unavailable"):
        deuteron.start(backend="cupti")
    with deuteron.profile(backend="interpreter") as p:
        with pytest.raises(SessionError, match="unknown output format"):
            lifecycle.sessions[p.session].write("pdf")


def test_auto_backend_falls_back_to_the_interpreter_without_cupti():
    with deuteron.profile() as p:
        pass
    assert p.result is not None and p.result.metadata["backend"] == "interpreter"


def test_profile_show_prints_the_view():
    import io

    with deuteron.profile(backend="interpreter") as p:
        with deuteron.scope("shown"):
            k.add(torch.rand(64), torch.rand(64))
    buf = io.StringIO()
    p.show("bytes,time/us", file=buf)
    lines = buf.getvalue().splitlines()
    assert lines[0].split() == ["bytes", "time/us", "name"]
    assert lines[2].split()[0] == "768" and lines[2].endswith("shown")  # bytes are whole numbers
    with deuteron.profile(backend="interpreter") as p2:
        pass
    with pytest.raises(Exception, match="unknown metric 'nope'"):
        p2.show("nope")


def test_metric_values_from_numpy_and_torch_and_bad_ones(tmp_path: Path):
    import numpy as np

    from deuteron.formats import hatchet
    from deuteron.model.errors import MetricError

    with deuteron.profile(backend="interpreter") as p:
        with deuteron.scope("s", metrics={"flops": np.float32(2.0), "bytes": torch.tensor(3), "ok": True}):
            pass
        with deuteron.scope("nan", metrics={"flops": float("nan"), "bytes": 4}):
            pass
        with pytest.raises(MetricError, match="metric 'bad' must be a number or a string, not dict"):
            with deuteron.scope("bad", metrics={"bad": {"x": 1}}):
                pass
        with deuteron.scope("after"):
            pass
    prof = p.result
    assert prof is not None
    m = find(prof, "s").metrics
    assert (m["flops"], m["bytes"], m["ok"]) == (2.0, 3, 1)
    assert type(m["flops"]) is float and type(m["bytes"]) is int
    back = hatchet.read(hatchet.write(prof, tmp_path / "p.hatchet"))
    assert "flops" not in find(back, "nan").metrics  # a NaN is dropped on write, not the profile
    # "bad" did not stay open: the scope after it is its sibling, not its child
    assert sorted(c.name for c in prof.root.children.values()) == ["after", "bad", "nan", "s"]
    assert find(back, "nan").metrics["bytes"] == 4


def test_protons_start_options_and_the_names_its_users_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Proton's signatures: data="trace" writes a Chrome trace by default, enter_scope/exit_scope
    hand out ids, states can be entered and left, cpu_timed_scope times, deactivate takes flushing."""
    monkeypatch.chdir(tmp_path)
    sid = deuteron.start("t", data="trace", backend=None, context=None, mode=None, hook=None)
    assert sid is not None and deuteron.context.depth(sid) == 0
    first = deuteron.enter_scope("outer")
    assert isinstance(first, int) and deuteron.context.depth(sid) == 1
    with deuteron.cpu_timed_scope("timed"):
        assert deuteron.context.depth(sid) == 2
        deuteron.enter_state("warm")
        k.add(torch.rand(8), torch.rand(8))
        deuteron.exit_state()
        k.add(torch.rand(8), torch.rand(8))
    assert deuteron.exit_scope() == first  # name optional, as in Proton
    deuteron.deactivate(sid, flushing=True)
    assert deuteron.enter_scope("ignored") is None  # nothing records: None, as in Proton
    files = deuteron.finalize()
    assert [f.name for f in files] == ["t.chrome_trace"] and not (tmp_path / "t.hatchet").exists()
    prof = api.current_profile(sid)
    assert prof is None  # finalized
    with pytest.raises(SessionError, match="'cpu_time' is reserved"):
        deuteron.cpu_timed_scope("x", {"cpu_time": 1})


def test_states_and_cpu_time_land_where_proton_puts_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    with deuteron.profile(backend="interpreter") as p:
        with deuteron.cpu_timed_scope("timed"):
            deuteron.enter_state("warm")
            k.add(torch.rand(8), torch.rand(8))
            deuteron.exit_state()
            k.add(torch.rand(8), torch.rand(8))
    assert p.result is not None
    timed = find(p.result, "timed")
    assert timed.metrics["cpu_time (ns)"] > 0
    # a state is the last frame of the launch's context, so the kernel sits below it (Proton's
    # test_tensor_metrics_cudagraph counts the metadata state's frame among ROOT's children)
    assert find(p.result, "timed", "warm", "add_kernel").metrics["count"] == 1
    assert find(p.result, "timed", "add_kernel").metrics["count"] == 1  # the one outside the state


def test_modes_deuteron_lacks_are_refused_in_one_line() -> None:
    with pytest.raises(SessionError, match="mode 'instrumentation' is not supported"):
        deuteron.start("m", mode="instrumentation")
    assert lifecycle.sessions == {}


@pytest.mark.skipif(cupti_unavailable_reason() is None, reason="needs a machine without a usable GPU")
def test_pc_sampling_without_a_gpu_is_refused_in_one_line() -> None:
    for mode in ("pcsampling", "pcsampling:interval=2048", deuteron.mode.PCSampling(interval=500)):
        with pytest.raises(BackendError, match="PC sampling cannot run here: no NVIDIA GPU"):
            deuteron.start("m", mode=mode)
    with pytest.raises(BackendError, match="runs on the cupti backend, not 'interpreter'"):
        deuteron.start("m", backend="interpreter", mode="pcsampling")
    with pytest.raises(SessionError, match="unknown pcsampling option 'every=3'"):
        deuteron.start("m", mode="pcsampling:every=3")
    assert lifecycle.sessions == {}


def test_mode_objects_are_built_as_in_proton_and_refused_at_start() -> None:
    sampling = deuteron.mode.PCSampling(interval=500)
    assert str(sampling) == "pcsampling:interval=500"
    mma = deuteron.mode.MMA(granularity="warp_group", optimizations="time_shift,clock32")
    assert mma.optimizations == [deuteron.mode.Optimize.TIMESHIFT, deuteron.mode.Optimize.CLOCK32]
    assert str(mma).startswith("mma:metric_type=cycle:")
    with pytest.raises(ValueError, match="Unknown granularity"):
        deuteron.mode.Default(granularity="thread")
    for mode in (mma, deuteron.mode.Default(), "default:granularity=warp"):  # without the backend they need
        with pytest.raises(SessionError, match="instruments kernels: start with backend='instrumentation'"):
            deuteron.start("m", mode=mode)
    with pytest.raises(BackendError, match="bad instrumentation mode: unknown instrumentation option 'gran'"):
        deuteron.start("m", backend="instrumentation", mode="default:gran=warp")
    with pytest.raises(BackendError, match="bad instrumentation mode: Unknown buffer_type: local"):
        deuteron.start(
            "m",
            backend="instrumentation",
            mode=deuteron.mode.Default(buffer_type="shared").__class__.__name__.lower()
            + ":buffer_type=local",
        )
    with pytest.raises(SessionError, match="unknown data 'graph'"):
        deuteron.start("m", data="graph")
    with pytest.raises(SessionError, match="unknown hook <object"):
        deuteron.start("m", hook=object())
    with pytest.raises(SessionError, match="an InstrumentationHook is made by the backend"):
        deuteron.start("m", hook=deuteron.hooks.InstrumentationHook(""))
    assert deuteron.DEFAULT_PROFILE_NAME == "proton" and lifecycle.sessions == {}


def test_launch_metadata_work_is_left_out_of_views() -> None:
    """Kernels launched while computing launch metadata (Proton's metadata state) are bookkeeping:
    recorded, but not shown or counted by the viewer, as proton-viewer does."""
    from deuteron.view.build import ViewOptions, build

    with deuteron.profile(backend="interpreter") as p:
        with deuteron.metadata_state("add_kernel"):
            k.add(torch.rand(8), torch.rand(8))
        k.add(torch.rand(8), torch.rand(8))
    assert p.result is not None
    assert find(p.result, "__proton_launch_metadata", "add_kernel", "add_kernel").metrics["count"] == 1
    view = build(p.result, ViewOptions(metrics=["count"]))
    names = [n.name for n in view.tree.root.walk()]
    assert not any(n.startswith("__proton_launch_metadata") for n in names), names
    assert view.tree.root.metrics["count"] == 1


def test_finalize_writes_hatchet_msgpack_and_view_reads_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from tests.helpers.cli import run_cli

    monkeypatch.chdir(tmp_path)
    sid = deuteron.start("packed", backend="interpreter")
    with deuteron.scope("s"):
        k.add(torch.rand(64), torch.rand(64))
    files = deuteron.finalize(sid, output_format="hatchet_msgpack")
    assert [f.name for f in files] == ["packed.hatchet_msgpack"]
    assert find(hatchet.read(tmp_path / "packed.hatchet_msgpack"), "s", "add_kernel").metrics["count"] == 1
    proc = run_cli("view", "packed.hatchet_msgpack", "-m", "count,bytes", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1].split()[:2] == ["1", "768"]


def test_scope_metrics_follow_protons_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Scope metrics inside a state go under the state's frame; a metric keeps its value type
    (properties aside); only cpu_timed_scope records cpu_time; unknown sessions are named."""
    import json

    monkeypatch.chdir(tmp_path)
    deuteron.start("rules", backend="interpreter")
    with deuteron.scope("plain"), deuteron.cpu_timed_scope("timed"):
        pass
    deuteron.enter_scope("outer")
    deuteron.enter_state("warm")
    deuteron.enter_scope("inner", metrics={"a": 1.0})
    deuteron.exit_scope()
    deuteron.exit_state()
    deuteron.exit_scope()
    with deuteron.scope("props", {"p (pty)": "x"}), deuteron.scope("props2", {"p (pty)": 2.0}):
        pass
    mismatch = r"type mismatch for valueId 0 \(a\): current=double, new=int64_t"
    with pytest.raises(SessionError, match=mismatch):
        with deuteron.scope("again", {"a": 1}):
            pass
    with pytest.raises(SessionError, match="Session has not been initialized: 100000"):
        deuteron.activate(100_000)  # an id no test reaches
    deuteron.finalize()
    root = json.loads((tmp_path / "rules.hatchet").read_text())[0]
    plain = next(c for c in root["children"] if c["frame"]["name"] == "plain")
    assert "cpu_time (ns)" not in plain["metrics"]
    assert plain["children"][0]["metrics"]["cpu_time (ns)"] > 0  # the timed scope inside it
    outer = next(c for c in root["children"] if c["frame"]["name"] == "outer")
    (inner,) = outer["children"]
    assert [c["frame"] for c in inner["children"]] == [{"name": "warm", "type": "state"}]
    assert inner["children"][0]["metrics"] == {"a": 1.0} and "a" not in inner["metrics"]


def test_data_phases_as_protons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Proton's data API: get/get_msgpack a phase as the hatchet document, advance, clear,
    is_phase_complete; finalize writes every phase not cleared."""
    import msgpack

    monkeypatch.chdir(tmp_path)
    sid = deuteron.start("phased", backend="interpreter")
    with deuteron.scope("phase0"):
        k.add(torch.rand(8), torch.rand(8))
    assert not deuteron.data.is_phase_complete(sid, 0)
    first = deuteron.data.get(sid)
    assert [c["frame"]["name"] for c in first[0]["children"]] == ["phase0"]
    assert msgpack.unpackb(deuteron.data.get_msgpack(sid), raw=False, strict_map_key=False) == first
    assert deuteron.data.advance_phase(sid) == 1 and deuteron.data.is_phase_complete(sid, 0)
    with deuteron.scope("phase1"):
        k.add(torch.rand(8), torch.rand(8))
        k.add(torch.rand(8), torch.rand(8))
    deuteron.deactivate(sid, flushing=True)
    current = deuteron.data.get(sid, phase=1)
    assert [c["frame"]["name"] for c in current[0]["children"]] == ["phase1"]  # phase 0's frames: empty here
    assert not deuteron.data.is_phase_complete(sid, 1)
    deuteron.data.clear(sid, phase=0)
    with pytest.raises(SessionError, match="no data for phase 0"):
        deuteron.data.get(sid, phase=0)
    with pytest.raises(SessionError, match="Session has not been initialized: 9"):
        deuteron.data.get(9)
    assert deuteron.data.get(None) is None and deuteron.data.advance_phase(None) is None
    deuteron.finalize()
    written = hatchet.read(tmp_path / "phased.hatchet")
    assert find(written, "phase1", "add_kernel").metrics["count"] == 2
    assert "phase0" not in {c.name for c in written.root.children.values()}  # its phase was cleared


def test_vector_metrics_as_protons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Proton's list metrics: written as lists, added element by element, read back, refused when
    they hold anything but numbers; a view shows them as no number ("-")."""
    import json

    import numpy as np

    from deuteron.model.errors import MetricError
    from deuteron.view.build import ViewOptions, build

    monkeypatch.chdir(tmp_path)
    deuteron.start("vec", backend="interpreter")
    for _ in range(2):
        with deuteron.scope("test0", {"foo": 1.0, "bar": [1, 2, 3], "baz": np.array([1.0, 2.0, 3.0])}):
            pass
    with pytest.raises(MetricError, match="vector metric holds numbers only"):
        with deuteron.scope("bad", {"v": [1, "x"]}):
            pass
    deuteron.finalize()
    data = json.loads((tmp_path / "vec.hatchet").read_text())
    test0 = next(c for c in data[0]["children"] if c["frame"]["name"] == "test0")
    m = test0["metrics"]
    assert (m["bar"], m["baz"], m["foo"]) == ([2, 4, 6], [2.0, 4.0, 6.0], 2.0)
    back = hatchet.read(tmp_path / "vec.hatchet")
    assert find(back, "test0").metrics["bar"] == [2, 4, 6]
    view = build(back, ViewOptions(metrics=["bar", "foo"]))
    import math

    assert view.tree.root.metrics["foo"] == 2.0 and math.isnan(find(view.tree, "test0").metrics["bar"])
    bad = tmp_path / "bad.hatchet"
    bad.write_text(json.dumps([{"frame": {"name": "R"}, "metrics": {"v": [1, "x"]}, "children": []}]))
    from deuteron.formats import FormatError

    with pytest.raises(FormatError, match="not a vector of at most"):
        hatchet.read(bad)


def test_review_mends_deep_phases_methods_and_vector_types(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """data.get at any depth; @profile on a method binds like a function; a vector metric is one
    type whether it comes as a list or an array."""
    import numpy as np

    monkeypatch.chdir(tmp_path)
    sid = deuteron.start("deep", backend="interpreter")
    for _ in range(3000):
        deuteron.enter_scope("s", metrics={"v": np.array([1.0, 2.0])})
    with deuteron.scope("t", {"v": [1.5, 2.5]}):  # a list after arrays: no type mismatch
        pass
    for _ in range(3000):
        deuteron.exit_scope()
    node = deuteron.data.get(sid)[0]
    depth = 0
    while node["children"]:
        node, depth = node["children"][0], depth + 1
    assert depth == 3001
    deuteron.finalize()

    class Model:
        @deuteron.profile(name="method", backend="interpreter")
        def step(self, n: int) -> int:
            return n * 2

    assert Model().step(3) == 6
    deuteron.finalize()
    assert (tmp_path / "method.hatchet").exists()


def test_auto_says_why_it_falls_back_where_an_nvidia_driver_is(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A GPU machine whose CUPTI shim is not built (a checkout without a compiler, say) must not
    profile in the interpreter without a word; one without an NVIDIA driver falls back quietly."""
    from deuteron.collect import backends

    why = "the native CUPTI shim is not built (x)"
    monkeypatch.setattr(backends, "cupti_unavailable_reason", lambda: why)
    monkeypatch.setattr(backends, "_said", False)
    monkeypatch.setattr(backends, "NVIDIA_DRIVER", str(tmp_path / "missing"))
    assert backends.resolve("auto").name == "interpreter"
    assert capsys.readouterr().err == ""
    (tmp_path / "version").write_text("NVRM version: 580\n")
    monkeypatch.setattr(backends, "NVIDIA_DRIVER", str(tmp_path / "version"))
    assert backends.resolve("auto").name == "interpreter"
    assert backends.resolve("auto").name == "interpreter"  # said once per process
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "deuteron: an NVIDIA driver is here but the cupti backend cannot run (the native CUPTI shim is "
        "not built (x)); profiling Triton kernels in the interpreter instead, GPU kernels left out"
    ]
