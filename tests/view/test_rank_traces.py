"""Several ranks' traces on one clock (deuteron.view.rank_traces), and a real job's files: two ranks
of DDP (with a planted straggler) and of FSDP2 recorded on two H100s (tests/fixtures/ranks, see its
README), read as a user reads them: ``deuteron view --advise`` and ``deuteron serve``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from deuteron.formats import chrome_trace
from deuteron.model.errors import DeuteronError
from deuteron.model.trace import TraceEvent
from deuteron.render.web.data import WebData
from deuteron.view import rank_traces
from tests.helpers.cli import run_cli
from tests.helpers.rank_traces import unpacked

ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


def _rank_trace(
    folder: Path, rank: int, ends_ms: list[float], late_ms: float, other: dict[str, object] | None
) -> Path:
    """A rank's trace on the true clock (ms): an "init" scope at 50 - 2 * rank ms (so each rank's
    own zero differs), then before each collective a kernel that runs ``late_ms`` longer on this
    rank; the collective's kernel starts when that ends and ends at ``ends_ms`` on every rank."""
    events = [TraceEvent("scope", "init", int((50 - 2 * rank) * 1e6), int(60e6), 1)]
    for end in ends_ms:
        ready = end - 9 + late_ms
        events.append(TraceEvent("kernel", "gemm", int((end - 20) * 1e6), int(ready * 1e6), 7))
        events.append(TraceEvent("kernel", ALL_REDUCE, int(ready * 1e6), int(end * 1e6), 8))
    path = folder / f"job.rank{rank}.chrome_trace"
    path.write_text(chrome_trace.text(events, pid=10 + rank, other=other))
    return path


def test_ranks_of_one_host_share_its_clock_and_collectives_are_linked_to_the_last_arrival(
    tmp_path: Path,
) -> None:
    ends = [100.0, 200.0, 300.0]
    common = {"host": "h", "job_id": "j", "world_size": "2", "wall_minus_clock_ns": 0}
    paths = [
        _rank_trace(tmp_path, 0, ends, 0.0, {**common, "rank": "0"}),
        _rank_trace(tmp_path, 1, ends, 3.0, {**common, "rank": "1"}),
    ]
    traces = [chrome_trace.read_columns(p) for p in paths]
    job = rank_traces.join(traces, [str(p) for p in paths])
    assert job.clock.startswith("one host (h): the ranks share its monotonic clock; checked against 3")
    assert job.lane_ranks == ["0", "0", "0", "1", "1", "1"]
    # rank 1's own zero (its first event) is 2 ms before rank 0's: rank 0 is moved by 2 ms
    assert [r["shift_ns"] for r in job.ranks] == [2_000_000, 0]
    c = job.columns
    ends_of = (c.start + c.dur)[np.asarray([c.names[n] == ALL_REDUCE for n in c.name])]
    assert np.allclose(np.sort(ends_of), np.repeat((np.asarray(ends) - 48) * 1e6, 2))  # 48 ms: 0
    # rank 1 computes 3 ms longer: its collectives start last, rank 0's each point to them
    assert job.links == 3
    links = c.flows[-3:]
    lanes = {c.lanes[i][1]: i for i in range(len(c.lanes)) if c.lanes[i][0] == 10}  # rank 0's by tid
    assert set(links[:, 0].tolist()) == {lanes[8]} and set(links[:, 2].tolist()) == {len(lanes) + lanes[8]}
    assert np.allclose(links[:, 3] - links[:, 1], 3e6)


def test_ranks_of_two_hosts_are_aligned_on_their_collectives_ends(tmp_path: Path) -> None:
    # Two hosts whose wall clocks disagree by 2.5 ms: the collectives' ends put them right.
    ends = [100.0, 200.0, 300.0, 400.0]
    paths = [
        _rank_trace(tmp_path, 0, ends, 0.0, {"host": "a", "rank": "0", "wall_minus_clock_ns": 0}),
        _rank_trace(tmp_path, 1, ends, 1.0, {"host": "b", "rank": "1", "wall_minus_clock_ns": 2_500_000}),
    ]
    job = rank_traces.join([chrome_trace.read_columns(p) for p in paths], [str(p) for p in paths])
    assert job.clock.startswith("2 hosts: placed by their wall clocks; aligned on 4 collectives' ends")
    assert re.search(r"differ by 0\.0 µs", job.clock), job.clock
    c = job.columns
    comm = np.asarray([c.names[n] == ALL_REDUCE for n in c.name])
    ends_by_rank = [
        np.sort((c.start + c.dur)[comm & np.isin(c.lane, lanes)]) for lanes in ([0, 1, 2], [3, 4, 5])
    ]
    assert np.allclose(ends_by_rank[0], ends_by_rank[1])


def test_a_trace_cut_after_its_first_calls_is_still_matched_call_for_call(tmp_path: Path) -> None:
    # Irregular spacing, as a real job's calls are; rank 1's trace holds only the calls from the
    # third on (it was cut), and its host's clock is 4 ms off.
    ends = [100.0, 130.0, 190.0, 205.0, 260.0, 330.0, 345.0, 400.0]
    paths = [
        _rank_trace(tmp_path, 0, ends, 0.0, {"host": "a", "rank": "0", "wall_minus_clock_ns": 0}),
        _rank_trace(tmp_path, 1, ends[2:], 1.0, {"host": "b", "rank": "1", "wall_minus_clock_ns": 4_000_000}),
    ]
    job = rank_traces.join([chrome_trace.read_columns(p) for p in paths], [str(p) for p in paths])
    assert job.clock.startswith("2 hosts: placed by their wall clocks; aligned on 6 collectives' ends")
    assert re.search(r"differ by 0\.0 µs", job.clock), job.clock
    assert job.links == 6  # each of rank 1's calls linked to the same call of rank 0
    assert job.clock.endswith(
        "; rank 1's trace begins 2 collective calls after the others' "
        "(or its host's clock is a step or more off, and so is the rank here)"
    )


def test_on_one_busy_host_calls_at_even_gaps_are_matched_call_for_call(tmp_path: Path) -> None:
    """Four all-reduces 30 ms apart, one host: rank 1's thread saw each end up to 2.5 ms late or
    early (a loaded machine). Moving its calls by one lines them up with a smaller spread than the
    right match, but on one clock the right match is the one with no offset (a torchrun test
    failed on this)."""
    ends = [100.0, 130.0, 160.0, 190.0]
    seen = [102.0, 128.5, 162.5, 188.0]
    common = {"host": "h", "job_id": "j", "world_size": "2", "wall_minus_clock_ns": 0}
    paths = [
        _rank_trace(tmp_path, 0, ends, 0.0, {**common, "rank": "0"}),
        _rank_trace(tmp_path, 1, seen, 0.0, {**common, "rank": "1"}),
    ]
    job = rank_traces.join([chrome_trace.read_columns(p) for p in paths], [str(p) for p in paths])
    assert job.clock.startswith("one host (h): the ranks share its monotonic clock; checked against 4")
    assert "begins" not in job.clock and job.links == 4


def test_traces_without_a_clock_but_ranked_by_name_are_aligned_on_collectives(tmp_path: Path) -> None:
    ends = [50.0, 90.0]
    paths = [_rank_trace(tmp_path, r, ends, float(r), None) for r in (0, 1)]
    traces = [chrome_trace.read_columns(p) for p in paths]
    assert rank_traces.is_job(traces, [str(p) for p in paths])  # "job.rank0.chrome_trace"
    job = rank_traces.join(traces, [str(p) for p in paths])
    assert job.clock.startswith("the traces say no clock: each starts at its own zero; aligned on 2")


def test_traces_of_two_jobs_or_one_rank_twice_are_refused(tmp_path: Path) -> None:
    a = _rank_trace(tmp_path, 0, [10.0], 0, {"rank": "0", "job_id": "first"})
    b = _rank_trace(tmp_path, 1, [10.0], 0, {"rank": "1", "job_id": "second"})
    traces = [chrome_trace.read_columns(p) for p in (a, b)]
    with pytest.raises(DeuteronError, match=r"these traces are from 2 jobs: .*rank0.* \(job first\)"):
        rank_traces.join(traces, [str(a), str(b)])
    twice = [chrome_trace.read_columns(a), chrome_trace.read_columns(a)]
    with pytest.raises(DeuteronError, match="are both rank 0: give one trace per rank"):
        rank_traces.join(twice, [str(a), str(a) + ".copy"])
    single = [chrome_trace.read_columns(a)]
    assert not rank_traces.is_job(single, [str(a)])
    # deuteron serve shows such traces one at a time, and says why
    proc = run_cli("serve", "--html", "two.html", str(a), str(b), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    said = "deuteron serve: 2 traces: shown one at a time, not on one clock: these traces are from 2 jobs: "
    assert said in proc.stderr and "job.rank1.chrome_trace (job second)" in proc.stderr


def test_recorded_ddp_job_names_the_planted_straggler(tmp_path: Path) -> None:
    folder = unpacked("ddp", tmp_path)
    proc = run_cli("view", "deuteron.rank0.hatchet", "deuteron.rank1.hatchet", "--advise", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    lines = {line.split("]")[0] + "]": line for line in proc.stdout.splitlines() if line.startswith("[")}
    straggler = lines["[straggler]"]
    assert straggler.startswith("[straggler] rank 1 is the straggler: its compute ")
    assert "module (LlamaForCausalLM) > model (LlamaModel)" in straggler  # where its extra time is
    waits = lines["[waits]"]
    assert waits.startswith("[waits] rank 1 holds the others up: it reaches")
    assert "GPU reached the call" in waits
    assert "exposed_communication_ms=" in proc.stdout and "overlap=" in proc.stdout
    assert lines["[steps]"].startswith("[steps] 2 steps of 2 ranks, from their traces")
    # Per step, from the traces beside the profiles: rank 1's GPU computes 16 ms more a step (38.78
    # against 22.76 ms), its threads no more than rank 0's (autograd 5.58 against 5.68 ms, main
    # 6.81 against 7.19 ms), and rank 0 waits 28.46 ms a step: the GPU's is the larger difference
    assert (
        "per step (medians of 2 steps in their traces): GPU compute 38.78 ms against 22.76 ms on rank 0"
        in straggler
    )
    assert "autograd thread 5.58 ms against 5.68 ms (-0.10 ms)" in straggler
    assert "rank 0 waits 28.46 ms a step at the collectives: the GPU's difference is the larger" in straggler
    step = {
        m[1]: {k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)", m[2])}
        for m in re.finditer(r"^    (rank \d per step)  \((.*)\)$", proc.stdout, re.MULTILINE)
    }
    waiting, straggling = step["rank 0 per step"], step["rank 1 per step"]
    assert waiting["waits_ms"] > 10 > straggling["waits_ms"]
    assert straggling["gpu_compute_ms"] > 1.5 * waiting["gpu_compute_ms"]
    # The collectives' bandwidth from the transfer, not from rank 0's waits (3.99 GB/s before)
    assert "with durations" not in lines["[collectives]"]
    assert re.search(
        r"nccl:all_reduce 32\.0 MiB Float  \(calls=4, .*busbw_gbs=81\.89, link_peak=18%", proc.stdout
    )
    assert lines["[link]"].startswith(
        "[link] 3 collective sizes of 1.0 MiB or more (12 calls) move at under 25%"
    )


def test_recorded_fsdp2_job_lists_its_reduce_scatters_with_the_bus_factor(tmp_path: Path) -> None:
    folder = unpacked("fsdp2", tmp_path)
    proc = run_cli("view", "deuteron.rank0.hatchet", "deuteron.rank1.hatchet", "--advise", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    # No straggler was planted: the last to arrive varies, and no rank is named as one
    assert "[waits] no one rank holds the others up: the last to arrive varies" in proc.stdout
    assert "[straggler]" not in proc.stdout
    row = re.search(
        r"nccl:_reduce_scatter_base 64\.0 MiB Float .*algbw_gbs=([\d.]+), busbw_gbs=([\d.]+),", proc.stdout
    )
    assert row is not None, proc.stdout[-3000:]
    assert float(row[2]) == pytest.approx(float(row[1]) / 2, abs=0.01)  # (n - 1) / n over 2 ranks
    # an all-gather counted by its whole output (its input is one rank's half), with the same factor
    pattern = r"nccl:_all_gather_base 49\.0 MiB Float .*algbw_gbs=([\d.]+), busbw_gbs=([\d.]+),"
    row = re.search(pattern, proc.stdout)
    assert row is not None, proc.stdout[-3000:]
    assert float(row[2]) == pytest.approx(float(row[1]) / 2, abs=0.01)


@pytest.mark.parametrize("job", ["ddp", "fsdp2"])
def test_recorded_traces_show_as_one_timeline(tmp_path: Path, job: str) -> None:
    folder = unpacked(job, tmp_path)
    paths = [str(folder / f"deuteron.rank{r}.chrome_trace") for r in (0, 1)]
    info = json.loads((folder / "deuteron.rank0.chrome_trace").read_text())["otherData"]
    assert info["rank"] == "0" and info["clock"] == "perf_counter_ns" and info["zero_ns"] > 0
    data = WebData()
    said = dict(data.add_files(paths))
    assert len(data.traces) == 1
    ref = data.traces[0][0]
    assert ref["name"] == "2 ranks" and {lane["rank"] for lane in ref["lanes"]} == {"0", "1"}
    assert all(lane["name"].startswith(f"rank {lane['rank']} · ") for lane in ref["lanes"])
    line = said["2 ranks"]
    assert line.startswith("one timeline: one host (vm): the ranks share its monotonic clock")
    agree = float(re.search(r"ends differ by ([\d.]+) µs", line)[1])  # type: ignore[index]
    assert agree < 100, line  # NCCL's kernels of one call end within microseconds on one host
    assert ref["job"]["links"] > 0 and ref["flows"] >= ref["job"]["links"]
    proc = run_cli("serve", "--html", "job.html", *paths, cwd=folder)
    assert proc.returncode == 0, proc.stderr
    assert "deuteron serve: 2 ranks: one timeline: one host (vm)" in proc.stderr


@pytest.mark.parametrize("error_ms", [-20.0, -3.7, 0.9, 12.0, 40.0])
def test_recorded_ranks_told_apart_by_host_are_aligned_back_onto_one_clock(
    tmp_path: Path, error_ms: float
) -> None:
    """The recorded DDP traces, rank 1's said to come from another host whose wall clock is off by
    ``error_ms`` (up to about one step, 43 ms): aligned on the collectives' ends, rank 1 lands within
    microseconds of where the shared monotonic clock put it."""
    folder = unpacked("ddp", tmp_path)
    paths = [str(folder / f"deuteron.rank{r}.chrome_trace") for r in (0, 1)]
    same = rank_traces.join([chrome_trace.read_columns(p) for p in paths], paths)
    doc = json.loads(Path(paths[1]).read_text())
    doc["otherData"]["host"] = "elsewhere"
    doc["otherData"]["wall_minus_clock_ns"] += round(error_ms * 1e6)
    moved = str(folder / "moved.rank1.chrome_trace")
    Path(moved).write_text(json.dumps(doc))
    traces = [chrome_trace.read_columns(paths[0]), chrome_trace.read_columns(moved)]
    apart = rank_traces.join(traces, [paths[0], moved])
    assert apart.clock.startswith("2 hosts: placed by their wall clocks; aligned on ")
    offset = lambda job: job.ranks[1]["shift_ns"] - job.ranks[0]["shift_ns"]  # noqa: E731
    assert abs(offset(apart) - offset(same)) < 50_000  # ns: the error is gone to within 50 µs


def test_traces_that_say_only_a_base_time_are_placed_by_it(tmp_path: Path) -> None:
    """Kineto's and Proton's traces say no ``zero_ns``, only ``baseTimeNanoseconds`` (ts 0 on the
    wall clock): two ranks whose first events are 7 ms apart on it land 7 ms apart, before the
    collectives refine it."""
    paths = []
    for rank, base_ms in ((0, 1000.0), (1, 1007.0)):
        doc = {
            "baseTimeNanoseconds": int(base_ms * 1e6),
            "traceEvents": [{"ph": "X", "name": "init", "ts": 0, "dur": 10, "pid": rank, "tid": 1}],
        }
        path = tmp_path / f"kineto.rank{rank}.json"
        path.write_text(json.dumps(doc))
        paths.append(str(path))
    job = rank_traces.join([chrome_trace.read_columns(p) for p in paths], paths)
    assert job.clock.startswith("placed by their base times (baseTimeNanoseconds)")
    assert [r["shift_ns"] for r in job.ranks] == [0, 7_000_000]
