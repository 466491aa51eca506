"""``deuteron view FILE... --check`` (issue 39): one line per file that keeps the rules, the
violations of one that does not (exit 1), a one-line error for what is no profile or trace; and
the regression it was made for, the CPU ``-c torch`` tree of before c3fc07b."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from deuteron.cli import main
from deuteron.formats import chrome_trace, hatchet
from deuteron.model.invariants import check_profile
from deuteron.model.trace import TraceEvent
from deuteron.model.tree import KERNEL, Profile
from tests.helpers.cli import run_cli
from tests.helpers.paths import FIXTURES_DIR, PROTON_FIXTURES
from tests.helpers.rank_traces import unpacked

BROKEN = FIXTURES_DIR / "broken"


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["view", *args, "--check"])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def _kernels(tmp_path: Path) -> Path:
    p = Profile()
    step = p.root.child("step")
    p.add_metrics(step.child("add_kernel", KERNEL), {"time (ns)": 1_000, "count": 2, "bytes": 4096})
    p.add_metrics(step.child("matmul_kernel", KERNEL), {"time (ns)": 5_000, "count": 1, "flops": 2**20})
    return hatchet.write(p, tmp_path / "deuteron.hatchet")


def test_a_profile_that_keeps_the_rules_gets_one_ok_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _kernels(tmp_path)
    code, lines, err = _check(capsys, "deuteron.hatchet")
    assert (code, err) == (0, "")
    assert lines == [
        "ok  deuteron.hatchet: 4 frames, 4 metrics; rules: numbers, spans n/a (no span metric), "
        "root n/a (no span metric), samples n/a (not a sampled profile)"
    ]


def test_the_broken_cpu_tree_of_before_the_rule_is_flagged(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = _check(capsys, str(BROKEN / "cpu_torch_before_rule.hatchet"))
    assert code == 1
    assert lines[0].startswith(f"FAIL {BROKEN / 'cpu_torch_before_rule.hatchet'}: 91 frames, 3 metrics; ")
    assert "7 violations of spans" in lines[0]
    assert (
        "  spans: ROOT > Sequential > 2 (Linear): cpu_time (ns) 2,295,115 is below its children's "
        "5,062,286 (backward 3,369,912, aten::linear 1,692,374)"
    ) in lines
    assert len(lines) == 8


def test_more_than_twenty_violations_are_counted_and_ranks_are_checked_as_one_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = unpacked("fsdp2", tmp_path)  # recorded before the rule: every module breaks it
    rank0, rank1 = (str(folder / f"deuteron.rank{r}.hatchet") for r in (0, 1))
    code, lines, _ = _check(capsys, rank0, rank1)
    assert code == 1
    assert [line for line in lines if not line.startswith("  spans: ")] == [
        f"FAIL {rank0}: 1,750 frames, 6 metrics; 32 violations of spans; rules: numbers, spans, "
        "root n/a (ROOT has no span value of its own), samples n/a (not a sampled profile)",
        "  and 12 more",
        f"FAIL {rank1}: 1,750 frames, 6 metrics; 32 violations of spans; rules: numbers, spans, "
        "root n/a (ROOT has no span value of its own), samples n/a (not a sampled profile)",
        "  and 12 more",
        "ok  2 profiles as one job's files; rules: ranks",
    ]


def test_rank_files_of_two_jobs_break_the_ranks_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for rank, job in ((0, "torchrun:a"), (1, "torchrun:b")):
        p = Profile(metadata={"rank": str(rank), "world_size": "2", "job_id": job})
        p.add_metrics(p.root.child("k", KERNEL), {"time (ns)": 10})
        hatchet.write(p, tmp_path / f"d.rank{rank}.hatchet")
    code, lines, _ = _check(capsys, str(tmp_path / "d.rank0.hatchet"), str(tmp_path / "d.rank1.hatchet"))
    assert code == 1
    assert lines[-2:] == [
        "FAIL 2 profiles as one job's files; 1 violation of ranks; rules: ranks",
        f"  ranks: the files: job_id differs: {tmp_path / 'd.rank0.hatchet'} says torchrun:a; "
        f"{tmp_path / 'd.rank1.hatchet'} says torchrun:b",
    ]


def test_a_trace_named_anything_is_checked_as_a_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    events = [
        TraceEvent("scope", "step", 0, 10_000, lane=1),
        TraceEvent("kernel", "k", 4_000, 6_000, lane=9, launched_from=(1, 2_000)),
    ]
    chrome_trace.write(events, tmp_path / "trace.json")
    code, lines, _ = _check(capsys, "trace.json")
    assert (code, lines) == (
        0,
        ["ok  trace.json: 3 events, 2 lanes, 1 flows; rules: durations, nesting (tolerance 1 µs), flows"],
    )


def test_protons_files_are_reported_and_never_rewritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = ["proton_shadow.hatchet", "proton_trace.chrome_trace"]
    for name in names:
        shutil.copy2(PROTON_FIXTURES / name, tmp_path / name)
    before = {name: ((tmp_path / name).read_bytes(), (tmp_path / name).stat().st_mtime_ns) for name in names}
    code, lines, _ = _check(capsys, *(str(tmp_path / name) for name in names))
    assert code == 0
    assert [line.split(":")[0] for line in lines] == [f"ok  {tmp_path / name}" for name in names]
    assert {
        name: ((tmp_path / name).read_bytes(), (tmp_path / name).stat().st_mtime_ns) for name in names
    } == before


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "no such file"),
        ("print('a script')\n", "not valid JSON"),
        (json.dumps({"format": "deuteron-check", "findings": []}), "not a hatchet profile"),
    ],
)
def test_what_is_no_profile_or_trace_is_a_one_line_error(
    content: str | None, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "input.hatchet"
    if content is not None:
        path.write_text(content)
    code, lines, err = _check(capsys, str(_kernels(tmp_path)), str(path))
    assert (code, lines) == (2, [])  # every file is read before any is reported
    assert len(err.strip().splitlines()) == 1 and err.startswith("deuteron: error: ") and needle in err
    assert "Traceback" not in err


def test_check_with_a_diff_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(_kernels(tmp_path))
    code, lines, err = _check(capsys, path, "--diff", path)
    assert (code, lines) == (2, [])
    assert err == "deuteron: error: --check reads each file as it is: give no --diff\n"


def test_the_same_script_profiled_now_keeps_every_rule(tmp_path: Path) -> None:
    """tests/fixtures/broken/mlp.py under today's ``-c torch``: every module covers the backward
    filed under it (c3fc07b), and every backward node the work autograd's engine runs for it after
    its own span (the bias gradient's ``aten::sum`` and ``aten::view``, filed under the node), so
    the breaks of the fixture above are gone. 4.8 s on the idle two-core machine: not slow."""
    shutil.copy(BROKEN / "mlp.py", tmp_path / "mlp.py")
    proc = run_cli("run", "-c", "torch", "mlp.py", cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    violations = check_profile(hatchet.read(tmp_path / "deuteron.hatchet"))
    assert [str(v) for v in violations] == []
