"""Per step and rank (deuteron.view.steps, step_window): kernels go to the step they were launched
in, steps are numbered alike on every rank by when they end, each step's compute, exposed and
hidden communication and idle time come from its kernels' spans, and the advice is a row per rank
for a few ranks, however many steps and ranks there are."""

from __future__ import annotations

import re
from pathlib import Path

from deuteron.formats import chrome_trace
from deuteron.model.trace import TraceEvent
from deuteron.view.step_window import (
    StepsBusy,
    StepTimes,
    rank_steps,
    steps_busy,
    steps_busy_beside,
    trace_beside,
)
from deuteron.view.steps import LISTED_RANKS, step_findings

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
        StepTimes(
            1, 5 * MS, comm_ns=5 * MS, hidden_ns=1 * MS, idle_ns=12 * MS, busy_ns=9 * MS, wall_ns=20 * MS
        ),
        StepTimes(2, 4 * MS, comm_ns=1 * MS, hidden_ns=0, idle_ns=2 * MS, busy_ns=5 * MS, wall_ns=20 * MS),
    ]
    assert steps[0][1].exposed_ns == 4 * MS
    # over the steps: the kernels launched in them, from 11 ms to 47 ms, 14 ms of it busy (the
    # set-up's kernel at 0 ms and the tail's at 60 ms left out)
    assert steps_busy(chrome_trace.read_columns(path)) == StepsBusy(2, busy_ns=14 * MS, window_ns=36 * MS)


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
    rows = {row["path"]: (row["steps"], row["compute_ms_median"]) for row in finding.evidence}
    assert rows == {"rank 1": (2, 6.0), "rank 0": (3, 4.0)}
    assert [row["path"] for row in finding.evidence] == ["rank 1", "rank 0"]  # most compute first


def test_a_row_per_rank_with_its_median_and_worst_step_however_many_steps(tmp_path: Path) -> None:
    """Two ranks of 19 steps were 38 rows: now two, each naming its worst step."""
    ends = [10.0 + 20 * k for k in range(20)]
    ends[7] += 5  # step 7 is 25 ms long, step 8 15 ms on rank 0
    sources = [_rank(tmp_path, 0, ends), _rank(tmp_path, 1, [10.0 + 20 * k for k in range(20)])]
    (finding,) = step_findings([str(s) for s in sources], ["0", "1"], ["j", "j"])
    assert finding.title.startswith("19 steps of 2 ranks")
    assert len(finding.evidence) == 2
    row = next(r for r in finding.evidence if r["path"] == "rank 0")
    assert row["steps"] == 19 and row["worst_step"] == 7 and row["worst_step_ms"] == 25.0
    assert row["step_ms_median"] == 20.0 and row["idle_ms_median"] == 0.0


def test_past_five_ranks_the_five_computing_most_are_listed_and_the_rest_counted(tmp_path: Path) -> None:
    sources = [_rank(tmp_path, r, [10, 30, 50], compute=9.0 if r == 3 else 4.0 + r / 10) for r in range(8)]
    (finding,) = step_findings([str(s) for s in sources], [str(r) for r in range(8)], ["j"] * 8)
    assert len(finding.evidence) == LISTED_RANKS == 5
    assert [row["path"] for row in finding.evidence] == ["rank 3", "rank 7", "rank 6", "rank 5", "rank 4"]
    assert finding.evidence[0]["compute_ms_median"] == 9.0
    assert "; 3 more not listed (median compute 4.000 to 4.200 ms)" in finding.title


def test_the_share_over_the_steps_is_read_beside_a_profile_of_the_same_run(tmp_path: Path) -> None:
    source = str(_rank(tmp_path, 0, [10, 30, 50]))  # a 4 ms kernel a step, 21 to 45 ms
    assert steps_busy_beside(source, {"job_id": "j", "rank": "0"}) == StepsBusy(2, 8 * MS, 24 * MS)
    assert steps_busy_beside(source, {"job_id": "another"}) is None  # a trace left by another run
    assert steps_busy_beside(str(tmp_path / "none.hatchet")) is None and steps_busy_beside(None) is None


def test_another_jobs_or_ranks_trace_is_not_read_and_said(tmp_path: Path) -> None:
    sources = [_rank(tmp_path, 0, [10, 30, 50]), _rank(tmp_path, 1, [10, 30, 50], job="earlier")]
    (finding,) = step_findings([str(s) for s in sources], ["0", "1"], ["j", "j"])
    assert finding.title.endswith("; not read (another job's or rank's trace): job.rank1.chrome_trace")
    assert [row["path"] for row in finding.evidence] == ["rank 0"]
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
    assert [row["path"] for row in finding.evidence] == ["rank 0"]
