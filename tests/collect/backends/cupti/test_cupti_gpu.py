"""The CUPTI backend on a real GPU: exact counts, contexts, threads, streams, graphs, hooks, traces."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.cli import fresh_process_env
from tests.helpers.gpu import profile_script
from tests.helpers.profiles import json_find, json_kernel_counts


def test_counts_under_nested_scopes_and_device_table(tmp_path: Path) -> None:
    tree, _ = profile_script(
        tmp_path,
        """
        import deuteron
        x = torch.ones(1 << 20, device="cuda"); y = torch.ones_like(x); o = torch.empty_like(x)
        add(x, y, o)  # compile outside the scopes
        with deuteron.scope("outer"):
            for _ in range(5):
                add(x, y, o)
            with deuteron.scope("inner"):
                for _ in range(3):
                    add(x, y, o)
        z = x * 2.0
        torch.cuda.synchronize()
        assert torch.equal(o, x + y)
    """,
    )
    root, devices = tree
    assert json_find(root, "outer", "add_kernel")["metrics"]["count"] == 5
    inner = json_find(root, "outer", "inner", "add_kernel")["metrics"]
    assert inner["count"] == 3 and inner["time (ns)"] > 0 and inner["device_type"] == "CUDA"
    assert json_find(root, "add_kernel")["metrics"]["count"] == 1
    assert sum(json_kernel_counts(root, "").values()) >= 10  # plus torch's fill and mul kernels
    dev = devices["CUDA"]["0"]
    assert dev["arch"] in ("90", "100", "80") and dev["num_sms"] > 0 and dev["clock_rate"] > 0


def test_python_context_names_the_launching_line(tmp_path: Path) -> None:
    tree, _ = profile_script(
        tmp_path,
        """
        def step(x, y, o):
            add(x, y, o)  # LAUNCH
        x = torch.ones(4096, device="cuda"); y = torch.ones_like(x); o = torch.empty_like(x)
        for _ in range(7):
            step(x, y, o)
        torch.cuda.synchronize()
    """,
        "-c",
        "python",
    )
    root = tree[0]
    script = (tmp_path / "script.py").resolve()
    lines = script.read_text().splitlines()
    launch = next(i for i, line in enumerate(lines, 1) if "# LAUNCH" in line)
    call = next(i for i, line in enumerate(lines, 1) if line.strip() == "step(x, y, o)")
    adder = next(i for i, line in enumerate(lines, 1) if "add_kernel[(" in line)
    node = json_find(
        root, f"{script}:{call}@<module>", f"{script}:{launch}@step", f"{script}:{adder}@add", "add_kernel"
    )
    assert node["metrics"]["count"] == 7


def test_four_threads_launching_at_once(tmp_path: Path) -> None:
    tree, _ = profile_script(
        tmp_path,
        """
        import threading, deuteron
        x = torch.ones(1 << 16, device="cuda"); y = torch.ones_like(x)
        add(x, y, torch.empty_like(x))
        torch.cuda.synchronize()
        barrier = threading.Barrier(4)
        def work(i):
            o = torch.empty_like(x)
            s = torch.cuda.Stream()
            barrier.wait()
            with deuteron.scope(f"thread{i}"), torch.cuda.stream(s):
                for _ in range(50 + i):
                    add(x, y, o)
            s.synchronize()
        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        [t.start() for t in threads]; [t.join() for t in threads]
    """,
    )
    root = tree[0]
    for i in range(4):
        assert json_find(root, f"thread{i}", "add_kernel")["metrics"]["count"] == 50 + i


def test_two_streams_and_trace_with_launch_arrows(tmp_path: Path) -> None:
    _, proc = profile_script(
        tmp_path,
        """
        import deuteron
        x = torch.ones(1 << 20, device="cuda"); y = torch.ones_like(x)
        a, b = torch.cuda.Stream(), torch.cuda.Stream()
        oa, ob = torch.empty_like(x), torch.empty_like(x)
        add(x, y, oa)
        torch.cuda.synchronize()
        with deuteron.scope("two_streams"):
            for _ in range(4):
                with torch.cuda.stream(a):
                    add(x, y, oa)
                with torch.cuda.stream(b):
                    add(x, y, ob)
        torch.cuda.synchronize()
    """,
        "--trace",
    )
    trace = json.loads((tmp_path / "out.chrome_trace").read_text())
    events = trace["traceEvents"]
    lanes = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M"}
    kernels = [
        e
        for e in events
        if e.get("cat") == "kernel" and e["name"] == "add_kernel" and "two_streams" in e["args"]["call_stack"]
    ]
    assert len(kernels) == 8
    streams = {lanes[e["tid"]] for e in kernels}
    assert len(streams) == 2 and all(s.startswith("GPU 0 stream ") for s in streams)
    starts = {e["id"]: e for e in events if e.get("ph") == "s"}
    finishes = [e for e in events if e.get("ph") == "f"]
    assert finishes and all(f["id"] in starts and starts[f["id"]]["ts"] <= f["ts"] for f in finishes)
    scopes = [e for e in events if e.get("cat") == "scope" and e["name"] == "two_streams"]
    assert len(scopes) == 1
    s = scopes[0]
    launched = [starts[f["id"]] for f in finishes if f["tid"] in {e["tid"] for e in kernels}]
    assert any(s["ts"] <= x["ts"] <= s["ts"] + s["dur"] for x in launched)  # launches inside the scope


def test_cuda_graph_replays_are_filed_where_captured(tmp_path: Path) -> None:
    tree, proc = profile_script(
        tmp_path,
        """
        import deuteron
        x = torch.ones(1 << 16, device="cuda"); y = torch.ones_like(x); o = torch.empty_like(x)
        add(x, y, o)
        s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            add(x, y, o)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with deuteron.scope("capture"):
            with torch.cuda.graph(g):
                add(x, y, o)
                add(o, y, o)
        with deuteron.scope("replay"):
            for _ in range(3):
                g.replay()
        torch.cuda.synchronize()
        assert torch.equal(o, x + 2 * y)
    """,
    )
    root = tree[0]
    node = json_find(root, "replay", "<captured_at>", "capture", "add_kernel")
    assert node["metrics"]["count"] == 6


def test_graph_captured_before_start_goes_under_the_launch_with_one_warning(tmp_path: Path) -> None:
    script = tmp_path / "early.py"
    script.write_text("""
import torch, deuteron
x = torch.ones(1 << 16, device="cuda")
s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    y = x * 2
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = x * 2
deuteron.start("out", backend="cupti")
with deuteron.scope("replay"):
    for _ in range(4):
        g.replay()
deuteron.finalize()
""")
    env = fresh_process_env()
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.count("Cannot find graph for graphExecId:") == 1  # Proton's words, once
    assert "start profiling before the graph is created" in proc.stderr
    root = json.loads((tmp_path / "out.hatchet").read_text())[0]
    counts = json_kernel_counts(json_find(root, "replay"))
    assert sum(counts.values()) == 4


def test_triton_hook_names_and_metrics(tmp_path: Path) -> None:
    tree, _ = profile_script(
        tmp_path,
        """
        def meta(grid, kernel, args):
            return {"name": f"add_{args['n']}", "flops": args["n"], "bytes": 12 * args["n"]}
        add_kernel.launch_metadata = None
        @triton.jit(launch_metadata=meta)
        def add_meta(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)
        x = torch.ones(4096, device="cuda"); y = torch.ones_like(x); o = torch.empty_like(x)
        for _ in range(6):
            add_meta[(4,)](x, y, o, 4096, BLOCK=1024)
        torch.cuda.synchronize()
    """,
        "-k",
        "triton",
    )
    node = json_find(tree[0], "add_4096")["metrics"]
    assert node["count"] == 6 and node["flops"] == 6 * 4096 and node["bytes"] == 6 * 12 * 4096


def test_backward_kernels_from_autograd_threads_are_kept(tmp_path: Path) -> None:
    tree, _ = profile_script(
        tmp_path,
        """
        import deuteron
        model = torch.nn.Linear(256, 256).cuda()
        x = torch.randn(64, 256, device="cuda")
        with deuteron.scope("train"):
            for _ in range(3):
                model(x).square().mean().backward()
        torch.cuda.synchronize()
    """,
    )
    train = json_find(tree[0], "train")
    other = json_find(train, "<other threads>")
    assert sum(json_kernel_counts(other).values()) >= 3  # backward kernels launched by autograd's thread


def test_periodic_drains_keep_counts_exact(tmp_path: Path) -> None:
    tree, _ = profile_script(
        tmp_path,
        """
        import deuteron, time
        x = torch.ones(1024, device="cuda"); y = torch.ones_like(x); o = torch.empty_like(x)
        with deuteron.scope("loop"):
            for i in range(3000):
                add(x, y, o)
                if i % 500 == 0:
                    time.sleep(0.15)
        torch.cuda.synchronize()
    """,
        env={"DEUTERON_FLUSH_PERIOD": "0.05", "DEUTERON_DRAIN_KERNELS": "100"},
    )
    assert json_find(tree[0], "loop", "add_kernel")["metrics"]["count"] == 3000
    from deuteron.formats import hatchet

    assert hatchet.read(tmp_path / "out.hatchet").metadata["drains"] > 2


def test_conflict_with_torch_profiler_names_it_and_the_fix(tmp_path: Path) -> None:
    script = tmp_path / "conflict.py"
    script.write_text("""
import torch, deuteron
from deuteron.collect.backends import BackendError
x = torch.ones(16, device="cuda")
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]):
    x * 2
    try:
        deuteron.start("out", backend="cupti")
    except BackendError as exc:
        print("ERROR", exc)
    else:
        print("STARTED")
        deuteron.finalize()
""")
    env = fresh_process_env()
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith(("ERROR", "STARTED")))
    assert line.startswith("ERROR") and "torch.profiler" in line and "DEUTERON_DISABLE" in line, line


def test_sigterm_writes_a_partial_profile(tmp_path: Path) -> None:
    script = tmp_path / "long.py"
    script.write_text("""
import sys, torch, triton, triton.language as tl, deuteron
@triton.jit
def add_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
x = torch.ones(1024, device="cuda"); o = torch.empty_like(x)
with deuteron.scope("forever"):
    for i in range(10**9):
        add_kernel[(1,)](x, o, 1024, BLOCK=1024)
        if i == 100:
            torch.cuda.synchronize(); print("ready", flush=True)
""")
    env = fresh_process_env()
    proc = subprocess.Popen(
        [sys.executable, "-m", "deuteron", "run", "-b", "cupti", "-n", "part", "long.py"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err[-2000:]
    root = json.loads((tmp_path / "part.hatchet").read_text())[0]
    assert json_find(root, "forever", "add_kernel")["metrics"]["count"] > 100


def test_autotune_benchmarks_are_filed_under_autotune(tmp_path: Path) -> None:
    """``@triton.autotune`` on a GPU: every repetition ``do_bench`` makes of each config (and its
    cache flushes) under ``<autotune>``; the launch the script asked for where it was made."""
    tree, _ = profile_script(
        tmp_path,
        """
        @triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (256, 512, 1024)], key=["n"])
        @triton.jit
        def tuned_add_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(o_ptr + i, tl.load(x_ptr + i, mask=i < n) + 1.0, mask=i < n)

        x = torch.ones(1 << 16, device="cuda"); o = torch.empty_like(x)
        tuned_add_kernel[lambda m: (triton.cdiv(x.numel(), m["BLOCK"]),)](x, o, x.numel())
        torch.cuda.synchronize()
        assert torch.equal(o, x + 1)
    """,
    )
    root, _ = tree
    assert json_find(root, "tuned_add_kernel")["metrics"]["count"] == 1
    benched = json_find(root, "<autotune>", "tuned_add_kernel")["metrics"]["count"]
    assert benched >= 3 * 2  # each config, warm-up and timed repetitions


def test_data_phases_with_gpu_kernels(tmp_path: Path) -> None:
    """Proton's data API on CUPTI: deactivate(flushing=True) files every kernel launched so far,
    so data.get sees them; advance_phase starts the next phase on the same frames."""
    script = tmp_path / "phases.py"
    script.write_text("""
import json, torch, deuteron
sid = deuteron.start("out", backend="cupti")
x = torch.ones((64, 64), device="cuda")
with deuteron.scope("first"):
    for _ in range(3):
        x = x + 1
deuteron.deactivate(sid, flushing=True)
first = deuteron.data.get(sid)
deuteron.activate(sid)
assert deuteron.data.advance_phase(sid) == 1 and deuteron.data.is_phase_complete(sid, 0)
with deuteron.scope("second"):
    x = x * 2
deuteron.deactivate(sid, flushing=True)
second = deuteron.data.get(sid, phase=1)
print(json.dumps({"first": first, "second": second}))
deuteron.finalize()
""")
    proc = run_plain(script)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sum(json_kernel_counts(json_find(got["first"][0], "first")).values()) == 3
    assert [c["frame"]["name"] for c in got["second"][0]["children"]] == ["second"]
    assert sum(json_kernel_counts(json_find(got["second"][0], "second")).values()) == 1
    whole = json.loads((tmp_path / "out.hatchet").read_text())[0]
    assert sum(json_kernel_counts(json_find(whole, "first")).values()) == 3


def test_back_to_back_sessions_each_file_their_kernels(tmp_path: Path) -> None:
    """Six start/finalize sessions in a row, each launching one kernel in scope "s": CUPTI numbers
    correlation ids afresh each time, and no session may lose its launch to the last one's id."""
    script = tmp_path / "again.py"
    script.write_text("""
import json, torch, deuteron
torch.ones(4, device="cuda"); torch.cuda.synchronize()  # CUDA ready before the first session
for i in range(6):
    deuteron.start(f"run{i}", backend="cupti")
    with deuteron.scope("s"):
        torch.ones((2, 2), device="cuda")
    deuteron.finalize()
""")
    run_plain(script)
    for i in range(6):
        root = json.loads((tmp_path / f"run{i}.hatchet").read_text())[0]
        assert sum(json_kernel_counts(json_find(root, "s")).values()) == 1, (i, root)
        assert "<no launch record>" not in {c["frame"]["name"] for c in root["children"]}, i


def test_concurrent_sessions_each_file_their_own_kernels(tmp_path: Path) -> None:
    """Proton runs several sessions at once: each gets the kernels launched while it records,
    under its own scopes; one paused while the other records loses only what ran meanwhile."""
    script = tmp_path / "two.py"
    script.write_text("""
import torch, deuteron
torch.ones(4, device="cuda"); torch.cuda.synchronize()
a = deuteron.start("a", backend="cupti")
with deuteron.scope("scope0"):
    torch.ones((2, 2), device="cuda")
b = deuteron.start("b", backend="cupti")
with deuteron.scope("scope0"):
    torch.ones((2, 2), device="cuda")
deuteron.deactivate(a)
with deuteron.scope("scope1"):
    torch.ones((2, 2), device="cuda")
deuteron.activate(a)
deuteron.finalize(a)
with deuteron.scope("after"):
    torch.ones((2, 2), device="cuda")
deuteron.finalize(b)
""")
    run_plain(script)
    a = json.loads((tmp_path / "a.hatchet").read_text())[0]
    b = json.loads((tmp_path / "b.hatchet").read_text())[0]
    assert sum(json_kernel_counts(json_find(a, "scope0")).values()) == 2
    assert "scope1" not in {c["frame"]["name"] for c in a["children"]}
    assert sum(json_kernel_counts(json_find(b, "scope0")).values()) == 1
    assert sum(json_kernel_counts(json_find(b, "scope1")).values()) == 1
    assert sum(json_kernel_counts(json_find(b, "after")).values()) == 1


def test_launch_hook_filters_states_and_device_tensor_metrics(tmp_path: Path) -> None:
    """LaunchHook include/exclude, a kernel launched by a metadata function filed under the
    metadata state, and a device-tensor metric read without a host sync (also in graph capture,
    where it is left out rather than breaking the capture)."""
    script = tmp_path / "hooked.py"
    script.write_text("""
import torch, triton, triton.language as tl, deuteron
calls = []
def meta_foo(grid, metadata, args):
    calls.append("foo")
    return {"name": "foo_meta", "flops": args["x"].sum(), "bytes": 16}
def meta_bar(grid, metadata, args):
    calls.append("bar")
    return {"name": "bar_meta"}
@triton.jit(launch_metadata=meta_foo)
def foo(x, y):
    tl.store(y, tl.load(x))
@triton.jit(launch_metadata=meta_bar)
def bar(x, y):
    tl.store(y, tl.load(x))
from deuteron.hooks import LaunchHook
LaunchHook().configure(include=".*foo")
x = torch.full((4,), 2.0, device="cuda"); y = torch.zeros_like(x)
foo[(1,)](x, y); bar[(1,)](x, y); torch.cuda.synchronize()
deuteron.start("out", backend="cupti", hook=LaunchHook())
with deuteron.scope("test0"):
    foo[(1,)](x, y)
    bar[(1,)](x, y)
g = torch.cuda.CUDAGraph()
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    with torch.cuda.graph(g):
        foo[(1,)](x, y)
g.replay(); torch.cuda.synchronize()
deuteron.finalize()
assert "bar" not in calls, calls
""")
    run_plain(script)
    root = json.loads((tmp_path / "out.hatchet").read_text())[0]
    test0 = json_find(root, "test0")
    foo = json_find(test0, "foo_meta")["metrics"]
    assert foo["count"] == 1 and foo["flops"] == 8.0 and foo["bytes"] == 16
    assert json_find(test0, "bar")["metrics"]["count"] == 1  # not included: profiled under its own name
    state = json_find(test0, "__proton_launch_metadata", "foo")  # x.sum() launched by the metadata function
    assert sum(json_kernel_counts(state).values()) >= 1


# The kernel of the launch-metadata scripts below; each script defines its own ``meta`` first.
FOO_WITH_METADATA = """@triton.jit(launch_metadata=meta)
def foo(x, y):
    tl.store(y, tl.load(x))
"""


def test_metrics_recorded_in_graph_capture_count_once_per_replay(tmp_path: Path) -> None:
    """Scope metrics (a number, a device tensor) and launch-metadata metrics given while a graph is
    captured are counted at every replay, under the replay's scope, as Proton counts them."""
    script = tmp_path / "replayed.py"
    script.write_text("""
import torch, triton, triton.language as tl, deuteron
def meta(grid, metadata, args):
    return {"name": "foo_test", "bytes": 16, "flops": args["x"].sum()}
""" + FOO_WITH_METADATA + """x = torch.full((4,), 1.0, device="cuda"); y = torch.zeros_like(x)
foo[(1,)](x, y); torch.cuda.synchronize()
deuteron.start("out", backend="cupti", hook="triton")
def step():
    with deuteron.scope("scope_a", metrics={"bytes": 16}):
        a = torch.ones(4, device="cuda")
    with deuteron.scope("scope_b", metrics={"sum": a.sum()}):
        b = a * 2
    foo[(1,)](x, y)
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    step()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
with deuteron.scope("replay"):
    for _ in range(3):
        g.replay()
torch.cuda.synchronize()
deuteron.finalize()
""")
    run_plain(script)
    root = json.loads((tmp_path / "out.hatchet").read_text())[0]
    captured = json_find(root, "replay", "<captured_at>")
    assert json_find(captured, "scope_a")["metrics"]["bytes"] == 48
    assert json_find(captured, "scope_b")["metrics"]["sum"] == 12.0
    foo = json_find(captured, "foo_test")["metrics"]
    assert foo["count"] == 3 and foo["bytes"] == 48 and foo["flops"] == 12.0
    assert json_find(root, "scope_a")["metrics"]["bytes"] == 16  # the run before capture: once


def test_waiting_tensor_metrics_hold_no_device_memory(tmp_path: Path) -> None:
    """Thousands of launches with a device-tensor metric, none read yet: the values wait in the
    metric buffer allocated at start, so the program's device memory does not grow with them."""
    script = tmp_path / "many.py"
    script.write_text("""
import json, torch, triton, triton.language as tl, deuteron
def meta(grid, metadata, args):
    return {"name": "foo_meta", "flops": args["x"].sum()}
""" + FOO_WITH_METADATA + """x = torch.full((4,), 2.0, device="cuda"); y = torch.zeros_like(x)
foo[(1,)](x, y); x.sum(); torch.cuda.synchronize()
deuteron.start("out", backend="cupti", hook="triton")
before = torch.cuda.memory_allocated()
for _ in range(3000):
    foo[(1,)](x, y)
torch.cuda.synchronize()
grew = torch.cuda.memory_allocated() - before
deuteron.finalize()
print(json.dumps({"grew": grew}))
""")
    proc = run_plain(script)
    grew = json.loads(proc.stdout.strip().splitlines()[-1])["grew"]
    assert grew < 64 * 1024, grew
    root = json.loads((tmp_path / "out.hatchet").read_text())[0]
    foo = json_find(root, "foo_meta")["metrics"]
    assert foo["count"] == 3000 and foo["flops"] == 3000 * 8.0


def test_metric_copies_are_filed_as_metric_under_launch_metadata(tmp_path: Path) -> None:
    """A device-tensor metric is the tensor's value at launch (changed afterwards, it still counts
    what it was), and the kernel copying it is filed as ``<metric>`` under the launch-metadata
    frames (a kernel's: ``__proton_launch_metadata > foo``; a scope's: ``__proton_launch_metadata``),
    with the helper kernels the metadata function launched, as Proton files them."""
    script = tmp_path / "metric.py"
    script.write_text("""
import torch, triton, triton.language as tl, deuteron
v = torch.tensor(8.0, device="cuda")
def meta(grid, metadata, args):
    return {"name": "foo_test", "flops": v, "bytes": args["x"].sum()}
""" + FOO_WITH_METADATA + """x = torch.full((4,), 2.0, device="cuda"); y = torch.zeros_like(x)
foo[(1,)](x, y); torch.cuda.synchronize()
deuteron.start("out", backend="cupti", hook="triton")
foo[(1,)](x, y)
v.zero_()  # after the launch: the launch still counts 8
with deuteron.scope("s", metrics={"m": torch.tensor(3.0, device="cuda")}):
    foo[(1,)](x, y)
deuteron.finalize()
""")
    run_plain(script)
    root = json.loads((tmp_path / "out.hatchet").read_text())[0]
    assert json_find(root, "foo_test")["metrics"]["flops"] == 8.0
    assert json_find(root, "foo_test")["metrics"]["bytes"] == 8
    assert (
        json_find(root, "s")["metrics"]["m"] == 3.0
        and json_find(root, "s", "foo_test")["metrics"]["flops"] == 0.0
    )
    owner = json_find(root, "__proton_launch_metadata", "foo")
    assert json_find(owner, "<metric>")["metrics"]["count"] >= 1  # the copies of flops and bytes
    assert any("reduce" in c["frame"]["name"] for c in owner["children"])  # x.sum()
    assert json_find(root, "s", "__proton_launch_metadata", "<metric>")["metrics"]["count"] >= 1


def run_plain(script: Path) -> subprocess.CompletedProcess[str]:
    """Run a script with plain Python (not ``deuteron run``) on the GPU; it must succeed."""
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=script.parent,
        env=fresh_process_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc
