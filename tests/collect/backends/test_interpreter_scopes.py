"""``pl.scope`` in Triton's interpreter: real kernels run by the interpreter backend, their scopes
filed under the kernel with exact bytes and flops, and one trace span per program per scope."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import triton
import triton.language as tl

import deuteron as proton
import deuteron.language as pl
from deuteron.formats import hatchet
from deuteron.model.tree import Node, Profile
from deuteron.triton import language as engine
from deuteron.triton.interpreter import adapter
from tests.helpers.cli import run_cli
from tests.helpers.profiles import find

F32 = 4  # bytes per float32
BOTH = "hatchet,chrome_trace"


@triton.jit
def scoped_add_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    with pl.scope("load"):
        a = tl.load(x_ptr + offs, mask=m)
        b = tl.load(y_ptr + offs, mask=m)
    pl.enter_scope("store")
    tl.store(o_ptr + offs, a + b, mask=m)
    pl.exit_scope("store")


@triton.jit
def nested_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    """Unscoped: one load and the store; "outer": one load; "outer" > "inner": a load and a store."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    u = tl.load(x_ptr + offs, mask=m)
    with pl.scope("outer"):
        v = tl.load(x_ptr + offs, mask=m)
        with pl.scope("inner"):
            w = tl.load(x_ptr + offs, mask=m)
            tl.store(o_ptr + offs, w, mask=m)
    if (pid + 1) * BLOCK <= n:  # whole blocks only: the masked tail program skips this scope
        with pl.scope("full"):
            tl.store(o_ptr + offs, u + v + w)
    else:
        tl.store(o_ptr + offs, u + v + w, mask=m)


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    tile = r[:, None] * B + r[None, :]
    a = tl.load(a_ptr + tile)
    b = tl.load(b_ptr + tile)
    with pl.scope("dot"):
        c = tl.dot(a, b)
    tl.store(c_ptr + tl.program_id(0) * B * B + tile, c)


@triton.jit
def grid2d_kernel(o_ptr, NX: tl.constexpr):
    pid = tl.program_id(0) + NX * tl.program_id(1)
    with pl.scope("work"):
        tl.store(o_ptr + pid, pid)


@triton.jit
def unmatched_kernel(o_ptr):
    pl.exit_scope("never_entered")  # unmatched exit
    with pl.scope("ok"):
        tl.store(o_ptr + tl.program_id(0), 1.0)
    pl.enter_scope("a")
    pl.enter_scope("b")
    pl.exit_scope("a")  # closes "a"; "b", still open inside it, is dropped (unmatched enter)
    pl.exit_scope("b")  # so this is an unmatched exit
    pl.enter_scope("left_open")  # never exited: unmatched enter


def _add_kernel_launch(n: int = 1000, block: int = 256) -> Callable[[], torch.Tensor]:
    x, y = torch.rand(n), torch.rand(n)

    def work() -> torch.Tensor:
        out = torch.empty_like(x)
        scoped_add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
        torch.testing.assert_close(out, x + y)  # real outputs: the scopes change nothing
        return out

    return work


def _names(node: Node) -> list[str]:
    return sorted(c.name for c in node.children.values())


def _inclusive(node: Node, metric: str) -> Any:
    return sum(n.metrics.get(metric, 0) for n in node.walk())


def _profile(work: Callable[[], Any], **options: Any) -> Profile:
    with proton.profile(backend="interpreter", **options) as p:
        work()
    assert p.result is not None
    return p.result


def test_scopes_are_children_of_the_kernel_with_exact_bytes_and_a_masked_tail() -> None:
    prof = _profile(_add_kernel_launch())
    kernel = find(prof, "scoped_add_kernel")
    assert kernel.type == "kernel"
    assert _names(kernel) == ["load", "store"]
    load, store = find(prof, "scoped_add_kernel", "load"), find(prof, "scoped_add_kernel", "store")
    # four programs of 256 lanes; the last has 1000 - 768 = 232 active ones
    assert load.metrics["bytes_loaded"] == 2 * 1000 * F32 and load.metrics["bytes_stored"] == 0
    assert load.metrics["bytes"] == 2 * 1000 * F32
    assert store.metrics["bytes_stored"] == 1000 * F32 and store.metrics["bytes_loaded"] == 0
    for scope in (load, store):
        m = scope.metrics
        assert m["instances"] == 4 and m["scope programs"] == 4
        assert m["flops"] == 0
        assert m["measured"] == "interpreter"
        assert m["time (ns)"] > 0
        assert 0 < m["time min"] <= m["time median"] <= m["time max"]
        assert m["imbalance"] == round(m["time max"] / m["time median"], 3)
        assert m["time (ns)"] >= m["time min"] * 4  # own time, summed over the four programs
        assert not scope.children
    # the kernel keeps only what no scope covered; its inclusive values are the launch's
    assert kernel.metrics["bytes"] == 0 and kernel.metrics["bytes_loaded"] == 0
    assert _inclusive(kernel, "bytes") == 12000
    assert _inclusive(kernel, "bytes_loaded") == 8000 and _inclusive(kernel, "bytes_stored") == 4000
    assert kernel.metrics["time (ns)"] > 0  # the launch's own interpreter work, outside the scopes
    assert kernel.metrics["programs"] == 4 and kernel.metrics["grid"] == "4x1x1"
    assert prof.metadata["interpreter_scopes"]["instances"] == 8
    assert prof.metadata["interpreter_scopes"]["unmatched_enters"] == 0
    assert prof.metadata["interpreter_scopes"]["unmatched_exits"] == 0
    assert prof.kinds["time min"] == "pty" and prof.kinds["measured"] == "pty"


def test_nested_scopes_nest_and_carry_their_own_bytes_and_time() -> None:
    n, block = 1000, 256
    x, out = torch.rand(n), torch.empty(n)
    prof = _profile(lambda: nested_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block))
    torch.testing.assert_close(out, 3 * x)
    kernel = find(prof, "nested_kernel")
    assert _names(kernel) == ["full", "outer"]
    outer = find(prof, "nested_kernel", "outer")
    inner = find(prof, "nested_kernel", "outer", "inner")
    full = find(prof, "nested_kernel", "full")
    assert _names(outer) == ["inner"]
    assert outer.metrics["bytes_loaded"] == n * F32 and outer.metrics["bytes_stored"] == 0  # own: inner's out
    assert inner.metrics["bytes_loaded"] == n * F32 and inner.metrics["bytes_stored"] == n * F32
    assert _inclusive(outer, "bytes") == 3 * n * F32
    # "full" runs in the three whole programs only: 3 x 256 lanes stored
    assert full.metrics["instances"] == 3 and full.metrics["scope programs"] == 3
    assert full.metrics["bytes_stored"] == 3 * block * F32
    # unscoped: the first load, and the tail's masked store (232 lanes)
    assert kernel.metrics["bytes_loaded"] == n * F32
    assert kernel.metrics["bytes_stored"] == (n - 3 * block) * F32
    assert _inclusive(kernel, "bytes") == (3 * n + 2 * n) * F32  # loads x3, stores x2: the launch total
    for scope in (outer, inner):
        assert scope.metrics["instances"] == 4 and scope.metrics["scope programs"] == 4
    # the per-program spread is each program's whole time in the scope, nested scopes included
    assert outer.metrics["time min"] >= inner.metrics["time min"]
    assert outer.metrics["time (ns)"] < outer.metrics["time max"] * 4  # own time: inner's taken out


def test_dot_flops_belong_to_the_scope_they_ran_in() -> None:
    b = 16
    a_t, b_t = torch.rand(b, b), torch.rand(b, b)
    c = torch.empty(2, b, b)
    prof = _profile(lambda: dot_kernel[(2,)](a_t, b_t, c, B=b))
    torch.testing.assert_close(c[1], a_t @ b_t, rtol=1e-3, atol=1e-3)
    dot = find(prof, "dot_kernel", "dot")
    kernel = find(prof, "dot_kernel")
    assert dot.metrics["flops"] == 2 * (2 * b * b * b) and dot.metrics["flops32"] == 2 * (2 * b * b * b)
    assert dot.metrics["bytes"] == 0
    assert kernel.metrics["flops"] == 0 and kernel.metrics["flops32"] == 0
    assert _inclusive(kernel, "flops") == _inclusive(kernel, "flops32") == 2 * (2 * b * b * b)
    assert _inclusive(kernel, "bytes") == 2 * (3 * b * b * F32)


def test_time_adds_up_to_the_launch_and_spans_lie_inside_it(tmp_path: Path) -> None:
    n, block = 1000, 256
    x, out = torch.rand(n), torch.empty(n)
    with proton.profile(str(tmp_path / "t"), backend="interpreter", output_format=BOTH) as p:
        nested_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block)
    assert p.result is not None
    events = json.loads((tmp_path / "t.chrome_trace").read_text())["traceEvents"]
    kernel_span = next(e for e in events if e.get("cat") == "kernel")
    kernel = find(p.result, "nested_kernel")
    assert _inclusive(kernel, "time (ns)") == pytest.approx(kernel_span["dur"] * 1e3, abs=1)
    inside = [e for e in events if e.get("cat") == "intra"]
    assert len(inside) == 4 * 2 + 3  # outer and inner in four programs, full in three
    for e in inside:
        assert kernel_span["ts"] <= e["ts"]
        assert e["ts"] + e["dur"] <= kernel_span["ts"] + kernel_span["dur"] + 1e-3


def test_program_ids_are_linear_over_a_2d_grid(tmp_path: Path) -> None:
    out = torch.zeros(6, dtype=torch.int32)
    path = tmp_path / "grid"
    proton.start(str(path), backend="interpreter", data="trace")
    grid2d_kernel[(2, 3)](out, NX=2)
    proton.finalize()
    assert out.tolist() == list(range(6))
    events = json.loads((tmp_path / "grid.chrome_trace").read_text())["traceEvents"]
    spans = sorted((e for e in events if e["name"] == "work"), key=lambda e: e["ts"])
    # the interpreter runs x outermost, then y: (0,0) (0,1) (0,2) (1,0) ..., i.e. x + 2*y
    assert [e["args"]["cta"] for e in spans] == [0, 2, 4, 1, 3, 5]
    assert {e["pid"] for e in spans} == {"grid2d_kernel"}  # a process per kernel, a thread per program
    assert {e["tid"] for e in spans} == {f"program {i}" for i in range(6)}
    assert all(e["args"]["sm"] == -1 and e["args"]["call_stack"] == ["ROOT", "grid2d_kernel"] for e in spans)


def test_protons_trace_has_one_span_per_program_per_scope(tmp_path: Path) -> None:
    proton.start(str(tmp_path / "tr"), backend="interpreter", data="trace")
    _add_kernel_launch()()
    proton.finalize()
    events = json.loads((tmp_path / "tr.chrome_trace").read_text())["traceEvents"]
    kernels = [e for e in events if e["cat"] == "kernel"]
    scopes = [e for e in events if e["cat"] == "scoped_add_kernel"]  # Proton's: category = the kernel
    assert [e["name"] for e in kernels] == ["scoped_add_kernel"]
    assert sorted((e["tid"], e["name"]) for e in scopes) == sorted(
        (f"program {i}", name) for i in range(4) for name in ("load", "store")
    )
    assert {e["pid"] for e in scopes} == {"scoped_add_kernel"}
    for i in range(4):  # in each program, "load" ends before "store" starts
        load, store = (next(e for e in scopes if e["tid"] == f"program {i}" and e["name"] == s)
                       for s in ("load", "store"))  # fmt: skip
        assert load["ts"] + load["dur"] <= store["ts"] + 1e-3


def test_unmatched_edges_are_counted_not_raised() -> None:
    out = torch.zeros(3)
    prof = _profile(lambda: unmatched_kernel[(3,)](out))
    assert out.tolist() == [1.0, 1.0, 1.0]
    kernel = find(prof, "unmatched_kernel")
    assert _names(kernel) == ["a", "ok"]  # "b" never closed inside "a"; "left_open" never closed
    ok = find(prof, "unmatched_kernel", "ok")
    assert ok.metrics["instances"] == 3 and ok.metrics["bytes_stored"] == 3 * F32
    assert find(prof, "unmatched_kernel", "a").metrics["instances"] == 3
    assert _inclusive(kernel, "bytes") == 3 * F32
    tally = prof.metadata["interpreter_scopes"]
    assert tally["unmatched_exits"] == 3 * 2  # "never_entered" and "b", per program
    assert tally["unmatched_enters"] == 3 * 2  # "b" and "left_open", per program
    assert tally["instances"] == 3 * 2
    assert tally["kernels_with_unmatched"] == ["unmatched_kernel"]


def test_a_kernel_without_scopes_records_what_it_did_before(tmp_path: Path) -> None:
    from tests.helpers import kernels as k

    records: list[adapter.LaunchRecord] = []
    x, y = torch.rand(1000), torch.rand(1000)
    adapter.install(records.append)
    try:
        k.add(x, y, block=256)
    finally:
        adapter.uninstall()
    assert len(records) == 1 and records[0].scopes is None
    assert engine.SCOPE_SETTINGS.recorder is None  # heard only while a launch runs
    with proton.profile(str(tmp_path / "plain"), backend="interpreter", output_format=BOTH) as p:
        k.add(x, y, block=256)
    assert p.result is not None
    node = find(p.result, "add_kernel")
    assert not node.children
    assert set(node.metrics) == {
        "count", "time (ns)", "bytes", "bytes_loaded", "bytes_stored", "flops", "programs",
        "grid", "device_id", "device_type",
    }  # fmt: skip
    assert node.metrics["bytes"] == 12000 and node.metrics["count"] == 1
    assert "interpreter_scopes" not in p.result.metadata
    events = json.loads((tmp_path / "plain.chrome_trace").read_text())["traceEvents"]
    assert not [e for e in events if e.get("cat") == "intra"]
    kernel_span = next(e for e in events if e.get("cat") == "kernel")
    assert kernel_span["args"]["bytes"] == 12000


def test_scopes_outside_a_launch_or_a_session_are_ignored() -> None:
    pl.enter_scope("nowhere")  # no launch running: nobody hears it
    pl.exit_scope("nowhere")
    x, y = torch.rand(64), torch.rand(64)
    out = torch.empty(64)
    scoped_add_kernel[(1,)](x, y, out, 64, BLOCK=64)  # no session: the kernel just runs
    torch.testing.assert_close(out, x + y)
    assert engine.SCOPE_SETTINGS.recorder is None


def test_the_launch_hook_names_the_kernel_and_its_metrics_win() -> None:
    n, block = 1000, 256
    x, y = torch.rand(n), torch.rand(n)
    out = torch.empty(n)
    grid = (triton.cdiv(n, block),)
    prof = _profile(lambda: hooked_scoped_kernel[grid](x, y, out, n, BLOCK=block), hook="triton")
    kernel = find(prof, f"hooked_{n}")
    assert _names(kernel) == ["load"]
    assert find(prof, f"hooked_{n}", "load").metrics["bytes"] == 2 * n * F32
    assert _inclusive(kernel, "bytes") == 99 * n  # the hook's number stays the kernel's inclusive value
    assert kernel.metrics["bytes"] == 99 * n - 2 * n * F32
    assert _inclusive(kernel, "flops") == 7  # the hook's: no scope counted a flop


def _hooked_metadata(grid: Any, metadata: Any, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": f"hooked_{args['n']}", "bytes": 99 * args["n"], "flops": 7}


@triton.jit(launch_metadata=_hooked_metadata)
def hooked_scoped_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    with pl.scope("load"):
        a = tl.load(x_ptr + offs, mask=m)
        b = tl.load(y_ptr + offs, mask=m)
    tl.store(o_ptr + offs, a + b, mask=m)


def test_two_sessions_each_file_the_scopes_under_their_own_kernel(tmp_path: Path) -> None:
    first = proton.start(str(tmp_path / "one"), backend="interpreter")
    second = proton.start(str(tmp_path / "two"), backend="interpreter")
    with proton.scope("step"):
        _add_kernel_launch()()
    proton.finalize(first, output_format=BOTH)
    proton.finalize(second, output_format=BOTH)
    for name in ("one", "two"):
        prof = hatchet.read(tmp_path / f"{name}.hatchet")
        assert find(prof, "step", "scoped_add_kernel", "load").metrics["bytes"] == 8000
        events = json.loads((tmp_path / f"{name}.chrome_trace").read_text())["traceEvents"]
        inside = [e for e in events if e.get("cat") == "intra"]
        assert len(inside) == 8
        assert all(e["args"]["call_stack"] == ["ROOT", "step", "scoped_add_kernel"] for e in inside)


SCRIPT = """
import torch, triton, triton.language as tl
import deuteron.language as pl

@triton.jit
def scoped_copy(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    with pl.scope("outer"):
        with pl.scope("load"):
            v = tl.load(x_ptr + offs, mask=m)
        tl.store(o_ptr + offs, v, mask=m)

x = torch.rand(100)
o = torch.empty(100)
scoped_copy[(4,)](x, o, 100, BLOCK=32)
assert torch.equal(x, o)
"""


def test_deuteron_run_on_the_interpreter_records_scopes_and_their_trace(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(textwrap.dedent(SCRIPT))
    proc = run_cli("run", "-b", "interpreter", "--trace", "-n", "out", "script.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    prof = hatchet.read(tmp_path / "out.hatchet")
    kernel = find(prof, "scoped_copy")
    outer, load = find(prof, "scoped_copy", "outer"), find(prof, "scoped_copy", "outer", "load")
    assert load.metrics["bytes_loaded"] == 100 * F32 and load.metrics["instances"] == 4
    assert outer.metrics["bytes_stored"] == 100 * F32 and outer.metrics["bytes_loaded"] == 0
    assert outer.metrics["scope programs"] == 4 and load.metrics["scope programs"] == 4
    assert _inclusive(kernel, "bytes") == 2 * 100 * F32 and kernel.metrics["bytes"] == 0
    events = json.loads((tmp_path / "out.chrome_trace").read_text())["traceEvents"]
    inside = [e for e in events if e.get("cat") == "intra"]
    assert sorted((e["args"]["cta"], e["name"]) for e in inside) == sorted(
        (i, s) for i in range(4) for s in ("outer", "load")
    )
    lanes = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
    assert {lanes[e["tid"]] for e in inside} == {f"scoped_copy · program {i}" for i in range(4)}


def test_each_flushed_part_holds_only_its_own_scope_spans(tmp_path: Path) -> None:
    """Proton's periodic flushing writes each phase's trace once: a part's per-program scope spans
    go with it, as its launches' spans do (a later part repeated the earlier parts' spans)."""
    n, block = 1000, 256
    x, out = torch.rand(n), torch.empty(n)
    flushing = "periodic_flushing:format=chrome_trace"
    session = proton.start(str(tmp_path / "run"), backend="interpreter", mode=flushing)
    for phase in range(2):
        nested_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block)
        if phase == 0:
            proton.data.advance_phase(session)
    parts = proton.finalize(session, output_format="chrome_trace")
    assert [p.name for p in parts] == ["run.part_0.chrome_trace", "run.part_1.chrome_trace"]
    for part in parts:
        events = json.loads(part.read_text())["traceEvents"]
        assert len([e for e in events if e.get("cat") == "kernel"]) == 1
        assert len([e for e in events if e.get("cat") == "intra"]) == 4 * 2 + 3
