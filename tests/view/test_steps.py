"""Per step and rank (deuteron.view.steps): kernels go to the step they were launched in, and each
step's compute, exposed and hidden communication and idle time come from their spans."""

from __future__ import annotations

from pathlib import Path

from deuteron.formats import chrome_trace
from deuteron.model.trace import TraceEvent
from deuteron.view.steps import StepTimes, rank_steps, step_findings, trace_beside

MS = 1_000_000
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


def _kernel(name: str, start: float, end: float, launched: float, lane: int = 7) -> TraceEvent:
    return TraceEvent(
        "kernel", name, int(start * MS), int(end * MS), lane, launched_from=(1, int(launched * MS))
    )


def test_kernels_belong_to_the_step_they_were_launched_in(tmp_path: Path) -> None:
    events = [
        TraceEvent("scope", "optimizer.step (AdamW)", 8 * MS, 10 * MS, 1),
        TraceEvent("scope", "optimizer.step (AdamW)", 28 * MS, 30 * MS, 1),
        # step 1: launched before 10 ms; the second runs after the step's CPU end, still step 1
        _kernel("gemm", 1, 5, launched=0.5),
        _kernel(NCCL, 4, 9, launched=3, lane=8),  # 1 ms beside gemm (hidden), 4 ms alone (exposed)
        _kernel("gemm", 11, 12, launched=9.5),
        # step 2
        _kernel("gemm", 20, 24, launched=15),
        _kernel(NCCL, 26, 27, launched=16, lane=8),  # exposed; 2 ms idle before it
        # after the last step's end: the run's tail, left out
        _kernel("gemm", 40, 41, launched=31),
    ]
    path = tmp_path / "job.rank0.chrome_trace"
    chrome_trace.write(events, path, lane_names={1: "main thread"})
    steps = rank_steps(chrome_trace.read_columns(path))
    assert steps == [
        StepTimes(step=1, compute_ns=5 * MS, comm_ns=5 * MS, hidden_ns=1 * MS, idle_ns=2 * MS),
        StepTimes(step=2, compute_ns=4 * MS, comm_ns=1 * MS, hidden_ns=0, idle_ns=2 * MS),
    ]
    assert steps[0].exposed_ns == 4 * MS


def test_without_two_step_ends_or_beside_no_trace_there_are_no_steps(tmp_path: Path) -> None:
    path = tmp_path / "job.rank0.chrome_trace"
    chrome_trace.write([TraceEvent("scope", "step", 0, MS, 1), _kernel("gemm", 0, 1, 0)], path)
    assert rank_steps(chrome_trace.read_columns(path)) == []
    assert trace_beside(str(tmp_path / "job.rank0.hatchet")) == str(path)
    assert trace_beside(str(tmp_path / "job.rank1.hatchet")) is None
    assert trace_beside(str(tmp_path / "job.rank0.json")) is None
    assert step_findings([str(tmp_path / "job.rank0.hatchet")], ["0"]) == []


def test_a_damaged_trace_is_said_and_the_others_shown(tmp_path: Path) -> None:
    steps = [TraceEvent("scope", "step", t * MS, (t + 1) * MS, 1) for t in (10, 20)]
    chrome_trace.write([*steps, _kernel("gemm", 1, 2, 0.5)], tmp_path / "job.rank0.chrome_trace")
    (tmp_path / "job.rank1.chrome_trace").write_text("{damaged")
    sources = [str(tmp_path / f"job.rank{r}.hatchet") for r in (0, 1)]
    (finding,) = step_findings(sources, ["0", "1"])
    assert finding.kind == "steps" and finding.title.startswith("1 step of 1 rank, from their traces")
    assert finding.title.endswith("; not read (damaged): job.rank1.chrome_trace")
    assert [row["path"] for row in finding.evidence] == ["rank 0 step 1"]  # step 2 holds no kernel
