"""Session and scope API semantics: nesting, threads, decorators, no-ops, disable, kinds."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import torch

import deuteron
import deuteron.api as api
from deuteron.collect.session import SessionError
from tests import kernels as k
from tests.helpers import find, kernels


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
    assert find(p.result, "early").metrics["cpu_time (ns)"] >= 0


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
    assert api._active == []


def test_disable_turns_everything_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEUTERON_DISABLE", "1")
    sid = deuteron.start("off", backend="interpreter")
    assert sid == -1
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
    assert outer.metrics == {
        "flops": 10,
        "slots": 4,
        "tile": 64,
        "cpu_time (ns)": outer.metrics["cpu_time (ns)"],
    }
    assert prof.kind("slots") == "exc" and prof.kind("tile") == "pty" and prof.kind("flops") == "inc"
    from deuteron.processors import inclusive

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


def test_profile_as_decorator():
    @deuteron.profile(backend="interpreter")
    def job() -> str:
        k.add(torch.rand(8), torch.rand(8))
        return "done"

    assert job() == "done"


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
            api._sessions[p.session].write("pdf")


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
    assert lines[2].split()[0] == "768.000" and lines[2].endswith("shown")
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
        with pytest.raises(MetricError, match="metric 'bad' must be a number or a string, not list"):
            with deuteron.scope("bad", metrics={"bad": [1, 2]}):
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
