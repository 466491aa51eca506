"""Collective calls across ranks from each rank's Flight Recorder record: waits by arrival, the
transfer once the last rank is in, and bandwidth from the transfer against the link's peak. Real
gloo calls under torchrun are checked in tests/cli/test_torchrun.py, the recorded DDP and FSDP2
jobs below and in tests/view/test_rank_traces.py; the rest are rules on made records."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from deuteron.collect import collectives
from deuteron.model.devices import NAMED_DEVICES
from deuteron.model.tree import Profile
from deuteron.view.advise import Advice
from deuteron.view.collectives import bus_factor, collective_findings, collective_report
from tests.helpers.cli import free_port
from tests.helpers.paths import REPO
from tests.helpers.rank_traces import recorded_profiles

MIB = 1 << 20


def _rank(
    rank: int,
    arrivals_ms: list[float],
    host: str = "h",
    durations: Sequence[float | None] | None = None,
    world: int = 8,
    size: int = 256 << 20,
    device: str | None = None,
) -> Profile:
    p = Profile()
    p.metadata.update(rank=str(rank), world_size=str(world), host=host)
    if device is not None:
        p.devices = {"CUDA": {"0": NAMED_DEVICES[device].as_table_row()}}
    n = len(arrivals_ms)
    p.metadata["collectives"] = {
        "group": ["0"] * n,
        "seq": list(range(1, n + 1)),
        "op": ["nccl:all_reduce"] * n,
        "in_bytes": [size] * n,
        "out_bytes": [size] * n,
        "dtype": ["BFloat16"] * n,
        "created_ns": [int((1000 + ms) * 1e6) for ms in arrivals_ms],  # host clock times
        "duration_ms": list(durations or [None] * n),
        "p2p": [False] * n,
    }
    return p


def _cols(p: Profile) -> dict[str, list[Any]]:
    cols = p.metadata["collectives"]
    assert isinstance(cols, dict)
    return cols


def _kinds(profiles: list[Profile]) -> dict[str, Advice]:
    return {a.kind: a for a in collective_findings(profiles)}


def test_the_rank_arriving_last_is_named_with_the_waits_it_causes() -> None:
    ranks = [_rank(0, [0, 100, 200]), _rank(1, [10, 150, 205]), _rank(2, [1, 101, 240])]
    found = {a.kind: a for a in collective_findings(ranks)}
    assert list(found) == ["waits", "calls", "collectives"]
    waits = found["waits"]
    # rank 1 is last at calls 1 and 2 (the others wait 10 + 9, then 50 + 49); rank 2 at call 3 (40 + 35)
    head = "rank 1 holds the others up: it reaches 2 of 3 calls last, a median 30.00 ms after the first rank"
    assert waits.title.startswith(head)
    assert "the others wait 118.00 ms in all for it (61% of all the waiting;" in waits.title
    assert "the longest wait: nccl:all_reduce #2 of group 0, 50.00 ms" in waits.title
    assert "CPU made the call" in waits.title and "TORCH_NCCL_ENABLE_TIMING=1" in waits.title
    rows = {row["path"]: (row["others_waited_ms"], row["last_at"]) for row in waits.evidence}
    assert rows == {"rank 1": (118.0, 2), "rank 2": (75.0, 1), "rank 0": (0.0, 0)}
    costs = found["collectives"]
    assert costs.evidence[0]["path"] == "nccl:all_reduce 256.0 MiB BFloat16"
    # no durations: waits from the CPUs' call times, and no transfer (so no bandwidth)
    assert "no durations, so the transfer is not known" in costs.title
    assert "busbw_gbs" not in costs.evidence[0] and costs.evidence[0]["wait_ms_worst"] == 50.0
    # the calls waited at longest, each over the ranks other than the last: call 2 (50 and 49 ms)
    top = found["calls"].evidence[0]
    assert top["path"] == "nccl:all_reduce #2 of group 0 (256.0 MiB BFloat16)"
    assert (top["wait_ms_median"], top["wait_ms_worst"], top["waited_longest"], top["last"]) == (
        49.5, 50.0, "rank 0", "rank 1"
    )  # fmt: skip


def test_no_rank_is_named_when_one_long_wait_is_all_there_is() -> None:
    # rank 0 is last at three calls (1 ms each); rank 1 at one call that costs 80 ms: a set-up
    # call, not a straggler. Nobody is named; the waits and the longest are said.
    ranks = [_rank(0, [1, 1, 1, 0]), _rank(1, [0, 0, 0, 80])]
    report = collective_report(ranks)
    assert report.advice[0].title.startswith(
        "no one rank holds the others up: the last to arrive varies (rank 0 at 3, rank 1 at 1 of 4 calls); "
        "the ranks wait 83.00 ms in all, 96% of it for rank 1 (the longest wait: nccl:all_reduce #4"
    )
    assert report.holds_up is None


def test_a_rank_last_at_most_calls_and_most_of_the_waiting_is_named() -> None:
    ranks = [_rank(0, [0, 0, 0, 5]), _rank(1, [20, 25, 30, 0])]
    report = collective_report(ranks)
    assert report.advice[0].title.startswith("rank 1 holds the others up: it reaches 3 of 4 calls last")
    assert "(94% of all the waiting;" in report.advice[0].title
    assert report.holds_up == 1 and report.others_waited_ns == 75e6


def test_arrivals_on_different_hosts_are_not_compared() -> None:
    ranks = [_rank(0, [0, 100], host="a"), _rank(1, [50, 150], host="b")]
    (costs,) = collective_findings(ranks)  # the hosts' clocks are not one: no waits
    assert costs.kind == "collectives" and "neither the transfer nor the waits are known" in costs.title


def test_timed_calls_name_the_last_rank_by_duration_whatever_the_clocks() -> None:
    # NCCL's timing: a call ends together on every rank, so the shortest duration came last.
    # The CPU call times say the opposite (rank 1 first), as a CPU running ahead of its GPU would.
    ranks = [
        _rank(0, [10, 110], host="a", durations=[40.0, 60.0]),
        _rank(1, [0, 100], host="b", durations=[5.0, 5.0]),
    ]
    waits = collective_findings(ranks)[0]
    assert waits.title.startswith("rank 1 holds the others up: it reaches 2 of 2 calls last")
    assert "the others wait 90.00 ms in all for it" in waits.title and "GPU reached the call" in waits.title


def test_the_transfer_is_told_from_the_waits_and_bandwidth_comes_from_it() -> None:
    # 4 ranks on one host of H100 SXMs, three 64 MiB all-reduces. Each rank's NCCL duration runs
    # from its arrival to the common end; rank 3 comes last every time with 0.5, 0.6, 0.4 ms: the
    # transfers. Rank 0 waits 10, 20, 30 ms on top; ranks 1 and 2 2 ms.
    last = [0.5, 0.6, 0.4]
    ranks = [
        _rank(r, [0, 50, 100], durations=[t + w for t in last], world=4, size=64 * MIB, device="h100")
        for r, w in ((0, 10.0), (1, 2.0), (2, 2.0))
    ]
    _cols(ranks[0])["duration_ms"] = [10.5, 20.6, 30.4]
    ranks.append(_rank(3, [0, 50, 100], durations=last, world=4, size=64 * MIB, device="h100"))
    found = {a.kind: a for a in collective_findings(ranks)}
    row = found["collectives"].evidence[0]
    # median transfer 0.5 ms: algbw = 64 MiB / 0.5 ms = 67,108,864 B / 5e-4 s = 134.22 GB/s;
    # busbw = algbw x 2(n-1)/n = 134.22 x 1.5 = 201.33 GB/s, 44% of NVLink 4's 450 GB/s
    assert row["transfer_ms"] == 0.5 and row["algbw_gbs"] == 134.22 and row["busbw_gbs"] == 201.33
    assert row["link_peak"] == "44%"
    # waits over the ranks other than the last, per call: medians 2, 2, 2 ms; the worst rank 0's 30 ms
    assert (row["wait_ms_median"], row["wait_ms_worst"], row["waited_longest"]) == (2.0, 30.0, "rank 0")
    title = found["collectives"].title
    assert "the transfer runs from the last rank's arrival to the end" in title
    assert "NVLink 4's 450 GB/s per direction (assumed: one host of H100/H200 SXMs)" in title
    assert "link" not in found  # 44% of the peak is not flagged


def test_a_slow_transfer_is_flagged_against_the_link_and_a_slow_arrival_is_not() -> None:
    # 2 ranks of H100 SXMs: 32 MiB moved in 1 ms (33.55 GB/s: 7% of 450) is flagged; the same
    # calls on a straggler's job with 40 ms waits are not slower transfers, and 4 KiB never is.
    slow = [_rank(r, [0, 5], durations=[1.0, 1.0], world=2, size=32 * MIB, device="h100") for r in (0, 1)]
    (link,) = [a for a in collective_findings(slow) if a.kind == "link"]
    assert link.title.startswith(
        "1 collective sizes of 1.0 MiB or more (2 calls) move at under 25% of the link's peak with the "
        "waits taken out: NVLink 4 assumed (one host of H100/H200 SXMs), 450 GB/s per direction"
    )
    assert link.evidence == [
        {"path": "nccl:all_reduce 32.0 MiB BFloat16", "calls": 2, "transfer_ms": 1.0,
         "busbw_gbs": 33.55, "link_peak": "7%"}
    ]  # fmt: skip
    held = [_rank(0, [0, 5], durations=[40.1, 40.1], world=2, size=32 * MIB, device="h100")]
    held.append(_rank(1, [0, 5], durations=[0.1, 0.1], world=2, size=32 * MIB, device="h100"))
    assert "link" not in {a.kind for a in collective_findings(held)}  # 335.5 GB/s, 74%
    tiny = [_rank(r, [0, 5], durations=[1.0, 1.0], world=2, size=4096, device="h100") for r in (0, 1)]
    found = {a.kind: a for a in collective_findings(tiny)}
    assert "link" not in found and "link_peak" not in found["collectives"].evidence[0]


def test_ranks_on_two_hosts_are_held_to_the_network() -> None:
    ranks = [
        _rank(0, [0], host="a", durations=[3.0], world=2, size=64 * MIB, device="h100"),
        _rank(1, [0], host="b", durations=[2.0], world=2, size=64 * MIB, device="h100"),
    ]
    found = {a.kind: a for a in collective_findings(ranks)}
    # 64 MiB in 2 ms: 33.55 GB/s = busbw over 2 ranks, 67% of InfiniBand NDR's 50 GB/s
    assert found["collectives"].evidence[0]["link_peak"] == "67%"
    said = "InfiniBand NDR's 50 GB/s per direction (assumed: 2 hosts: their network)"
    assert said in found["collectives"].title


def test_one_ranks_file_says_that_its_durations_hold_its_waits() -> None:
    (costs,) = collective_findings([_rank(0, [0, 1, 2], durations=[2.0, 4.0, 3.0], device="h100")])
    row = costs.evidence[0]
    # NCCL's median duration 3 ms holds the transfer and this rank's wait: busbw at most
    # 256 MiB / 3 ms x 2(8-1)/8 = 89.48 GB/s x 1.75 = 156.59 GB/s; no share of the link's peak
    assert row["nccl_ms_with_wait"] == 3.0 and row["busbw_gbs_with_wait"] == 156.59
    assert "link_peak" not in row and "transfer_ms" not in row
    assert "only one rank's record, so the transfer cannot be told from the wait" in costs.title
    (untimed,) = collective_findings([_rank(0, [0, 1])])
    assert "no durations (NCCL records them with TORCH_NCCL_ENABLE_TIMING=1)" in untimed.title


def test_only_some_ranks_given_makes_the_transfer_an_upper_bound() -> None:
    ranks = [_rank(r, [0], durations=[5.0 - r], size=64 * MIB) for r in (0, 1)]  # 2 of 8 ranks
    costs = _kinds(ranks)["collectives"]
    assert "from 2 of the job's 8 ranks: a rank not given may have arrived later" in costs.title


def test_bad_records_are_said_in_a_line() -> None:
    good = [_rank(r, [0, 1, 2], durations=[1.0, 1.0, 1.0], world=3) for r in (0, 1)]
    empty = Profile()
    empty.metadata.update(rank="2", world_size="3")
    costs = _kinds([*good, empty])["collectives"]
    assert "rank 2's file has no record of collectives" in costs.title
    # another run's record: its sequence numbers hold other operations and sizes
    other = _rank(1, [0, 1, 2], durations=[1.0, 1.0, 1.0], world=3, size=4 * MIB)
    _cols(other)["op"][2] = "nccl:broadcast"
    costs = _kinds([good[0], other])["collectives"]
    said = "3 calls differ between the ranks' records and are left out: #1 of group 0 (rank 0: "
    assert said in costs.title
    # records that share no sequence number
    apart = _rank(1, [0, 1, 2], durations=[1.0, 1.0, 1.0], world=2)
    _cols(apart)["seq"] = [10, 11, 12]
    costs = _kinds([_rank(0, [0, 1, 2], durations=[1.0, 1.0, 1.0], world=2), apart])["collectives"]
    assert "no call is in two ranks' records" in costs.title
    # damaged columns: said, not raised
    broken = _rank(1, [0, 1], world=2)
    _cols(broken)["seq"] = [1]
    odd = _rank(2, [0, 1], world=2)
    _cols(odd)["seq"] = ["x", 2]
    costs = _kinds([_rank(0, [0, 1], world=2), broken, odd])["collectives"]
    assert "rank 1's record of collectives is damaged (its columns differ in length)" in costs.title
    assert "1 damaged rows of the records not read" in costs.title


def test_a_thousand_ranks_give_a_few_lines() -> None:
    ranks = [_rank(r, [0, 10], durations=[1.0 + (r % 7), 2.0 + (r % 5)], world=1000) for r in range(1000)]
    found = collective_findings(ranks)
    assert sum(1 + len(a.evidence) for a in found) < 40


def test_the_recorded_ddp_jobs_all_reduces_move_far_faster_than_nccls_durations_say() -> None:
    """The DDP fixture (two H100s, rank 1 given twice the tokens): rank 0's NCCL durations hold its
    wait for rank 1, so they gave a 32 MiB all-reduce 3.99 GB/s and a 27 MiB one 3.45 GB/s."""
    profiles = recorded_profiles("ddp")
    found = {a.kind: a for a in collective_findings(profiles)}
    rows = {row["path"]: row for row in found["collectives"].evidence}
    # 32 MiB (33,554,432 B) at calls #10, #17, #24, #31: rank 1 arrives last at each, its NCCL
    # durations 0.415136, 0.404352, 0.424704, 0.397312 ms are the transfers (rank 0's are 8.4-8.5
    # ms: its waits). Median (0.404352 + 0.415136) / 2 = 0.409744 ms; algbw = 33,554,432 B /
    # 0.409744e-3 s = 81.89 GB/s; over 2 ranks busbw = algbw x 2(2-1)/2 = 81.89 GB/s, 18% of 450.
    row = rows["nccl:all_reduce 32.0 MiB Float"]
    assert row["transfer_ms"] == 0.41 and row["algbw_gbs"] == 81.89 and row["busbw_gbs"] == 81.89
    assert row["link_peak"] == "18%" and row["wait_ms_worst"] == 8.08 and row["waited_longest"] == "rank 0"
    # 27 MiB (28,319,744 B) at #12, #19, #26, #33: rank 1's 0.368224, 0.43552, 0.436384, 0.388512
    # ms; median (0.388512 + 0.43552) / 2 = 0.412016 ms; 28,319,744 / 0.412016e-3 = 68.73 GB/s
    assert rows["nccl:all_reduce 27.0 MiB Float"]["busbw_gbs"] == 68.73
    # the 162 MiB all-reduce at set-up: rank 0 waited 69.5 ms of its 70.3; the transfer 0.816 ms
    # (rank 1's duration): 169,889,792 B / 0.815808e-3 s = 208.25 GB/s
    assert rows["nccl:all_reduce 162.0 MiB Float"]["busbw_gbs"] == 208.25
    assert found["calls"].evidence[0]["path"] == "nccl:all_reduce #5 of group 0 (162.0 MiB Float)"
    assert {row["path"] for row in found["link"].evidence} == {
        "nccl:all_reduce 33.0 MiB Float", "nccl:all_reduce 32.0 MiB Float", "nccl:all_reduce 27.0 MiB Float"
    }  # fmt: skip
    # rank 1's file alone cannot tell its transfers from its waits, and says so
    (alone,) = collective_findings(profiles[:1])
    assert "only one rank's record, so the transfer cannot be told from the wait" in alone.title
    alone_rows = {row["path"]: row for row in alone.evidence}
    assert alone_rows["nccl:all_reduce 32.0 MiB Float"]["busbw_gbs_with_wait"] == 3.99  # as before


@pytest.mark.parametrize(
    ("op", "factor"),
    [("nccl:all_reduce", 1.75), ("nccl:_allgather_base", 0.875), ("nccl:reduce_scatter", 0.875),
     ("nccl:broadcast", 1.0), ("gloo:all_gather0", 0.875), ("nccl:_all_gather_base", 0.875),
     ("nccl:_reduce_scatter_base", 0.875), ("nccl:all_gather_into_tensor_coalesced", 0.875),
     ("nccl:reduce_scatter_tensor_coalesced", 0.875), ("nccl:all_to_all_base", 0.875)],
)  # fmt: skip
def test_bus_factors_follow_nccl_tests(op: str, factor: float) -> None:
    assert bus_factor(op, 8) == factor


def test_no_record_no_finding() -> None:
    assert collective_findings([Profile(), Profile()]) == []


def test_the_recorder_is_turned_on_only_in_a_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("RANK", "LOCAL_RANK", "SLURM_PROCID", *collectives.BUFFER_VARIABLES):
        monkeypatch.delenv(variable, raising=False)
    collectives.prepare()
    assert "TORCH_FR_BUFFER_SIZE" not in os.environ
    monkeypatch.setenv("RANK", "1")
    collectives.prepare()  # torch >= 2.7 here: only the new name, as the old one makes torch warn
    assert os.environ["TORCH_FR_BUFFER_SIZE"] == collectives.BUFFER_SIZE
    assert "TORCH_NCCL_TRACE_BUFFER_SIZE" not in os.environ
    monkeypatch.delenv("TORCH_FR_BUFFER_SIZE")
    monkeypatch.setenv("TORCH_NCCL_TRACE_BUFFER_SIZE", "64")  # the program's own choice stays
    collectives.prepare()
    assert "TORCH_FR_BUFFER_SIZE" not in os.environ
    assert os.environ["TORCH_NCCL_TRACE_BUFFER_SIZE"] == "64"
    assert collectives._bytes([[2, 3], [4]], ["BFloat16", "Float"]) == 2 * 3 * 2 + 4 * 4


@pytest.mark.slow
def test_the_busbw_benchmark_prints_its_table_on_the_cpu(tmp_path: Path) -> None:
    """benchmarks/nccl_busbw.py, run as on the GPU machine but over gloo: one row per size."""
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port",
         str(free_port()), str(REPO / "benchmarks" / "nccl_busbw.py"), "--backend", "gloo",
         "--sizes", "1M,64K", "--iters", "3", "--warmup", "1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "busbw = algbw x 2(n-1)/n = algbw x 1" in proc.stdout
    rows = [line.split() for line in proc.stdout.splitlines() if "KiB" in line or "MiB" in line]
    assert [row[:3] for row in rows] == [["1.0", "MiB", "1,048,576"], ["64.0", "KiB", "65,536"]]
    for row in rows:  # busbw = algbw over 2 ranks, algbw = bytes / time
        assert row[-1] == row[-2] and float(row[-2]) > 0
        algbw = int(row[2].replace(",", "")) / float(row[3]) / 1e6  # bytes / ms, in GB/s
        assert float(row[-2]) == pytest.approx(algbw, rel=0.02, abs=0.01)  # as printed, rounded


def test_a_subgroups_bus_factor_counts_its_own_ranks() -> None:
    assert collectives.group_sizes(
        {"0": {"ranks": "[0, 1]"}, "": {"ranks": "[]"}, "1": {"ranks": [0, 2, 4]}}
    ) == {
        "0": 2,
        "1": 3,
    }
    assert collectives.group_sizes(None) == {} and collectives.group_sizes({"x": "junk"}) == {}
    # 2 of a job's 8 ranks, in a group of 2 (their recorder says so): all_reduce's factor 2(2-1)/2 = 1
    ranks = [_rank(r, [0], durations=[2.0 - r], size=64 * MIB) for r in (0, 1)]
    for p in ranks:
        p.metadata["collective_groups"] = {"0": 2}
    row = _kinds(ranks)["collectives"].evidence[0]
    assert row["busbw_gbs"] == row["algbw_gbs"] == 67.11  # 64 MiB in 1 ms


def test_a_long_wait_at_set_up_does_not_hide_the_straggler() -> None:
    """Two H200s, a planted straggler: rank 0 came 180 ms late to the first all-reduce (set-up),
    rank 1 last at every call after it by 7 ms. The first call of an operation is set-up: it is
    shown in the totals, and rank 1 is still named."""
    arrivals_0 = [180.0] + [100.0 * k for k in range(1, 9)]
    arrivals_1 = [0.0] + [100.0 * k + 7 for k in range(1, 9)]
    found = _kinds([_rank(0, arrivals_0), _rank(1, arrivals_1)])
    title = found["waits"].title
    assert title.startswith("rank 1 holds the others up: it reaches 8 of 9 calls last"), title
    # the share of all the waiting, set-up included, is what it is: 56 of 236 ms
    shares = "(24% of all the waiting, 100% after each operation"
    assert f"the others wait 56.00 ms in all for it {shares}" in title
