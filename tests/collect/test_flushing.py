"""``deuteron run --flush-every``: a run's profile appended to ``NAME.hatchet_stream`` while it runs.

Real processes: a Triton kernel run in the interpreter step by step, killed with SIGKILL after a
few steps; its stream is read back with ``deuteron view``, every flushed step in it. A run that
ends writes its ``NAME.hatchet`` from the stream (the same tree a run without flushing writes)
and removes the stream."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deuteron.collect.flushing import FlushEvery, parse_every
from deuteron.formats import hatchet, profile_stream
from deuteron.formats.files import FormatError
from deuteron.model.tree import Node, Profile
from tests.helpers.cli import fresh_process_env, run_cli

STEPS = """
import sys, time, deuteron, torch, triton, triton.language as tl

@triton.jit
def add_one(x, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(x + o, tl.load(x + o, mask=o < n) + 1, mask=o < n)

x = torch.zeros(256)
for i in range(int(sys.argv[1])):
    with deuteron.scope("step"):
        add_one[(2,)](x, 256, B=128)
    print("step", i, flush=True)
    time.sleep(float(sys.argv[2]))
"""

OPTIMIZER = """
import torch
torch.manual_seed(0)
model = torch.nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(4):
    model(torch.randn(4, 8)).sum().backward()
    opt.step()
    opt.zero_grad()
"""


def _child(node: Node, name: str) -> Node:
    (found,) = [c for c in node.children.values() if c.name == name]
    return found


def _counts(profile: Profile) -> dict[tuple[str, ...], object]:
    """Every frame's path with its calls and count: what flushing must not change."""
    out: dict[tuple[str, ...], object] = {}
    stack: list[tuple[Node, tuple[str, ...]]] = [(profile.root, ())]
    while stack:
        node, path = stack.pop()
        path = (*path, node.name)
        out[path] = (node.metrics.get("calls"), node.metrics.get("count"))
        stack.extend((child, path) for child in node.children.values())
    return out


def _kill_after(tmp_path: Path, lines: int, *options: str, pause: str = "0.05") -> list[str]:
    """Start ``deuteron run OPTIONS steps.py 1000 PAUSE``, SIGKILL it once it printed ``lines``
    steps; returns what it printed."""
    (tmp_path / "steps.py").write_text(STEPS)
    command = [sys.executable, "-m", "deuteron", "run", *options, "steps.py", "1000", pause]
    proc = subprocess.Popen(
        command, cwd=tmp_path, env=fresh_process_env({"CUDA_VISIBLE_DEVICES": ""}),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    printed = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    while len(printed) < lines and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        printed.append(line.strip())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(printed) >= lines, (printed, proc.stderr.read() if proc.stderr else "")
    return printed


def test_every_takes_seconds_minutes_and_steps() -> None:
    assert parse_every("30") == FlushEvery(seconds=30) == parse_every("30s")
    assert parse_every("1.5m") == FlushEvery(seconds=90) and parse_every("1h") == FlushEvery(seconds=3600)
    assert parse_every("100steps") == FlushEvery(steps=100) == parse_every("100 steps")
    assert str(parse_every("1step")) == "1 step" and str(parse_every("2steps")) == "2 steps"
    for bad in ("soon", "0", "0.01s", "1.5steps", "0steps", "-3", ""):
        with pytest.raises(ValueError, match="--flush-every"):
            parse_every(bad)


def test_a_bad_every_is_one_line_before_the_program_runs(tmp_path: Path) -> None:
    (tmp_path / "ran.py").write_text("open('ran', 'w').write('yes')\n")
    proc = run_cli("run", "--flush-every", "soon", "ran.py", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--flush-every" in proc.stderr.strip().splitlines()[-1]
    assert "seconds (30, 30s, 5m, 1h) or steps (100steps)" in proc.stderr
    assert not (tmp_path / "ran").exists()


def test_a_killed_run_keeps_every_flushed_step(tmp_path: Path) -> None:
    """Flushed at each step's end, before it prints: every printed step is in the stream."""
    printed = _kill_after(tmp_path, 4, "--flush-every", "1step", "-n", "k")
    assert not (tmp_path / "k.hatchet").exists()  # the run never ended
    stream = profile_stream.read(tmp_path / "k.hatchet_stream")
    assert len(stream.flushes) >= len(printed)
    assert [f.phase for f in stream.flushes] == list(range(len(stream.flushes)))
    for flush in stream.flushes:  # one whole step per record: the scope and its one launch
        assert _child(_child(flush.tree.root, "step"), "add_one").metrics["count"] == 1
    view = run_cli("view", "k.hatchet_stream", "-m", "count", cwd=tmp_path)
    assert view.returncode == 0, view.stderr
    flushes = len(stream.flushes)
    said = f"k.hatchet_stream holds {flushes} flushes of a run that has not ended, the last at "
    assert said in view.stderr
    rows = {line.split()[-1]: int(line.split()[0]) for line in view.stdout.splitlines()[1:]}
    assert rows["step"] == rows["add_one"] == flushes
    check = run_cli("view", "--check", "k.hatchet_stream", cwd=tmp_path)
    assert check.returncode == 0, check.stdout


def test_a_record_cut_mid_write_is_left_out_and_said(tmp_path: Path) -> None:
    _kill_after(tmp_path, 3, "--flush-every", "1step", "-n", "k")
    whole = (tmp_path / "k.hatchet_stream").read_bytes()
    records = len(profile_stream.read(tmp_path / "k.hatchet_stream").flushes)
    (tmp_path / "cut.hatchet_stream").write_bytes(whole[:-20])  # the last record loses its end
    cut = profile_stream.read(tmp_path / "cut.hatchet_stream")
    assert len(cut.flushes) == records - 1 and cut.cut_bytes > 20
    view = run_cli("view", "cut.hatchet_stream", "-m", "count", cwd=tmp_path)
    assert view.returncode == 0 and f"holds {records - 1} flushes" in view.stderr
    assert f"the record after it was cut mid-write ({cut.cut_bytes:,} bytes) and is left out" in view.stderr


@pytest.mark.broken_profile
def test_a_damaged_stream_is_one_line(tmp_path: Path) -> None:
    header = profile_stream._HEAD + b"XX"
    (tmp_path / "head.hatchet_stream").write_bytes(header)
    import msgpack

    good = msgpack.packb({"format": profile_stream.FORMAT, "version": 1, "metadata": {}})
    (tmp_path / "record.hatchet_stream").write_bytes(good + msgpack.packb({"phase": 0, "tree": 3}))
    (tmp_path / "version.hatchet_stream").write_bytes(
        msgpack.packb({"format": profile_stream.FORMAT, "version": 9, "metadata": {}})
    )
    for name, said in (
        ("head", "cut before its header ended"),
        ("record", "record 1 has no phase number or time"),
        ("version", "profile stream version 9; this reads 1"),
    ):
        with pytest.raises(FormatError, match=said):
            profile_stream.read(tmp_path / f"{name}.hatchet_stream")
        proc = run_cli("view", f"{name}.hatchet_stream", cwd=tmp_path)
        assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
            f"deuteron: error: {name}.hatchet_stream: " + proc.stderr.split(".hatchet_stream: ", 1)[1].strip()
        ]
        assert said in proc.stderr and "Traceback" not in proc.stderr


def test_a_clock_flushes_a_run_that_has_no_steps(tmp_path: Path) -> None:
    """--flush-every SECONDS flushes on a thread of its own, whatever the program does."""
    (tmp_path / "steps.py").write_text(STEPS.replace('deuteron.scope("step")', 'deuteron.scope("work")'))
    flush = ["--flush-every", "0.3s", "-n", "c"]
    command = [sys.executable, "-m", "deuteron", "run", *flush, "steps.py", "1000", "0.05"]
    proc = subprocess.Popen(command, cwd=tmp_path, env=fresh_process_env({"CUDA_VISIBLE_DEVICES": ""}),
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None
    proc.stdout.readline()  # the first step ran: the program is under way
    time.sleep(1.5)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    stream = profile_stream.read(tmp_path / "c.hatchet_stream")
    assert len(stream.flushes) >= 3  # 1.5 s at 0.3 s, on a busy machine
    gaps = sorted(b.end_time - a.end_time for a, b in zip(stream.flushes, stream.flushes[1:], strict=False))
    assert gaps[0] > 0.2 and gaps[len(gaps) // 2] < 1.0, gaps  # a loaded machine may delay one
    total = _child(_child(stream.profile().root, "work"), "add_one").metrics["count"]
    assert total >= 2


def test_an_ended_run_writes_the_whole_profile_and_removes_its_stream(tmp_path: Path) -> None:
    (tmp_path / "steps.py").write_text(STEPS)
    env = {"CUDA_VISIBLE_DEVICES": ""}
    plain = run_cli("run", "-n", "plain", "--trace", "steps.py", "5", "0", cwd=tmp_path, env=env)
    flushed = run_cli(
        "run", "--flush-every", "2steps", "--trace", "-n", "f", "steps.py", "5", "0", cwd=tmp_path, env=env
    )  # fmt: skip
    assert plain.returncode == flushed.returncode == 0, flushed.stderr
    assert "deuteron: wrote f.hatchet, f.chrome_trace" in flushed.stderr
    assert not (tmp_path / "f.hatchet_stream").exists()
    profile = hatchet.read(tmp_path / "f.hatchet")
    assert _counts(profile) == _counts(hatchet.read(tmp_path / "plain.hatchet"))
    assert profile.metadata["flushes"]["records"] == 3  # steps 1-2, 3-4, and 5 at the end
    assert profile.metadata["flushes"]["every"] == "2 steps"
    trace = json.loads((tmp_path / "f.chrome_trace").read_text())
    steps = [e for e in trace["traceEvents"] if e.get("name") == "step" and e.get("ph") == "X"]
    launches = [e for e in trace["traceEvents"] if e.get("name") == "add_one" and e.get("ph") == "X"]
    assert len(steps) == 5 and len(launches) >= 5
    lanes = [e for e in trace["traceEvents"] if e.get("ph") == "M" and e.get("name") == "thread_name"]
    assert len(lanes) == len({json.dumps(e, sort_keys=True) for e in lanes})  # each lane named once


def test_torch_optimizer_steps_flush_and_the_tree_is_unchanged(tmp_path: Path) -> None:
    """Under -c torch a step is torch's optimizer.step() when no step scope is opened; the calls
    of every module, op and backward node are those of the same run without flushing."""
    (tmp_path / "opt.py").write_text(OPTIMIZER)
    for name, extra in (("plain", []), ("flushed", ["--flush-every", "1step"])):
        proc = run_cli("run", "-c", "torch", "--trace", "-n", name, *extra, "opt.py", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    flushed = hatchet.read(tmp_path / "flushed.hatchet")
    assert flushed.metadata["flushes"]["records"] == 5  # four steps, then the end
    assert _counts(flushed) == _counts(hatchet.read(tmp_path / "plain.hatchet"))
    # torch's module and op spans: each in the trace once, though torch's buffer holds the run's
    spans = {}
    for name in ("plain", "flushed"):
        events = json.loads((tmp_path / f"{name}.chrome_trace").read_text())["traceEvents"]
        spans[name] = collections.Counter(e["name"] for e in events if e.get("ph") == "X")
    assert spans["flushed"] == spans["plain"] and spans["plain"]["aten::addmm"] == 4
