"""``deuteron diff --kernel`` (issue 42): one kernel in two profiles, and one kernel compiled from
two reproducers.

Real files throughout: two ``deuteron run --record-launches`` of tests/explain_corpus/matmul.py,
one with num_stages=3 and one with num_stages=1 (so the pipelined TTGIR, the shared memory and
the SASS really differ), their reproducers written by ``deuteron repro``; and a sampled profile,
the PC-sampling drain recorded on an H200 running examples/hot_line.py (replayed: sampling needs
a GPU), against the same profile without its warm-up place. Every bad input is one line, exit 2.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from deuteron.cli import main as cli_main
from deuteron.collect.backends.cupti import replay
from deuteron.collect.session import Session
from deuteron.formats import hatchet
from deuteron.model.names import parse_source_frame
from deuteron.model.tree import KERNEL, Profile
from tests.helpers.cli import fresh_process_env, run_cli
from tests.helpers.paths import FIXTURES_DIR, REPO

MATMUL = REPO / "tests" / "explain_corpus" / "matmul.py"


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = cli_main(list(args))
    except SystemExit as exc:  # argparse's own refusals
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """before.hatchet (num_stages=3) and after.hatchet (num_stages=1), each with its launches, and
    their reproducers before.py and after.py; the two runs at once."""
    folder = tmp_path_factory.mktemp("kernel_diff")
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "deuteron", "run", "--record-launches", "-n", name, str(MATMUL), stages],
            cwd=folder,
            env=fresh_process_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, stages in (("before", "3"), ("after", "1"))
    ]
    for proc in runs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    for name in ("before", "after"):
        code = cli_main(["repro", str(folder / f"{name}.hatchet"), "-o", str(folder / f"{name}.py")])
        assert code == 0
    return folder


@pytest.fixture(scope="module")
def sampled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The recorded H200 sampling run (rms_scale: 1 warm-up launch, 9 in the steps), and the same
    profile without the warm-up."""
    folder = tmp_path_factory.mktemp("sampled")
    session = Session(0, "fx", backend="interpreter", context="shadow")
    replay(FIXTURES_DIR / "cupti_sampling", session)
    whole = hatchet.write(session.profile, folder / "whole.hatchet")
    steps = hatchet.read(whole)
    warmup = [key for key in steps.root.children if key[0] == "warmup"]
    assert warmup, "the fixture has a warmup scope"
    del steps.root.children[warmup[0]]
    return whole, hatchet.write(steps, folder / "steps.hatchet")


def _line_samples(profile: Profile, kernel: str) -> dict[int, int]:
    out: dict[int, int] = {}
    for node in profile.root.walk():
        if node.type != KERNEL or node.name != kernel:
            continue
        for child in node.children.values():
            place = parse_source_frame(child.name)
            if place:
                values = [p.metrics.get("num_samples", 0) for p in child.walk()]
                n = sum(int(v) for v in values if isinstance(v, (int, float)))
                out[place[1]] = out.get(place[1], 0) + n
    return out


def test_one_kernels_time_calls_and_time_per_launch_side_by_side(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = str(recorded / "before.hatchet"), str(recorded / "after.hatchet")
    code, out, err = _cli(capsys, "diff", before, after, "--kernel", "matmul")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"matmul_kernel: {before} → {after}"
    assert [line.split()[:3] for line in lines if line.split()[:1] == ["calls"]] == [["calls", "1", "1"]]
    assert any(line.split()[:2] == ["per", "launch"] for line in lines)
    code, out, err = _cli(capsys, "diff", before, after, "-k", "matmul_kernel", "--json")
    assert code == 0, err
    doc = json.loads(out)
    for side, path in (("before", before), ("after", after)):
        [node] = [n for n in hatchet.read(path).root.walk() if n.name == "matmul_kernel"]
        assert doc[side]["time_ns"] == node.metrics["time (ns)"]
        assert doc[side]["calls"] == node.metrics["count"] == 1
        assert doc[side]["bytes"] == node.metrics["bytes"]  # the interpreter counts them
    assert doc["change"] == pytest.approx(doc["after"]["time_ns"] / doc["before"]["time_ns"] - 1)
    # without --kernel, diff is the tree it always was
    code, out, err = _cli(capsys, "diff", before, after, "-m", "time/ms")
    assert code == 0 and "time/ms (old)" in out and "└─ matmul_kernel" in out, err


def test_samples_per_source_line_side_by_side(
    sampled: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    whole, steps = sampled
    code, out, err = _cli(capsys, "diff", str(whole), str(steps), "--kernel", "rms_scale", "--lines", "0")
    assert code == 0, err
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    assert rows["calls"][1:4] == ["10", "9", "-1"]
    assert rows["places"][1:3] == ["2", "1"]
    before, after = (
        _line_samples(hatchet.read(whole), "rms_scale"),
        _line_samples(hatchet.read(steps), "rms_scale"),
    )
    assert before[30] > after[30] > 0
    for line, n in before.items():
        row = rows[f"hot_line.py:{line}"]
        assert row[1] == str(n) and row[3] == str(after[line])
    assert "mio_throttle" in rows["hot_line.py:30"]  # the sqrt chain's stall, on both sides
    assert "x = tl.sqrt(x * x + 1.0)" in out  # the line's source
    doc = json.loads(_cli(capsys, "diff", str(whole), str(steps), "-k", "rms_scale", "--json")[1])
    assert doc["before"]["samples"] >= sum(before.values()) > doc["after"]["samples"] >= sum(after.values())
    assert {(r["line"], r["before"], r["after"]) for r in doc["lines"]} == {
        (line, n, after[line]) for line, n in before.items()
    }


@pytest.mark.slow
def test_two_reproducers_registers_shared_memory_ir_and_outputs(recorded: Path) -> None:
    # In a process of its own, as a user runs it: explain runs each script as its __main__.
    proc = run_cli(
        "diff", "before.py", "after.py", "--kernel", "matmul_kernel", "--target", "cuda:90", cwd=recorded
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    out = proc.stdout
    assert "matmul_kernel: launch 1 of 1" in proc.stderr and "launch 1 of 1" not in out  # the scripts' own
    facts = {
        cells[0]: cells[1:]
        for cells in (re.split(r"\s{2,}", line.strip()) for line in out.splitlines()[2:13])
    }
    assert out.splitlines()[0] == "matmul_kernel on cuda:90: before.py → after.py"
    assert facts["num_stages"] == ["3", "1", "-2 (-67%)"]
    # three stages of a 64x32 and a 32x64 fp16 tile in shared memory before, fewer after
    shared_before, shared_after = int(facts["shared memory bytes"][0]), int(facts["shared memory bytes"][1])
    assert shared_before == 3 * (64 * 32 + 32 * 64) * 2 and shared_after < shared_before
    for what in ("registers/thread", "blocks/SM", "occupancy", "limited by", "SASS instructions"):
        assert what in facts, what
    text = (recorded / "before.py").read_text().splitlines()
    load_a = next(i for i, t in enumerate(text, 1) if "a = tl.load(" in t)
    assert "b = tl.load(" in text[load_a]
    # the pipelined loads' async copies are gone, each tagged with its load's source line
    gone = [
        line for line in out.splitlines() if line.startswith("-") and "async_copy_global_to_local" in line
    ]
    assert gone and all(line[1:6].strip() in (str(load_a), str(load_a + 1)) for line in gone), gone
    assert "ttir: the same" in out and "ttgir: " in out and "ptx: " in out
    assert f"{load_a:>7} │ ttir" in out  # its IR per stage, before → after
    assert "outputs agree: c_ptr" in out


def test_bad_input_is_one_line_and_exit_2(
    recorded: Path, sampled: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = str(recorded / "before.hatchet"), str(recorded / "after.hatchet")
    (tmp_path / "bad.hatchet").write_text("not json")
    (tmp_path / "plain.py").write_text("x = 1\n")
    plain = str(tmp_path / "plain.py")
    cases = {
        (
            "diff",
            before,
            after,
            "-k",
            "nope",
        ): "no kernel named like 'nope' in either profile; kernels: matmul_k",
        ("diff", str(sampled[0]), str(sampled[1]), "-k", "vectorized"): "'vectorized' matches 10 kernels: "
        "vectorized_elementwise_kernel<…> ×10; give more of the name",
        ("diff", before, str(tmp_path / "none.hatchet"), "-k", "m"): "none.hatchet: no such file",
        ("diff", str(tmp_path / "bad.hatchet"), after, "-k", "m"): "bad.hatchet: not valid JSON",
        ("diff", before, plain, "-k", "m"): "two profiles or two reproducers (.py files), not one of each",
        ("diff", before, after, "--target", "cuda:90"): "--target applies to two reproducers",
        ("diff", before, after, "-k", "m", "--lines", "-1"): "--lines must be 0 or more",
        ("diff", plain, plain, "--stage", "ttx"): "--stage ttx: choose among ttir, ttgir",
        ("diff", plain, plain, "--target", "cuda:90,cuda:80"): "diff compares one target at a time",
        ("diff", plain, plain, "--no-run"): "no Triton kernel was launched by",
    }
    for args, says in cases.items():
        code, _, err = _cli(capsys, *args)
        assert code == 2, (args, err)
        assert err.startswith("deuteron: error: ") and err.count("\n") == 1 and says in err, (args, err)
