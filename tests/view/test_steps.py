"""Per step and rank (deuteron.view.steps): kernels go to the step they were launched in, steps
are numbered alike on every rank by when they end, and each step's compute, exposed and hidden
communication and idle time come from its kernels' spans."""

from __future__ import annotations

import re
from pathlib import Path

from deuteron.formats import chrome_trace
from deuteron.model.trace import TraceEvent
from deuteron.view.steps import StepTimes, rank_steps, step_findings, trace_beside

MS = 1_000_000
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


def _kernel(name: str, start: float, end: float, launched: float, lane: int = 7) -> TraceEvent:
    launch = (1, int(launched * MS))
    return TraceEvent("kernel", name, int(start * MS), int(end * MS), lane, launched_from=launch)


def _step_end(at: float) -> TraceEvent:
    return TraceEvent("scope", "optimizer.step (AdamW)", int((at - 1) * MS), int(at * MS), 1)


def test_kernels_belong_to_the_step_they_were_launched_in(tmp_path: Path) -> None:
    events = [
        _kernel("gemm", 0, 1, launched=0),  # before the first step's end: set-up, left out
        _step_end(10),
        # step 1: launched after 10 ms and by 30 ms; the last runs after the step's CPU end
        _kernel("gemm", 11, 15, launched=10.5),
        _kernel(NCCL, 14, 19, launched=13, lane=8),  # 1 ms beside gemm (hidden), 4 ms alone (exposed)
        _kernel("gemm", 31, 32, launched=29.5),
        _step_end(30),
        # step 2
        _kernel("gemm", 40, 44, launched=35),
        _kernel(NCCL, 46, 47, launched=36, lane=8),  # exposed; 2 ms idle before it
        _step_end(50),
        _kernel("gemm", 60, 61, launched=51),  # after the last step's end: the tail, left out
    ]
    path = tmp_path / "job.rank0.chrome_trace"
    chrome_trace.write(events, path, lane_names={1: "main thread"})
    steps = rank_steps(chrome_trace.read_columns(path))
    assert [t for _, t in steps] == [
        StepTimes(step=1, compute_ns=5 * MS, comm_ns=5 * MS, hidden_ns=1 * MS, idle_ns=12 * MS),
        StepTimes(step=2, compute_ns=4 * MS, comm_ns=1 * MS, hidden_ns=0, idle_ns=2 * MS),
    ]
    assert steps[0][1].exposed_ns == 4 * MS


def _rank(folder: Path, rank: int, ends: list[float], job: str = "j", compute: float = 4.0) -> Path:
    """A rank whose trace holds step ends at ``ends`` (ms on the host's clock) and one kernel of
    ``compute`` ms launched in each step."""
    events = [_step_end(at) for at in ends]
    events += [_kernel("gemm", a + 1, a + 1 + compute, launched=a + 0.5) for a in ends[:-1]]
    path = folder / f"job.rank{rank}.chrome_trace"
    other = {"rank": str(rank), "job_id": job, "host": "h", "wall_minus_clock_ns": 0}
    chrome_trace.write(events, path, pid=rank, lane_names={1: "main thread"}, other=other)
    return folder / f"job.rank{rank}.hatchet"


def test_steps_are_numbered_alike_on_ranks_whose_traces_were_cut_apart(tmp_path: Path) -> None:
    # rank 1's trace began one step later: its first step is rank 0's second
    sources = [_rank(tmp_path, 0, [10, 30, 50, 70]), _rank(tmp_path, 1, [30, 50, 70], compute=6.0)]
    (finding,) = step_findings([str(s) for s in sources], ["0", "1"], ["j", "j"])
    assert finding.title.startswith("3 steps of 2 ranks, from their traces")
    assert finding.title.endswith("steps matched across the ranks by when they end")
    rows = {row["path"]: row["compute_ms"] for row in finding.evidence}
    assert rows == {
        "rank 0 step 1": 4.0, "rank 0 step 2": 4.0, "rank 0 step 3": 4.0,
        "rank 1 step 2": 6.0, "rank 1 step 3": 6.0,
    }  # fmt: skip


def test_past_four_ranks_a_row_per_step_with_the_median_and_the_rank_computing_most(tmp_path: Path) -> None:
    sources = [
        _rank(tmp_path, r, [10, 30, 50], compute=9.0 if r == 3 else 4.0 + r / 10) for r in range(6)
    ]
    (finding,) = step_findings([str(s) for s in sources], [str(r) for r in range(6)], ["j"] * 6)
    assert [row["path"] for row in finding.evidence] == ["step 1", "step 2"]
    row = finding.evidence[0]
    assert row["ranks"] == 6 and row["most_compute"] == "rank 3" and row["compute_ms_max"] == 9.0
    assert row["compute_ms_median"] == 4.3  # 4.0, 4.1, 4.2, 4.4, 4.5 and rank 3's 9.0


def test_another_jobs_or_ranks_trace_is_not_read_and_said(tmp_path: Path) -> None:
    sources = [_rank(tmp_path, 0, [10, 30, 50]), _rank(tmp_path, 1, [10, 30, 50], job="earlier")]
    (finding,) = step_findings([str(s) for s in sources], ["0", "1"], ["j", "j"])
    assert finding.title.endswith("; not read (another job's or rank's trace): job.rank1.chrome_trace")
    assert all(row["path"].startswith("rank 0 ") for row in finding.evidence)
    # a trace whose rank is not its profile's
    (finding,) = step_findings([str(sources[0])], ["3"], ["j"]) or [None]
    assert finding is None


def test_without_two_step_ends_or_beside_no_trace_there_are_no_steps(tmp_path: Path) -> None:
    path = tmp_path / "job.rank0.chrome_trace"
    chrome_trace.write([TraceEvent("scope", "step", 0, MS, 1), _kernel("gemm", 0, 1, 0)], path)
    assert rank_steps(chrome_trace.read_columns(path)) == []
    assert trace_beside(str(tmp_path / "job.rank0.hatchet")) == str(path)
    assert trace_beside(str(tmp_path / "job.rank1.hatchet")) is None
    assert trace_beside(str(tmp_path / "job.rank0.json")) is None
    assert step_findings([str(tmp_path / "job.rank0.hatchet")], ["0"]) == []


def test_a_damaged_trace_is_said_and_the_others_shown(tmp_path: Path) -> None:
    events = [TraceEvent("scope", "step", t * MS, (t + 1) * MS, 1) for t in (10, 20)]
    events.append(_kernel("gemm", 13, 14, 12.5))
    chrome_trace.write(events, tmp_path / "job.rank0.chrome_trace")
    (tmp_path / "job.rank1.chrome_trace").write_text("{damaged")
    sources = [str(tmp_path / f"job.rank{r}.hatchet") for r in (0, 1)]
    (finding,) = step_findings(sources, ["0", "1"])
    assert finding.kind == "steps" and finding.title.startswith("1 step of 1 rank, from their traces")
    assert re.search(r"steps numbered within each trace \(the traces say no clock\); not read \(damaged\): "
                     r"job\.rank1\.chrome_trace$", finding.title)  # fmt: skip
    assert [row["path"] for row in finding.evidence] == ["rank 0 step 1"]
